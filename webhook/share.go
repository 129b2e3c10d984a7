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

// splitObject reads one JSON object from dec, whose input is raw from offset base on, and
// returns its members and those of its "spec" member, as written, without decoding them.
// ok is false when the object or its spec is not an object, or when a name is escaped or
// repeated: then names cannot be compared as bytes, and the caller decodes the whole
// object (a later one: dec has consumed the object whatever the answer, unless err).
func splitObject(dec *jsontext.Decoder, raw []byte, base int64) (top, spec []member, ok bool, err error) {
	if dec.PeekKind() != '{' {
		_, err := dec.ReadValue()
		return nil, nil, false, err
	}
	specOK := false
	top, ok, err = readMembers(dec, raw, base, func(name []byte) bool {
		if string(name) != `"spec"` || dec.PeekKind() != '{' {
			return false
		}
		// An error here leaves dec broken: the next read of readMembers reports it.
		spec, specOK, _ = readMembers(dec, raw, base, nil)
		return true
	})
	return top, spec, ok && specOK, err
}

// readMembers reads the members of the object dec is at. inline, when not nil, may read a
// member's value itself (and returns true when it did).
func readMembers(dec *jsontext.Decoder, raw []byte, base int64, inline func(name []byte) bool) (ms []member, ok bool, err error) {
	if _, err := dec.ReadToken(); err != nil {
		return nil, false, err
	}
	ok = true
	ms = make([]member, 0, 16)
	for dec.PeekKind() != '}' {
		before := dec.InputOffset()
		if _, err := dec.ReadToken(); err != nil {
			return nil, false, err
		}
		name := bytes.TrimLeft(raw[before-base:dec.InputOffset()-base], " \t\r\n,")
		if bytes.IndexByte(name, '\\') >= 0 {
			ok = false
		}
		for _, m := range ms {
			if bytes.Equal(m.name, name) {
				ok = false
			}
		}
		start := dec.InputOffset()
		if inline != nil && inline(name) {
			ms = append(ms, member{name: name, value: bytes.TrimLeft(raw[start-base:dec.InputOffset()-base], " \t\r\n:")})
			continue
		}
		val, err := dec.ReadValue()
		if err != nil {
			return nil, false, err
		}
		end := dec.InputOffset()
		ms = append(ms, member{name: name, value: raw[end-base-int64(len(val)) : end-base]})
	}
	if _, err := dec.ReadToken(); err != nil {
		return nil, false, err
	}
	return ms, ok, nil
}

func find(ms []member, name string) []byte {
	for _, m := range ms {
		if string(m.name) == name {
			return m.value
		}
	}
	return nil
}

// decodeOld reads the old object of an UPDATE from dec, whose input is body, and decodes
// it strictly, sharing the spec members it has in common with fc, the new object, decoded
// from newRaw.
func decodeOld(dec *jsontext.Decoder, body, newRaw []byte, fc *v1beta1.FlinkCluster) (*v1beta1.FlinkCluster, error) {
	start := dec.InputOffset()
	oldTop, oldSpec, ok, err := splitObject(dec, body, 0)
	if err != nil {
		return nil, err
	}
	oldRaw := bytes.TrimLeft(body[start:dec.InputOffset()], " \t\r\n:")
	if !ok {
		return decodeCluster(oldRaw)
	}
	newDec := jsontext.NewDecoder(bytes.NewBuffer(newRaw), decodeOptions)
	_, newSpec, ok, err := splitObject(newDec, newRaw, 0)
	if err != nil || !ok {
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
		return nil, &errObject{err: objectError(err, "")}
	}
	if err := checkTypeMeta(old); err != nil {
		return nil, &errObject{err: err}
	}
	from, to := reflect.ValueOf(&fc.Spec).Elem(), reflect.ValueOf(&old.Spec).Elem()
	for _, i := range shared {
		to.Field(i).Set(from.Field(i))
	}
	return old, nil
}
