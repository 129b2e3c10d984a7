package pipeline

import (
	"bytes"
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
// most of a stored object. Before anything is encoded, the members of the object and of
// its spec that defaulting left deeply equal are blanked in shallow copies of both, so
// that they are neither encoded nor read; when nothing changed, there is no patch to
// compute at all.
func DefaultingPatch(sent []byte, decoded, defaulted *v1beta1.FlinkCluster) ([]jsonpatch.Operation, error) {
	// Shallow copies: blanking a member of one replaces it in the copy, never in the
	// caller's objects.
	b, a := *decoded, *defaulted
	if blankEqualFields(reflect.ValueOf(&b).Elem(), reflect.ValueOf(&a).Elem()) {
		// Defaulting changed nothing, so every member of before equals its member of after
		// and the patch is empty: nothing to encode or read.
		return nil, nil
	}
	var s map[string]json.RawMessage
	if err := json.Unmarshal(sent, &s); err != nil {
		return nil, fmt.Errorf("reading %s: %w", orRoot(""), err)
	}
	if isObject(s["spec"]) {
		// The spec is an object in all three documents (the Go type always writes one), so
		// diffMembers compares it member by member and never reads an equal member of it.
		blankEqualFields(reflect.ValueOf(&b.Spec).Elem(), reflect.ValueOf(&a.Spec).Elem())
	}
	before, err := json.Marshal(&b)
	if err != nil {
		return nil, fmt.Errorf("encoding the object as sent: %w", err)
	}
	after, err := json.Marshal(&a)
	if err != nil {
		return nil, fmt.Errorf("encoding the defaulted object: %w", err)
	}
	ops, err := diffMembers(s, before, after, "")
	if err != nil || len(ops) == 0 {
		return nil, err
	}
	slices.SortStableFunc(ops, comparePaths)
	return ops, nil
}

// blankEqualFields sets every exported field of the structs b and a that is deeply equal
// in both to its zero value, in both, and reports whether all of them were equal. Two
// equal fields write the same JSON, before and after blanking, so diffMembers skips them
// either way; blanked, they cost neither encoding nor reading (the metadata, the status,
// and the environment, volumes and sidecars of the spec, which are most of an object).
// It must only blank the members of an object diffMembers compares member by member: a
// member it adds or diffs whole must keep every field.
func blankEqualFields(b, a reflect.Value) bool {
	all := true
	for i := range b.NumField() {
		if !b.Type().Field(i).IsExported() {
			all = false
			continue
		}
		if !equalFields(b.Field(i), a.Field(i)) {
			all = false
			continue
		}
		bf, af := b.Field(i), a.Field(i)
		bf.SetZero()
		af.SetZero()
	}
	return all
}

// equalFields reports whether two fields of the same type are deeply equal. The string
// maps (the Flink properties, the log configuration) are compared with maps.Equal:
// reflect.DeepEqual copies every key and value of a map it walks.
func equalFields(b, a reflect.Value) bool {
	if bm, ok := b.Interface().(map[string]string); ok {
		return maps.Equal(bm, a.Interface().(map[string]string)) && (bm == nil) == (a.IsNil())
	}
	// Pointers to the fields: comparing them compares the fields, without copying them
	// into interfaces.
	return reflect.DeepEqual(b.Addr().Interface(), a.Addr().Interface())
}

// diffMembers returns the operations that turn the object sent (its members s) into
// after, given before, sent as the Go type writes it: members equal in before and after
// are skipped, a member that sent lacks (or has null) is added whole, one that is an
// object in all three is compared the same way one level down, and any other is diffed
// with diff. The last of duplicate names wins, as when the object was decoded.
func diffMembers(s map[string]json.RawMessage, before, after []byte, prefix string) ([]jsonpatch.Operation, error) {
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
			var sms map[string]json.RawMessage
			if err := json.Unmarshal(sm, &sms); err != nil {
				return nil, fmt.Errorf("reading %s: %w", path, err)
			}
			memberOps, err := diffMembers(sms, bm, am, path)
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
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}

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
