package clusterjson

import (
	"bytes"
	"errors"
)

// An UPDATE review carries the object twice, and the two versions differ in a member or
// two: decoding the old one in full would cost the validating webhook as much as the new
// one. A Sharer records where each member of the new object's spec is written (Record);
// decoding the old object's spec, each member written as the same bytes is taken from
// the new object (same bytes, same value) and only the others are decoded. The objects
// then share memory: only a caller that never modifies them (the validating webhook) may
// use it.

// ErrShareAgain is returned when a member taken from the source appears a second time:
// merging it would modify the source, so the caller decodes the object again without
// sharing.
var ErrShareAgain = errors.New("a shared member appears twice")

// Sharer records the members of one value of a shared struct type and lends them to the
// decoding of another (see the generated ...Shared and ...Record functions).
type Sharer struct {
	src   []byte
	spans []span
	// seen and taken are, while sharing, the members met and those taken from the source.
	seen, taken []bool
	// used is set once a value has been recorded; poisoned when a second one was.
	used, poisoned bool
	// The room for spans, seen and taken of a struct of up to 32 members, so that a Sharer
	// that is part of a larger value costs no allocation of its own.
	spanRoom       [32]span
	seenRoom, took [32]bool
}

type span struct{ start, end int }

// Record makes d record into sh the members of the next value of a shared type it decodes.
func (d *Decoder) Record(sh *Sharer) { d.record, d.share, d.src = sh, nil, nil }

// Share makes d take from src, the value recorded by sh, the members of the next value of
// its type written the same way.
func (d *Decoder) Share(sh *Sharer, src any) {
	d.record, d.share, d.src = nil, sh, src
	clear(sh.seen)
	clear(sh.taken)
}

// Plain stops recording and sharing.
func (d *Decoder) Plain() { d.record, d.share, d.src = nil, nil, nil }

// begin starts recording a value of n members.
func (sh *Sharer) begin(d *Decoder, n int) {
	if sh.used {
		// A duplicate member holding the value: its value merges both.
		sh.poisoned = true
		return
	}
	sh.used, sh.src = true, d.buf
	if n <= len(sh.spanRoom) {
		sh.spans, sh.seen, sh.taken = sh.spanRoom[:n], sh.seenRoom[:n], sh.took[:n]
	} else {
		sh.spans, sh.seen, sh.taken = make([]span, n), make([]bool, n), make([]bool, n)
	}
	for i := range sh.spans {
		sh.spans[i] = span{-1, -1}
	}
}

// put records that member field was written in buf[start:end].
func (sh *Sharer) put(field, start, end int) {
	if sh.poisoned {
		return
	}
	for start < end && isSpace(sh.src[start]) {
		start++
	}
	if sh.spans[field].start != -1 {
		// A duplicate name: the value merges both.
		sh.spans[field] = span{-2, -2}
		return
	}
	sh.spans[field] = span{start, end}
}

// take says whether the value of member field at d is written as in the source, and
// then consumes it.
func (sh *Sharer) take(d *Decoder, field int) (bool, error) {
	if sh.poisoned || !sh.used {
		return false, nil
	}
	if sh.seen[field] {
		if sh.taken[field] {
			return false, ErrShareAgain
		}
		return false, nil
	}
	sh.seen[field] = true
	sp := sh.spans[field]
	if sp.start < 0 {
		return false, nil
	}
	// The source's bytes are a whole value, checked when it was decoded: the same bytes
	// here are the same value, unless they are a number that goes on.
	want := sh.src[sp.start:sp.end]
	d.Peek()
	rest := d.buf[d.pos:]
	if len(rest) < len(want) || !bytes.Equal(rest[:len(want)], want) {
		return false, nil
	}
	if c := want[0]; (c == '-' || '0' <= c && c <= '9') && len(rest) > len(want) && isNumberByte(rest[len(want)]) {
		return false, nil
	}
	d.pos += len(want)
	sh.taken[field] = true
	return true, nil
}

func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}
