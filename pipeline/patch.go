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
	sigsjson "sigs.k8s.io/json"

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
// re-spellings too keeps the user's spelling of every field that defaulting leaves alone,
// so that a GitOps tool comparing the stored object with its source sees no drift the
// webhook made.
//
// Only what defaulting changed is encoded and compared as JSON. When defaulting changed
// nothing but the spec members policy.Default writes (defaultedMembers), which the Go
// values tell, only those members are encoded, and the JSON of the object as sent is read
// no deeper than its spec; metadata (with its managed fields, most of a stored object's
// bytes) and status are never encoded. Otherwise the whole documents are compared member
// by member (diffMembers). Encoding and reading the JSON is most of a mutating call's
// cost in the webhook, and the API server waits for it: run on the whole object, this
// patch cost a typical mutating call about 0.5 ms in-process.
func DefaultingPatch(sent []byte, decoded, defaulted *v1beta1.FlinkCluster) ([]jsonpatch.Operation, error) {
	ops, done, err := memberPatch(sent, decoded, defaulted)
	if !done {
		ops, err = documentPatch(sent, decoded, defaulted)
	}
	if err != nil || len(ops) == 0 {
		return nil, err
	}
	slices.SortStableFunc(ops, comparePaths)
	return ops, nil
}

// documentPatch is DefaultingPatch on the whole documents.
func documentPatch(sent []byte, decoded, defaulted *v1beta1.FlinkCluster) ([]jsonpatch.Operation, error) {
	before, err := json.Marshal(decoded)
	if err != nil {
		return nil, fmt.Errorf("encoding the object as sent: %w", err)
	}
	after, err := json.Marshal(defaulted)
	if err != nil {
		return nil, fmt.Errorf("encoding the defaulted object: %w", err)
	}
	return diffMembers(sent, before, after, "")
}

// specMember is a member of FlinkClusterSpec that policy.Default writes.
type specMember struct {
	// name is the member's JSON name.
	name string
	// equal reports whether the member is the same in a and b.
	equal func(a, b *v1beta1.FlinkClusterSpec) bool
	// copy sets the member of dst to that of src (sharing it: dst is only compared).
	copy func(dst, src *v1beta1.FlinkClusterSpec)
	// value returns the member, for encoding.
	value func(*v1beta1.FlinkClusterSpec) any
	// present reports whether the spec's JSON has the member (omitempty leaves it out
	// when empty).
	present func(*v1beta1.FlinkClusterSpec) bool
}

// member builds a specMember from the member's accessor and its emptiness test; equal
// compares two values of the member.
func member[T any](name string, field func(*v1beta1.FlinkClusterSpec) *T, present func(T) bool, equal func(a, b *T) bool) specMember {
	return specMember{
		name:    name,
		equal:   func(a, b *v1beta1.FlinkClusterSpec) bool { return equal(field(a), field(b)) },
		copy:    func(dst, src *v1beta1.FlinkClusterSpec) { *field(dst) = *field(src) },
		value:   func(s *v1beta1.FlinkClusterSpec) any { return field(s) },
		present: func(s *v1beta1.FlinkClusterSpec) bool { return present(*field(s)) },
	}
}

// deepEqual is the comparison of a member with no cheaper one: reflect.DeepEqual, which
// reads the Go values (no JSON) but allocates for every map entry it visits.
func deepEqual[T any](a, b *T) bool { return reflect.DeepEqual(a, b) }

// notNil is the emptiness test of an omitempty pointer member.
func notNil[T any](p *T) bool { return p != nil }

