package shard

import (
	"crypto/sha256"
	"encoding/binary"
)

// Owner is key's owner among members by rendezvous hashing ("" if none): any order of the same
// members names it, and a member joining or leaving moves only the keys it wins or held.
func Owner(key string, members []string) string {
	var best string
	var bestWeight uint64
	for _, m := range members {
		w := weight(m, key)
		if best == "" || w > bestWeight || (w == bestWeight && m < best) {
			best, bestWeight = m, w
		}
	}
	return best
}

// weight uses SHA-256, uniform for any names, which balanced shares rest on, and cheap beside a
// reconcile's requests. The length prefix keeps ("ab", "c") and ("a", "bc") apart.
func weight(member, key string) uint64 {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(member)))
	h.Write(n[:])
	h.Write([]byte(member))
	h.Write([]byte(key))
	return binary.BigEndian.Uint64(h.Sum(nil)[:8])
}
