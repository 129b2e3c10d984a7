package clusterjson

import (
	"strings"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The types below decode themselves with encoding/json (their UnmarshalJSON methods parse
// the value a second time); these functions do what those methods do, from the decoder's
// tokens. The differential fuzz test holds them to the methods' results.

// decTime decodes as metav1.Time.UnmarshalJSON: null clears, a string is RFC 3339 time.
func decTime(d *Decoder, v *metav1.Time) error {
	switch d.Peek() {
	case 'n':
		v.Time = time.Time{}
		return d.literal("null")
	case '"':
		var s string
		if err := d.String(&s); err != nil {
			return err
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return err
		}
		v.Time = t.Local()
		return nil
	case 0:
		return d.eof()
	}
	return d.typeError("string")
}

// decIntOrString decodes as intstr.IntOrString.UnmarshalJSON: a string is a string,
// anything else an int32 (so a null sets the type to Int and keeps the value).
func decIntOrString(d *Decoder, v *intstr.IntOrString) error {
	switch d.Peek() {
	case '"':
		v.Type = intstr.String
		return d.String(&v.StrVal)
	case 0:
		return d.eof()
	}
	v.Type = intstr.Int
	return d.Int32(&v.IntVal)
}

// decQuantity decodes as resource.Quantity.UnmarshalJSON, which it calls, except that a
// decoder that borrows its input parses the text where it is instead of copying it.
func decQuantity(d *Decoder, v *resource.Quantity) error {
	raw, err := d.Value()
	if err != nil {
		return err
	}
	if !d.borrow || len(raw) == 4 && string(raw) == "null" {
		return v.UnmarshalJSON(raw)
	}
	if l := len(raw); l >= 2 && raw[0] == '"' && raw[l-1] == '"' {
		raw = raw[1 : l-1]
	}
	q, err := resource.ParseQuantity(strings.TrimSpace(unsafe.String(unsafe.SliceData(raw), len(raw))))
	if err != nil {
		return err
	}
	*v = q
	return nil
}
