package webhook

import (
	"bytes"
	"reflect"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// An UPDATE review carries the object twice, and the two versions differ in a field or
// two: decoding the old one member by member would cost the validating webhook as much as
// the new one. decodeOld shares with the new object every member of the old spec whose
// JSON is the same bytes as the new one's (same bytes, same decoded value) and decodes
// only the rest. The validating webhook never modifies the objects, so sharing is safe;
// the mutating webhook does not decode the old object at all.

// specFields maps the quoted JSON name of each FlinkClusterSpec member to its field index.
var specFields = func() map[string]int {
	t := reflect.TypeFor[v1beta1.FlinkClusterSpec]()
	m := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := bytes.Cut([]byte(f.Tag.Get("json")), []byte(","))
		if f.Anonymous || len(name) == 0 || string(name) == "-" {
			continue
		}
		m[`"`+string(name)+`"`] = i
	}
	return m
}()

// member is one member of a JSON object: its name as written (quoted) and its value.
type member struct {
	name, value []byte
}

// members returns the members of the JSON object raw, as written. ok is false when raw
// is not an object, or when a name is escaped or repeated: then names cannot be compared
// as bytes, and the caller decodes the whole object.
func members(raw []byte) (ms []member, ok bool) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw), decodeOptions)
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false
	}
	ms = make([]member, 0, 16)
	for dec.PeekKind() != '}' {
		before := dec.InputOffset()
		if _, err := dec.ReadToken(); err != nil {
			return nil, false
		}
		name := bytes.TrimLeft(raw[before:dec.InputOffset()], " \t\r\n,")
		if bytes.IndexByte(name, '\\') >= 0 {
			return nil, false
		}
		val, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		end := dec.InputOffset()
		for _, m := range ms {
			if bytes.Equal(m.name, name) {
				return nil, false
			}
		}
		ms = append(ms, member{name: name, value: raw[end-int64(len(val)) : end]})
	}
	return ms, true
}

func find(ms []member, name string) []byte {
	for _, m := range ms {
		if string(m.name) == name {
			return m.value
		}
	}
	return nil
}

// decodeOld decodes oldRaw, the old object of an UPDATE whose new object fc was decoded
// from newRaw, strictly, sharing the spec members the two have in common.
func decodeOld(oldRaw, newRaw []byte, fc *v1beta1.FlinkCluster) (*v1beta1.FlinkCluster, error) {
	oldTop, ok1 := members(oldRaw)
	newTop, ok2 := members(newRaw)
	oldSpecRaw, newSpecRaw := find(oldTop, `"spec"`), find(newTop, `"spec"`)
	if !ok1 || !ok2 || oldSpecRaw == nil || newSpecRaw == nil {
		return decodeCluster(oldRaw)
	}
	oldSpec, ok1 := members(oldSpecRaw)
	newSpec, ok2 := members(newSpecRaw)
	if !ok1 || !ok2 {
		return decodeCluster(oldRaw)
	}

	// The old object without the shared members: the same document, so that an error
	// names the same path.
	buf := make([]byte, 0, len(oldRaw))
	buf = append(buf, '{')
	for _, m := range oldTop {
		if string(m.name) == `"spec"` {
			continue
		}
		buf = append(append(append(append(buf, m.name...), ':'), m.value...), ',')
	}
	buf = append(buf, `"spec":{`...)
	shared := make([]int, 0, len(oldSpec))
	first := true
	for _, m := range oldSpec {
		if i, known := specFields[string(m.name)]; known {
			if nv := find(newSpec, string(m.name)); nv != nil && bytes.Equal(nv, m.value) {
				shared = append(shared, i)
				continue
			}
		}
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = append(append(append(buf, m.name...), ':'), m.value...)
	}
	buf = append(buf, "}}"...)

	old := &v1beta1.FlinkCluster{}
	if err := json.Unmarshal(buf, old, strictOptions); err != nil {
		return nil, objectError(err, "")
	}
	if err := checkTypeMeta(old); err != nil {
		return nil, err
	}
	from, to := reflect.ValueOf(&fc.Spec).Elem(), reflect.ValueOf(&old.Spec).Elem()
	for _, i := range shared {
		to.Field(i).Set(from.Field(i))
	}
	return old, nil
}