// defaultedMembers are the spec members policy.Default writes (see defaultSpec). A member
// missing here costs speed, never correctness: memberPatch then finds the spec changed
// elsewhere too and leaves the patch to documentPatch (TestDefaultedMembers checks the
// table against the JSON and that the example objects never need documentPatch).
var defaultedMembers = []specMember{
	member("recreateOnUpdate", func(s *v1beta1.FlinkClusterSpec) **bool { return &s.RecreateOnUpdate }, notNil, deepEqual),
	member("batchScheduler", func(s *v1beta1.FlinkClusterSpec) **v1beta1.BatchSchedulerSpec { return &s.BatchScheduler }, notNil, deepEqual),
	member("image", func(s *v1beta1.FlinkClusterSpec) *v1beta1.ImageSpec { return &s.Image },
		func(v1beta1.ImageSpec) bool { return true }, deepEqual),
	member("jobManager", func(s *v1beta1.FlinkClusterSpec) **v1beta1.JobManagerSpec { return &s.JobManager }, notNil, deepEqual),
	member("taskManager", func(s *v1beta1.FlinkClusterSpec) **v1beta1.TaskManagerSpec { return &s.TaskManager }, notNil, deepEqual),
	member("job", func(s *v1beta1.FlinkClusterSpec) **v1beta1.JobSpec { return &s.Job }, notNil, deepEqual),
	member("hadoopConfig", func(s *v1beta1.FlinkClusterSpec) **v1beta1.HadoopConfig { return &s.HadoopConfig }, notNil, deepEqual),
	member("flinkProperties", func(s *v1beta1.FlinkClusterSpec) *map[string]string { return &s.FlinkProperties },
		func(m map[string]string) bool { return len(m) > 0 },
		func(a, b *map[string]string) bool { return maps.Equal(*a, *b) }),
}

// memberPatch is DefaultingPatch when defaulting changed only defaultedMembers: each
// changed member is encoded before and after defaulting and compared with the member as
// sent, as diffMembers would compare it. done is false when anything else changed (or the
// spec as sent is no object), and the caller must compare the whole documents.
//
// sent is read in one pass down to the spec's members, so a name given twice reads as
// encoding/json merges it, not as the last one: the webhook refuses such an object before.
func memberPatch(sent []byte, decoded, defaulted *v1beta1.FlinkCluster) (ops []jsonpatch.Operation, done bool, err error) {
	if decoded.TypeMeta != defaulted.TypeMeta || !reflect.DeepEqual(&decoded.ObjectMeta, &defaulted.ObjectMeta) ||
		!reflect.DeepEqual(&decoded.Status, &defaulted.Status) {
		return nil, false, nil
	}
	// The rest of the spec, without the members defaulting writes, must be the same:
	// otherwise defaulting wrote elsewhere too.
	restBefore, restAfter, none := decoded.Spec, defaulted.Spec, v1beta1.FlinkClusterSpec{}
	var changed []specMember
	for _, m := range defaultedMembers {
		if !m.equal(&decoded.Spec, &defaulted.Spec) {
			changed = append(changed, m)
		}
		m.copy(&restBefore, &none)
		m.copy(&restAfter, &none)
	}
	if !reflect.DeepEqual(&restBefore, &restAfter) {
		return nil, false, nil
	}
	if len(changed) == 0 {
		return nil, true, nil
	}
	// Case-sensitive, as the API server and the webhook read it; a spec that is no
	// object (or JSON that is none) is documentPatch's to answer.
	var doc struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(sent, &doc); err != nil {
		return nil, false, nil
	}
	if doc.Spec == nil {
		// No spec, or null: it is set whole.
		v, err := marshalValue(&defaulted.Spec)
		return []jsonpatch.Operation{{Operation: "add", Path: "/spec", Value: v}}, true, err
	}
	for _, m := range changed {
		sv, inSent := doc.Spec[m.name]
		var sub []jsonpatch.Operation
		switch inBefore := m.present(&decoded.Spec); {
		case !m.present(&defaulted.Spec):
			if inBefore && inSent {
				sub = []jsonpatch.Operation{{Operation: "remove", Path: "/spec/" + m.name}}
			}
		case !inSent || !inBefore || isNull(sv):
			v, err := marshalValue(m.value(&defaulted.Spec))
			if err != nil {
				return nil, true, err
			}
			sub = []jsonpatch.Operation{{Operation: "add", Path: "/spec/" + m.name, Value: v}}
		default:
			b, err := json.Marshal(m.value(&decoded.Spec))
			if err != nil {
				return nil, true, fmt.Errorf("encoding the object as sent: %w", err)
			}
			a, err := json.Marshal(m.value(&defaulted.Spec))
			if err != nil {
				return nil, true, fmt.Errorf("encoding the defaulted object: %w", err)
			}
			if sub, err = diffMembers(sv, b, a, "/spec/"+m.name); err != nil {
				return nil, true, err
			}
		}
		ops = append(ops, sub...)
	}
	return ops, true, nil
}

