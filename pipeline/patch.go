package pipeline

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// DefaultingPatch returns the JSON patch (RFC 6902) that turns sent, the object as the
// API server sent it, into defaulted. decoded is sent as decoded, before defaulting.
//
// The patch is the one controller-runtime's defaulters send: jsonpatch.CreatePatch from
// the sent JSON to the defaulted object's JSON (admission.PatchResponseFromRaw), less the
// operations that only re-spell what the sent object already says. Those are the
// operations that the patch from sent to decoded has too: a quantity written "0.5" that
// the Go type writes "500m", a null or empty member the Go type leaves out. controller-
// runtime drops such removals (a defaulter's scheme removals); dropping the other
// re-spellings too keeps the user's spelling of every field that defaulting leaves alone.
//
// The three documents are compared member by member before anything is parsed whole: a
// member that the Go type writes the same way before and after defaulting is left alone
// unread, so that only the few members defaulting sets (the probes, ports and resources
// of the JobManager and TaskManager, the job's settings) go through CreatePatch, and not
// the metadata, its managed fields or the environment, volumes and sidecars, which are
// most of a stored object. Before anything is encoded, the fields that defaulting left
// deeply equal are blanked in shallow copies of both objects, down through every member
// that diffMembers will compare member by member (blankEqualFields), so that they are
// neither encoded nor read; when nothing changed, there is no patch to compute at all.
func DefaultingPatch(sent []byte, decoded, defaulted *v1beta1.FlinkCluster) ([]jsonpatch.Operation, error) {
	// Shallow copies: blanking a member of one replaces it in the copy, never in the
	// caller's objects.
	b, a := *decoded, *defaulted
	read := sentMembers{}
	unchanged, err := blankEqualFields(reflect.ValueOf(&b).Elem(), reflect.ValueOf(&a).Elem(), read, "", sent)
	if err != nil {
		return nil, err
	}
	if unchanged {
		// Defaulting changed nothing, so every member of before equals its member of after
		// and the patch is empty: nothing to encode or read.
		return nil, nil
	}
	before, err := json.Marshal(&b)
	if err != nil {
		return nil, fmt.Errorf("encoding the object as sent: %w", err)
	}
	after, err := json.Marshal(&a)
	if err != nil {
		return nil, fmt.Errorf("encoding the defaulted object: %w", err)
	}
	ops, err := diffMembers(read, sent, before, after, "")
	if err != nil || len(ops) == 0 {
		return nil, err
	}
	slices.SortStableFunc(ops, comparePaths)
	return ops, nil
}

// sentMembers holds the objects of the document sent that have been read, by JSON
// pointer: blanking and diffMembers read the same ones, once.
type sentMembers map[string]map[string]json.RawMessage

// at returns the members of the object doc found at path in the document sent.
func (r sentMembers) at(path string, doc []byte) (map[string]json.RawMessage, error) {
	if m, ok := r[path]; ok {
		return m, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("reading %s: %w", orRoot(path), err)
	}
	r[path] = m
	return m, nil
}

// blankEqualFields sets every exported field of the structs b and a that is deeply equal
// in both to its zero value, in both, and reports whether all of them were equal; doc is
// the object sent at path, whose members diffMembers compares with b's and a's. Two equal
// fields write the same JSON, before and after blanking, so diffMembers skips them either
// way; blanked, they cost neither encoding nor reading (the metadata, the status, and the
// environment, volumes, sidecars and affinities of the spec, which are most of an object).
//
// A field that differs is blanked the same way one level down when diffMembers is certain
// to compare it member by member too: doc has it as an object, and b and a write it as an
// object (a struct, or a pointer to one that is set in both). Any other member is added or
// diffed whole, so it keeps every field.
func blankEqualFields(b, a reflect.Value, read sentMembers, path string, doc []byte) (bool, error) {
	all := true
	for i := range b.NumField() {
		bf, af := b.Field(i), a.Field(i)
		if !bf.CanSet() {
			all = false
			continue
		}
		if equalFields(bf, af) {
			bf.SetZero()
			af.SetZero()
			continue
		}
		all = false
		name, ok := objectMember(b.Type().Field(i))
		if !ok {
			continue
		}
		s, err := read.at(path, doc)
		if err != nil {
			return false, err
		}
		if !isObject(s[name]) {
			continue
		}
		bs, as, ok := structCopies(bf, af)
		if !ok {
			continue
		}
		if _, err := blankEqualFields(bs, as, read, path+"/"+escapePointer(name), s[name]); err != nil {
			return false, err
		}
	}
	return all, nil
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// objectMember returns the JSON name of a field that encoding/json writes as an object
// member holding an object whenever the field is set: a named struct field, or a named
// pointer to a struct, with no marshalling method of its own; a struct that omitzero may
// leave out does not count, since blanking could make it zero.
func objectMember(f reflect.StructField) (string, bool) {
	name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" || name == "-" {
		return "", false
	}
	t := f.Type
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	} else if slices.Contains(strings.Split(opts, ","), "omitzero") {
		return "", false
	}
	if t.Kind() != reflect.Struct {
		return "", false
	}
	for _, m := range []reflect.Type{t, reflect.PointerTo(t)} {
		if m.Implements(jsonMarshaler) || m.Implements(textMarshaler) {
			return "", false
		}
	}
	return name, true
}

