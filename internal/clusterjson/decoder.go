// Package clusterjson decodes a FlinkCluster from JSON in one pass, without reflection,
// with the semantics of the decoder the API server uses (sigs.k8s.io/json, strict):
// field names are case-sensitive, the last of duplicate names wins and merges into the
// earlier value as encoding/json does (a later null keeps a value, clears a pointer, map or
// list), unknown fields are errors, integers out of range or with a fraction are errors,
// and invalid UTF-8 is replaced. The per-type functions are generated from the Go types
// (zz_generated.decode.go, by hack/decodegen); this file is the scanner they share.
//
// The admission webhook decodes the two objects of a review with it: the reflection-based
// decoders spend most of a review's budget looking up fields and calling through
// interfaces, and re-scan each value of a type with its own UnmarshalJSON.
package clusterjson

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// maxDepth is the nesting encoding/json refuses beyond.
const maxDepth = 10000

// Decoder reads JSON values from a byte slice.
type Decoder struct {
	buf []byte
	pos int
	// borrow lets strings alias buf, which the caller then must never modify.
	borrow bool
	depth  int
	// scratch holds the last unescaped string.
	scratch []byte
	// record, or share and src, are set while a value of a shared type is recorded or
	// decoded sharing the members of src (see Sharer).
	record, share *Sharer
	src           any
}

// NewDecoder returns a decoder of data. With borrow, the decoded strings share data's
// memory instead of being copied: the caller hands data over and must never modify it
// (the webhook reads each body into a buffer of its own and drops it after the answer).
func NewDecoder(data []byte, borrow bool) *Decoder {
	return &Decoder{buf: data, borrow: borrow}
}

// SyntaxError is input that is not JSON.
type SyntaxError struct {
	Offset int
	msg    string
}

// Error implements error.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.Offset, e.msg)
}

func (d *Decoder) syntax(format string, args ...any) error {
	return &SyntaxError{Offset: d.pos, msg: fmt.Sprintf(format, args...)}
}

func (d *Decoder) eof() error {
	return &SyntaxError{Offset: d.pos, msg: "unexpected end of input"}
}

// PathError is an error of the value at a path of the document.
type PathError struct {
	// rev is the path, innermost first.
	rev []string
	// Err is the error.
	Err error
}

// Path returns the path of the value, its members and indexes joined by dots.
func (e *PathError) Path() string {
	var b strings.Builder
	for i := len(e.rev) - 1; i >= 0; i-- {
		b.WriteString(e.rev[i])
		if i > 0 {
			b.WriteByte('.')
		}
	}
	return b.String()
}

// Error implements error.
func (e *PathError) Error() string {
	if errors.Is(e.Err, ErrUnknownField) {
		return fmt.Sprintf("unknown field %q", e.Path())
	}
	return e.Path() + ": " + e.Err.Error()
}

// Unwrap returns the error at the path.
func (e *PathError) Unwrap() error { return e.Err }

// ErrUnknownField is the error of a member the type does not have.
var ErrUnknownField = errors.New("unknown field")

// InField returns err as an error of the member name of the value being decoded.
func InField(err error, name string) error {
	var pe *PathError
	switch {
	case errors.As(err, new(*SyntaxError)):
		return err
	case errors.As(err, &pe):
		pe.rev = append(pe.rev, name)
		return pe
	}
	return &PathError{rev: []string{name}, Err: err}
}

// InIndex returns err as an error of the element i of the list being decoded.
func InIndex(err error, i int) error { return InField(err, strconv.Itoa(i)) }

// Unknown returns the error of an unknown member.
func Unknown(name []byte) error {
	return &PathError{rev: []string{string(name)}, Err: ErrUnknownField}
}

