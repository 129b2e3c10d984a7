package shard

import (
	"crypto/sha256"
	"encoding/binary"
)

// Owner is the member that owns key among members: rendezvous (highest random weight)
// hashing, the member whose hash of (member, key) is highest, ties broken by the smaller
// name. Every replica that sees the same members names the same owner, whatever the order
// it lists them in; a member that joins takes from each other member only the keys it now
// wins, and a member that leaves gives only its own keys away, each to its runner-up: the
// least movement possible. "" when members is empty.
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

// weight is the member's hash of key. SHA-256 rather than a faster hash: its output is
// uniform for any names, which the balance of the shares rests on, and one hash per member
// per reconcile costs nothing beside a reconcile's requests. The length prefix keeps
// ("ab", "c") and ("a", "bc") apart.
func weight(member, key string) uint64 {
	h := sha256.New()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(member)))
	h.Write(n[:])
	h.Write([]byte(member))
	h.Write([]byte(key))
	return binary.BigEndian.Uint64(h.Sum(nil)[:8])
}
