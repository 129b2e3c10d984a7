package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"gomodules.xyz/jsonpatch/v2"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// fieldPatch is DefaultingPatch computed from the Go values alone: it walks decoded and
// defaulted side by side, member by member as the Go types write their JSON (the JSON names
// and omitempty/omitzero rules of structured-merge-diff's reflection cache, the one the API
// server's managed fields use), and writes the operations jsonpatch.CreatePatch would find
// between the two objects' JSON, anchored in sent as anchor anchors them. Nothing is encoded
// or decoded but the values of the operations and, rarely, a member of sent looked up.
//
// The members decoded holds tell where sent has them: a member that decodes to a non-zero
// value (a set pointer or map, a struct with a field set) was in sent, as an object where
// the Go type is a struct or a map. Only a member that decodes to a zero value may be
// missing from sent, null or there all the same; sent is read for it (kindAt) only when an
// operation depends on the answer. decoded must be sent decoded case-sensitively, with no
// name given twice, as the webhook decodes it.
//
// It reports false when it cannot answer: a list changed (CreatePatch diffs lists element by
// element, which this walk does not), or sent did not read; DefaultingPatch then diffs the
// JSON. policy.Default changes no list.
func fieldPatch(sent []byte, decoded, defaulted *v1beta1.FlinkCluster) ([]jsonpatch.Operation, bool) {
	w := walk{sent: sent}
	// Room for the deepest path, so that appending a member's token never allocates.
	tokens := make([]string, 0, 16)
	w.container(tokens, reflect.ValueOf(decoded).Elem(), reflect.ValueOf(defaulted).Elem(), false)
	if w.failed {
		return nil, false
	}
	if len(w.ops) == 0 {
		return nil, true
	}
	// The walk goes by name, and escaping a map key can change its order.
	slices.SortStableFunc(w.ops, comparePaths)
	return w.ops, true
}

// walk holds the state of one fieldPatch.
type walk struct {
	sent   []byte
	ops    []jsonpatch.Operation
	failed bool
}

// container appends the operations between b and a, two structs or two maps that both
// write a JSON object, at tokens (the path's unescaped reference tokens). present says
// that sent is known to have the member as an object; otherwise sent is read when the
// members gave operations, and without such an object there, one "add" of the member whole
// replaces them.
func (w *walk) container(tokens []string, b, a reflect.Value, present bool) {
	start := len(w.ops)
	if b.Kind() == reflect.Map {
		w.mapMembers(tokens, b, a)
	} else {
		w.structMembers(tokens, b, a)
	}
	if w.failed || len(w.ops) == start || present || !b.IsZero() {
		return
	}
	if kind, ok := w.kindAt(tokens); ok && kind != '{' {
		w.ops = append(w.ops[:start], jsonpatch.Operation{Operation: "add", Path: pointer(tokens), Value: a.Interface()})
	}
}

// structMembers compares the JSON members of two structs of one type.
func (w *walk) structMembers(tokens []string, b, a reflect.Value) {
	for _, f := range value.TypeReflectEntryOf(b.Type()).OrderedFields() {
		bf, af := f.GetFrom(b), f.GetFrom(a)
		w.member(append(tokens, f.JsonName), bf, af, f.CanOmit(bf), f.CanOmit(af))
		if w.failed {
			return
		}
	}
}