// typeError is a JSON value of a kind the Go type cannot hold.
func (d *Decoder) typeError(goType string) error {
	kind := "number"
	switch d.Peek() {
	case '{':
		kind = "object"
	case '[':
		kind = "array"
	case '"':
		kind = "string"
	case 't', 'f':
		kind = "bool"
	case 'n':
		kind = "null"
	}
	return fmt.Errorf("cannot unmarshal %s into a Go value of type %s", kind, goType)
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// Peek returns the first byte of the next value, or 0 at the end of the input.
func (d *Decoder) Peek() byte {
	for d.pos < len(d.buf) {
		c := d.buf[d.pos]
		if !isSpace(c) {
			return c
		}
		d.pos++
	}
	return 0
}

// Offset is the position of the decoder in the input.
func (d *Decoder) Offset() int { return d.pos }

// Seek moves the decoder to offset, a position it has been at.
func (d *Decoder) Seek(offset int) { d.pos = offset }

// End checks that nothing but white space follows.
func (d *Decoder) End() error {
	if d.Peek() != 0 {
		return d.syntax("data after the value")
	}
	return nil
}

// literal consumes the literal lit (true, false or null) at d.pos.
func (d *Decoder) literal(lit string) error {
	if len(d.buf)-d.pos < len(lit) {
		return d.eof()
	}
	if string(d.buf[d.pos:d.pos+len(lit)]) != lit {
		return d.syntax("invalid literal")
	}
	d.pos += len(lit)
	return nil
}

// Null consumes a null if it is next, and says whether it was.
func (d *Decoder) Null() (bool, error) {
	if d.Peek() != 'n' {
		return false, nil
	}
	return true, d.literal("null")
}

// Object starts reading an object: it returns true when one starts (then read its
// members with Member), false for a null (consumed), and an error for anything else.
func (d *Decoder) Object(goType string) (bool, error) { return d.open('{', goType) }

// Array starts reading an array, as Object an object.
func (d *Decoder) Array(goType string) (bool, error) { return d.open('[', goType) }

func (d *Decoder) open(bracket byte, goType string) (bool, error) {
	switch d.Peek() {
	case bracket:
		d.pos++
		d.depth++
		if d.depth > maxDepth {
			return false, d.syntax("exceeded max depth")
		}
		return true, nil
	case 'n':
		return false, d.literal("null")
	case 0:
		return false, d.eof()
	}
	return false, d.typeError(goType)
}

// unexpected is the error of the byte c where the syntax wants what.
func (d *Decoder) unexpected(c byte, what string) error {
	if c == 0 {
		return d.eof()
	}
	return d.syntax("want %s", what)
}

// Member reads the name of the next member of the object being read, and the colon after
// it; i is the number of members read before. At the end of the object, it consumes the
// closing brace and returns false. The name is valid until the next read.
func (d *Decoder) Member(i int) (name []byte, more bool, err error) {
	c := d.Peek()
	if c == '}' {
		d.pos++
		d.depth--
		return nil, false, nil
	}
	if i > 0 {
		if c != ',' {
			return nil, false, d.unexpected(c, ", or } after an object member")
		}
		d.pos++
		c = d.Peek()
	}
	if c != '"' {
		return nil, false, d.unexpected(c, "a member name")
	}
	name, _, err = d.str()
	if err != nil {
		return nil, false, err
	}
	if c := d.Peek(); c != ':' {
		return nil, false, d.unexpected(c, ": after a member name")
	}
	d.pos++
	return name, true, nil
}

// Element moves to the next element of the array being read; i is the number of elements
// read before. At the end of the array, it consumes the closing bracket and returns false.
func (d *Decoder) Element(i int) (bool, error) {
	c := d.Peek()
	if c == ']' {
		d.pos++
		d.depth--
		return false, nil
	}
	if i > 0 {
		if c != ',' {
			return false, d.unexpected(c, ", or ] after an array element")
		}
		d.pos++
		if c := d.Peek(); c == ']' || c == 0 {
			return false, d.unexpected(c, "a value after ,")
		}
	}
	return true, nil
}

// str reads a string at d.pos and returns its content, unescaped, with invalid UTF-8 and
// lone surrogates replaced by U+FFFD as encoding/json does. aliased says whether the
// content is a part of the input (else it is in scratch, valid until the next read).
func (d *Decoder) str() (s []byte, aliased bool, err error) {
	buf := d.buf
	start := d.pos + 1
	i := special(buf, start)
	if i < len(buf) && buf[i] == '"' {
		d.pos = i + 1
		return buf[start:i], true, nil
	}
	return d.strSlow(start, i)
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special returns the index of the first byte of b from i on that is a quote, a
// backslash, a control character or not ASCII, or len(b); eight bytes at a time.
func special(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ (lsb * '"')
		e := x ^ (lsb * '\\')
		// A zero byte of q or e, a byte of x below 0x20, or one with its high bit set
		// (a borrow may flag a byte after a match, never one before the first).
		m := ((q - lsb) &^ q) | ((e - lsb) &^ e) | ((x - lsb*0x20) &^ x) | x
		if m &= msb; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			return i
		}
	}
	return len(b)
}

// maxPresize bounds the room made for the elements or members a container holds, counted
// before they are decoded: the decoding may stop at the first of them.
const maxPresize = 128