// structCopies returns the structs of the fields b and a, to blank in: the fields
// themselves when they are structs (of the callers' shallow copies), fresh shallow copies
// of what they point to, set in their place, when they are pointers. It reports false
// when a pointer is nil.
func structCopies(b, a reflect.Value) (reflect.Value, reflect.Value, bool) {
	if b.Kind() != reflect.Pointer {
		return b, a, true
	}
	if b.IsNil() || a.IsNil() {
		return reflect.Value{}, reflect.Value{}, false
	}
	for _, f := range []reflect.Value{b, a} {
		c := reflect.New(f.Type().Elem())
		c.Elem().Set(f.Elem())
		f.Set(c)
	}
	return b.Elem(), a.Elem(), true
}

// equalFields reports whether two fields of the same type are deeply equal. The string
// maps (the Flink properties, the log configuration, pod labels and annotations) are
// compared with maps.Equal: reflect.DeepEqual copies every key and value of a map it
// walks.
func equalFields(b, a reflect.Value) bool {
	if bm, ok := b.Interface().(map[string]string); ok {
		return maps.Equal(bm, a.Interface().(map[string]string)) && (bm == nil) == (a.IsNil())
	}
	// Pointers to the fields: comparing them compares the fields, without copying them
	// into interfaces.
	return reflect.DeepEqual(b.Addr().Interface(), a.Addr().Interface())
}

// diffMembers returns the operations that turn the object sent (doc, at prefix) into
// after, given before, sent as the Go type writes it: members equal in before and after
// are skipped, a member that sent lacks (or has null) is added whole, one that is an
// object in all three is compared the same way one level down, and any other is diffed
// with diff. The last of duplicate names wins, as when the object was decoded.
func diffMembers(read sentMembers, doc, before, after []byte, prefix string) ([]jsonpatch.Operation, error) {
	s, err := read.at(prefix, doc)
	if err != nil {
		return nil, err
	}
	var b, a map[string]json.RawMessage
	for _, m := range []struct {
		doc []byte
		to  *map[string]json.RawMessage
	}{{before, &b}, {after, &a}} {
		if err := json.Unmarshal(m.doc, m.to); err != nil {
			return nil, fmt.Errorf("reading %s: %w", orRoot(prefix), err)
		}
	}
	var ops []jsonpatch.Operation
	for _, name := range slices.Sorted(maps.Keys(a)) {
		bm, am := b[name], a[name]
		if bytes.Equal(bm, am) {
			continue
		}
		path := prefix + "/" + escapePointer(name)
		sm, ok := s[name]
		switch {
		case !ok || string(sm) == "null" || bm == nil:
			// "add" creates the member, or replaces a null one. The value is decoded as
			// CreatePatch decodes the values of its operations.
			v, err := jsonValue(am)
			if err != nil {
				return nil, err
			}
			ops = append(ops, jsonpatch.Operation{Operation: "add", Path: path, Value: v})
		case isObject(sm) && isObject(bm) && isObject(am):
			memberOps, err := diffMembers(read, sm, bm, am, path)
			if err != nil {
				return nil, err
			}
			ops = append(ops, memberOps...)
		default:
			memberOps, err := diff(sm, bm, am, path)
			if err != nil {
				return nil, err
			}
			ops = append(ops, memberOps...)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(b)) {
		if _, kept := a[name]; !kept {
			if _, ok := s[name]; ok {
				ops = append(ops, jsonpatch.Operation{Operation: "remove", Path: prefix + "/" + escapePointer(name)})
			}
		}
	}
	return ops, nil
}

// jsonValue decodes one JSON value, numbers as json.Number.
func jsonValue(doc []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// isObject reports whether the JSON value doc is an object.
func isObject(doc []byte) bool {
	doc = bytes.TrimLeft(doc, " \t\r\n")
	return len(doc) > 0 && doc[0] == '{'
}

// orRoot names a JSON pointer for a message.
func orRoot(path string) string {
	if path == "" {
		return "the object"
	}
	return path
}

// escapePointer escapes a member name for a JSON pointer (RFC 6901).
func escapePointer(name string) string {
	return pointerEscaper.Replace(name)
}

// pointerEscaper escapes the two characters a JSON pointer's reference tokens cannot hold;
// built once, as a Replacer is meant to be, since every path of a patch goes through it.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// diff returns the operations that turn sent into after, less those that turn it into
// before too (re-spellings), with prefix before every path.
func diff(sent, before, after []byte, prefix string) ([]jsonpatch.Operation, error) {
	ops, err := jsonpatch.CreatePatch(sent, after)
	if err != nil || len(ops) == 0 {
		return nil, err
	}
	respelled, err := jsonpatch.CreatePatch(sent, before)
	if err != nil {
		return nil, err
	}
	same := make(map[string]struct{}, len(respelled))
	for i := range respelled {
		same[respelled[i].Json()] = struct{}{}
	}
	kept := ops[:0]
	for _, op := range ops {
		if _, ok := same[op.Json()]; ok {
			continue
		}
		op.Path = prefix + op.Path
		kept = append(kept, op)
	}
	return kept, nil
}

// comparePaths orders operations by path, so that a patch does not depend on the order in
// which jsonpatch.CreatePatch walks its maps (at random). Array indices compare as
// numbers, the removals of a list's trailing elements from the last one down, as
// CreatePatch writes them: each removal must leave the next one's index in place.
func comparePaths(a, b jsonpatch.Operation) int {
	as, bs := strings.Split(a.Path, "/"), strings.Split(b.Path, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] == bs[i] {
			continue
		}
		na, errA := strconv.Atoi(as[i])
		nb, errB := strconv.Atoi(bs[i])
		if errA != nil || errB != nil {
			return strings.Compare(as[i], bs[i])
		}
		if a.Operation == "remove" && b.Operation == "remove" && i == len(as)-1 && i == len(bs)-1 {
			return nb - na
		}
		return na - nb
	}
	return len(as) - len(bs)
}