// mapMembers compares two maps member by member, in the order of their keys.
func (w *walk) mapMembers(tokens []string, b, a reflect.Value) {
	if b.Type().Key().Kind() != reflect.String {
		// Keys that encode otherwise (numbers, text marshalers): not in a FlinkCluster.
		w.failed = true
		return
	}
	keys := make([]string, 0, max(b.Len(), a.Len()))
	for _, m := range []reflect.Value{b, a} {
		for it := m.MapRange(); it.Next(); {
			keys = append(keys, it.Key().String())
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	for _, k := range keys {
		key := reflect.ValueOf(k).Convert(b.Type().Key())
		bv, av := b.MapIndex(key), a.MapIndex(key)
		// A map writes every entry it has, null ones too.
		w.member(append(tokens, k), bv, av, !bv.IsValid(), !av.IsValid())
		if w.failed {
			return
		}
	}
}

// member appends the operations between b and a, one member's values before and after
// (bOmit and aOmit: the member is not written). The member's parent is in sent, or is set
// whole by container.
func (w *walk) member(tokens []string, b, a reflect.Value, bOmit, aOmit bool) {
	switch {
	case bOmit && aOmit:
		return
	case aOmit:
		// b is not empty, so it was decoded from a member sent has.
		w.ops = append(w.ops, jsonpatch.Operation{Operation: "remove", Path: pointer(tokens)})
		return
	case bOmit:
		w.ops = append(w.ops, jsonpatch.Operation{Operation: "add", Path: pointer(tokens), Value: a.Interface()})
		return
	}
	if bc, ac, ok := objects(b, a); ok {
		// A struct's members are compared one by one anyway; a map's are first compared
		// whole, which is quicker than walking them.
		if bc.Kind() == reflect.Struct || !equalValues(bc, ac) {
			w.container(tokens, bc, ac, bc.Kind() == reflect.Map || b.Kind() == reflect.Pointer)
		}
		return
	}
	if equalValues(b, a) {
		return
	}
	if isList(b.Type()) && (b.Kind() == reflect.Array || !b.IsNil() && !a.IsNil()) {
		w.failed = true
		return
	}
	if !differentJSON(b, a) {
		return
	}
	op := "replace"
	if b.IsZero() {
		// Decoded from a member sent has, or from nothing.
		kind, ok := w.kindAt(tokens)
		if !ok {
			return
		}
		if kind == 0 {
			op = "add"
		}
	}
	w.ops = append(w.ops, jsonpatch.Operation{Operation: op, Path: pointer(tokens), Value: a.Interface()})
}

// objects returns b and a as the structs or maps whose members container compares, when
// both write a JSON object whose members the Go types write: structs (through set pointers)
// that do not encode themselves, and set maps.
func objects(b, a reflect.Value) (reflect.Value, reflect.Value, bool) {
	if b.Kind() == reflect.Pointer {
		if b.IsNil() || a.IsNil() {
			return b, a, false
		}
		b, a = b.Elem(), a.Elem()
	}
	switch b.Kind() {
	case reflect.Map:
		return b, a, !b.IsNil() && !a.IsNil()
	case reflect.Struct:
		return b, a, !value.TypeReflectEntryOf(b.Type()).CanConvertToUnstructured()
	}
	return b, a, false
}

// isList reports whether values of t write a JSON list ([]byte writes a string).
func isList(t reflect.Type) bool {
	return t.Kind() == reflect.Array || t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8
}

// equalValues is deepEqual on values that may not be addressable (a map's entries).
func equalValues(x, y reflect.Value) bool {
	if x.CanAddr() && y.CanAddr() {
		return deepEqual(x, y)
	}
	return reflect.DeepEqual(x.Interface(), y.Interface())
}

// differentJSON reports whether b and a, which are not deeply equal, write different JSON,
// as CreatePatch compares them: a quantity "1000m" and another "1" write the same.
func differentJSON(b, a reflect.Value) bool {
	switch b.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	bj, errB := json.Marshal(b.Interface())
	aj, errA := json.Marshal(a.Interface())
	return errB != nil || errA != nil || !bytes.Equal(bj, aj)
}

// kindAt returns the kind of the value sent has at tokens ('{' for an object, 'n' for null,
// and so on), 0 when sent lacks it, and whether sent could be read; the walk fails when it
// could not. Only objects are walked through: the walk never goes into a list.
func (w *walk) kindAt(tokens []string) (jsontext.Kind, bool) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(w.sent), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	kind, err := findMember(dec, tokens)
	if err != nil {
		w.failed = true
		return 0, false
	}
	return kind, true
}

// findMember reads dec down to the member at tokens and returns the kind of its value, or 0
// when a member on the way is missing or no object.
func findMember(dec *jsontext.Decoder, tokens []string) (jsontext.Kind, error) {
	for _, want := range tokens {
		if kind, err := peek(dec); err != nil || kind != '{' {
			return 0, err
		}
		if _, err := dec.ReadToken(); err != nil {
			return 0, err
		}
		for {
			kind, err := peek(dec)
			if err != nil || kind == '}' {
				return 0, err
			}
			name, err := dec.ReadToken()
			if err != nil {
				return 0, err
			}
			if name.String() == want {
				break
			}
			if err := dec.SkipValue(); err != nil {
				return 0, err
			}
		}
	}
	return peek(dec)
}

// peek returns the kind of the next token, or the error that stops dec.
func peek(dec *jsontext.Decoder) (jsontext.Kind, error) {
	if kind := dec.PeekKind(); kind != 0 {
		return kind, nil
	}
	_, err := dec.ReadToken()
	if err == nil {
		err = errUnreadable
	}
	return 0, err
}

// errUnreadable is peek's error when the decoder has no token and no error to say why.
var errUnreadable = errors.New("no JSON value")

// pointer writes reference tokens as a JSON pointer.
func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return ""
	}
	return "/" + strings.Join(escapeAll(tokens), "/")
}