// marshalValue encodes v and decodes it as CreatePatch decodes its values.
func marshalValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding the defaulted object: %w", err)
	}
	return jsonValue(b)
}

// diffMembers returns the operations that turn sent (at path) into after, given before.
// When all three are objects, a member written the same before and after defaulting is
// left alone, one that defaulting added or that sent lacks (or has null) is set whole, one
// that defaulting removed is removed, and the others are compared the same way one level
// down; anything else goes to diff. encoding/json writes map keys sorted, so equal values
// write equal bytes.
func diffMembers(sent, before, after []byte, path string) ([]jsonpatch.Operation, error) {
	if bytes.Equal(before, after) {
		return nil, nil
	}
	if !isObject(sent) || !isObject(before) || !isObject(after) {
		return diff(sent, before, after, path)
	}
	var s, b, a map[string]json.RawMessage
	for _, m := range []struct {
		doc []byte
		to  *map[string]json.RawMessage
	}{{sent, &s}, {before, &b}, {after, &a}} {
		if err := json.Unmarshal(m.doc, m.to); err != nil {
			return nil, fmt.Errorf("reading %s: %w", orRoot(path), err)
		}
	}
	var ops []jsonpatch.Operation
	for name, av := range a {
		bv, inBefore := b[name]
		if inBefore && bytes.Equal(bv, av) {
			continue
		}
		p := path + "/" + pointerEscaper.Replace(name)
		sv, inSent := s[name]
		if !inSent || !inBefore || isNull(sv) {
			// "add" creates the member, or replaces one that was null or that the Go type
			// left out (empty). The value is decoded as CreatePatch decodes its values.
			v, err := jsonValue(av)
			if err != nil {
				return nil, err
			}
			ops = append(ops, jsonpatch.Operation{Operation: "add", Path: p, Value: v})
			continue
		}
		sub, err := diffMembers(sv, bv, av, p)
		if err != nil {
			return nil, err
		}
		ops = append(ops, sub...)
	}
	for name := range b {
		if _, kept := a[name]; kept {
			continue
		}
		if _, inSent := s[name]; inSent {
			ops = append(ops, jsonpatch.Operation{Operation: "remove", Path: path + "/" + pointerEscaper.Replace(name)})
		}
	}
	return ops, nil
}

// diff returns the operations that turn sent into after, less those that turn it into
// before too (re-spellings), with path before every path. Re-spelling never changes the
// length of a list, so the operations it drops never shift the index of one it keeps.
func diff(sent, before, after []byte, path string) ([]jsonpatch.Operation, error) {
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
		op.Path = path + op.Path
		kept = append(kept, op)
	}
	return kept, nil
}

// jsonValue decodes one JSON value, numbers as json.Number so that none is rounded.
func jsonValue(doc []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// pointerEscaper escapes the two characters a JSON pointer's reference tokens cannot hold.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// isNull reports whether a JSON document is null.
func isNull(doc []byte) bool { return bytes.Equal(bytes.TrimSpace(doc), []byte("null")) }

// isObject reports whether a JSON document is an object.
func isObject(doc []byte) bool {
	doc = bytes.TrimSpace(doc)
	return len(doc) > 0 && doc[0] == '{'
}

// orRoot names a JSON pointer in an error, the empty one as the root.
func orRoot(path string) string {
	if path == "" {
		return "the object"
	}
	return path
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