// count returns the number of members or elements of the object or array just opened,
// not more than maxPresize, without reading them; 0 when the input ends first (the
// decoding then says why). It only looks for commas outside strings and nested values:
// the decoding checks the syntax.
func (d *Decoder) count() int {
	buf := d.buf
	depth, n, nonEmpty := 0, 0, false
	for i := d.pos; i < len(buf); i++ {
		switch c := buf[i]; c {
		case ' ', '\t', '\n', '\r':
		case '"':
			nonEmpty = true
			for i = special(buf, i+1); i < len(buf) && buf[i] != '"'; i = special(buf, i+1) {
				if buf[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			nonEmpty = true
			depth++
		case '}', ']':
			if depth == 0 {
				if nonEmpty {
					return min(n+1, maxPresize)
				}
				return 0
			}
			depth--
		case ',':
			if depth == 0 {
				if n++; n+1 >= maxPresize {
					return maxPresize
				}
			}
		default:
			nonEmpty = true
		}
	}
	return 0
}

func (d *Decoder) strSlow(start, i int) ([]byte, bool, error) {
	buf := d.buf
	out := append(d.scratch[:0], buf[start:i]...)
	changed := false
	for i < len(buf) {
		c := buf[i]
		switch {
		case c == '"':
			d.pos = i + 1
			d.scratch = out
			if !changed {
				return buf[start:i], true, nil
			}
			return out, false, nil
		case c < 0x20:
			d.pos = i
			return nil, false, d.syntax("control character in a string")
		case c == '\\':
			changed = true
			if i+1 >= len(buf) {
				d.pos = len(buf)
				return nil, false, d.eof()
			}
			switch e := buf[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
				i += 2
			case 'b':
				out, i = append(out, '\b'), i+2
			case 'f':
				out, i = append(out, '\f'), i+2
			case 'n':
				out, i = append(out, '\n'), i+2
			case 'r':
				out, i = append(out, '\r'), i+2
			case 't':
				out, i = append(out, '\t'), i+2
			case 'u':
				r, ok := hex4(buf[i+2:])
				if !ok {
					d.pos = i
					if len(buf)-i-2 < 4 && validHexPrefix(buf[i+2:]) {
						d.pos = len(buf)
						return nil, false, d.eof()
					}
					return nil, false, d.syntax("invalid \\u escape")
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if i+1 < len(buf) && buf[i] == '\\' && buf[i+1] == 'u' {
						if r2, ok := hex4(buf[i+2:]); ok {
							if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
								out = utf8.AppendRune(out, dec)
								i += 6
								continue
							}
						}
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
			default:
				d.pos = i
				return nil, false, d.syntax("invalid escape")
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(buf[i:])
			if r == utf8.RuneError && size == 1 {
				changed = true
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, buf[i:i+size]...)
			}
			i += size
		}
	}
	d.pos = len(buf)
	return nil, false, d.eof()
}

func validHexPrefix(b []byte) bool {
	for _, c := range b {
		if unhex(c) < 0 {
			return false
		}
	}
	return true
}

func unhex(c byte) rune {
	switch {
	case '0' <= c && c <= '9':
		return rune(c - '0')
	case 'a' <= c && c <= 'f':
		return rune(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		h := unhex(c)
		if h < 0 {
			return 0, false
		}
		r = r<<4 | h
	}
	return r, true
}

// toString returns s, read by str, as a string.
func (d *Decoder) toString(s []byte, aliased bool) string {
	if d.borrow && aliased && len(s) > 0 {
		return unsafe.String(&s[0], len(s))
	}
	return string(s)
}

// Key returns a member name returned by Member as a string (for a map key).
func (d *Decoder) Key(name []byte) string {
	if d.borrow && len(name) > 0 && d.inBuf(name) {
		return unsafe.String(&name[0], len(name))
	}
	return string(name)
}

// inBuf says whether b is a part of the input.
func (d *Decoder) inBuf(b []byte) bool {
	if len(d.buf) == 0 || len(b) == 0 {
		return false
	}
	start := uintptr(unsafe.Pointer(&d.buf[0]))
	p := uintptr(unsafe.Pointer(&b[0]))
	return p >= start && p < start+uintptr(len(d.buf))
}

// String decodes a string into v; a null keeps v.
func (d *Decoder) String(v *string) error {
	switch d.Peek() {
	case '"':
		s, aliased, err := d.str()
		if err != nil {
			return err
		}
		*v = d.toString(s, aliased)
		return nil
	case 'n':
		return d.literal("null")
	case 0:
		return d.eof()
	}
	return d.typeError("string")
}

// Bool decodes a boolean into v; a null keeps v.
func (d *Decoder) Bool(v *bool) error {
	switch d.Peek() {
	case 't':
		*v = true
		return d.literal("true")
	case 'f':
		*v = false
		return d.literal("false")
	case 'n':
		return d.literal("null")
	case 0:
		return d.eof()
	}
	return d.typeError("bool")
}

// number reads a number at d.pos, checking its syntax.
func (d *Decoder) number() ([]byte, error) {
	buf, start, i := d.buf, d.pos, d.pos
	if i < len(buf) && buf[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(buf) && '0' <= buf[i] && buf[i] <= '9' {
			i++
		}
		return i > j
	}
	switch {
	case i < len(buf) && buf[i] == '0':
		i++
	case !digits():
		d.pos = i
		if i >= len(buf) {
			return nil, d.eof()
		}
		return nil, d.syntax("invalid number")
	}
	if i < len(buf) && buf[i] == '.' {
		i++
		if !digits() {
			d.pos = i
			if i >= len(buf) {
				return nil, d.eof()
			}
			return nil, d.syntax("invalid number")
		}
	}
	if i < len(buf) && (buf[i] == 'e' || buf[i] == 'E') {
		i++
		if i < len(buf) && (buf[i] == '+' || buf[i] == '-') {
			i++
		}
		if !digits() {
			d.pos = i
			if i >= len(buf) {
				return nil, d.eof()
			}
			return nil, d.syntax("invalid number")
		}
	}
	d.pos = i
	return buf[start:i], nil
}

// integer reads an integer in [min, max]; ok is false for a null (consumed).
func (d *Decoder) integer(goType string, min int64, max uint64) (n int64, ok bool, err error) {
	switch c := d.Peek(); {
	case c == 'n':
		return 0, false, d.literal("null")
	case c == 0:
		return 0, false, d.eof()
	case c != '-' && (c < '0' || c > '9'):
		return 0, false, d.typeError(goType)
	}
	num, err := d.number()
	if err != nil {
		return 0, false, err
	}
	neg := num[0] == '-'
	var u uint64
	digits := num
	if neg {
		digits = num[1:]
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false, fmt.Errorf("cannot unmarshal number %s into a Go value of type %s", num, goType)
		}
		if u > (math.MaxUint64-9)/10 {
			return 0, false, fmt.Errorf("number %s overflows %s", num, goType)
		}
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > uint64(-min) {
			return 0, false, fmt.Errorf("number %s overflows %s", num, goType)
		}
		return -int64(u), true, nil
	}
	if u > max {
		return 0, false, fmt.Errorf("number %s overflows %s", num, goType)
	}
	return int64(u), true, nil
}

// Int32 decodes an integer into v; a null keeps v.
func (d *Decoder) Int32(v *int32) error {
	n, ok, err := d.integer("int32", math.MinInt32, math.MaxInt32)
	if ok {
		*v = int32(n)
	}
	return err
}

// Int64 decodes an integer into v; a null keeps v.
func (d *Decoder) Int64(v *int64) error {
	n, ok, err := d.integer("int64", math.MinInt64, math.MaxInt64)
	if ok {
		*v = n
	}
	return err
}

// Value reads any value and returns it as written (for a type with its own UnmarshalJSON).
func (d *Decoder) Value() ([]byte, error) {
	d.Peek()
	start := d.pos
	if err := d.SkipValue(); err != nil {
		return nil, err
	}
	return d.buf[start:d.pos], nil
}

// SkipValue reads any value, checking its syntax.
func (d *Decoder) SkipValue() error {
	switch d.Peek() {
	case '{':
		if _, err := d.Object(""); err != nil {
			return err
		}
		for i := 0; ; i++ {
			_, more, err := d.Member(i)
			if err != nil || !more {
				return err
			}
			if err := d.SkipValue(); err != nil {
				return err
			}
		}
	case '[':
		if _, err := d.Array(""); err != nil {
			return err
		}
		for i := 0; ; i++ {
			more, err := d.Element(i)
			if err != nil || !more {
				return err
			}
			if err := d.SkipValue(); err != nil {
				return err
			}
		}
	case '"':
		return d.skipString()
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	case 0:
		return d.eof()
	}
	if c := d.buf[d.pos]; c == '-' || ('0' <= c && c <= '9') {
		_, err := d.number()
		return err
	}
	return d.syntax("invalid character %q", d.buf[d.pos])
}

// skipString reads a string, checking its syntax only.
func (d *Decoder) skipString() error {
	buf := d.buf
	for i := special(buf, d.pos+1); i < len(buf); i = special(buf, i+1) {
		switch c := buf[i]; {
		case c == '"':
			d.pos = i + 1
			return nil
		case c < 0x20:
			d.pos = i
			return d.syntax("control character in a string")
		case c == '\\':
			if i+1 >= len(buf) {
				d.pos = len(buf)
				return d.eof()
			}
			switch buf[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if _, ok := hex4(buf[i+2:]); !ok {
					d.pos = i
					if len(buf)-i-2 < 4 && validHexPrefix(buf[i+2:]) {
						d.pos = len(buf)
						return d.eof()
					}
					return d.syntax("invalid \\u escape")
				}
				i += 5
			default:
				d.pos = i
				return d.syntax("invalid escape")
			}
		}
	}
	d.pos = len(buf)
	return d.eof()
}
