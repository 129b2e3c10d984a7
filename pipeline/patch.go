package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
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
// re-spellings too keeps the user's spelling of every field that defaulting leaves alone,
// so that a GitOps tool comparing the stored object with its source sees no drift the
// webhook made.
//
// The documents are compared member by member first (diffMembers), and only the members
// that defaulting changed go through CreatePatch: run on the whole of a stored object, whose
// metadata holds its managed fields, CreatePatch cost the API server about 1 ms more per
// mutating call (make bench, "a webhook call in (c)").
func DefaultingPatch(sent []byte, decoded, defaulted *v1beta1.FlinkCluster) ([]jsonpatch.Operation, error) {
	before, err := json.Marshal(decoded)
	if err != nil {
		return nil, fmt.Errorf("encoding the object as sent: %w", err)
	}
	after, err := json.Marshal(defaulted)
	if err != nil {
		return nil, fmt.Errorf("encoding the defaulted object: %w", err)
	}
	ops, err := diffMembers(sent, before, after, "")
	if err != nil || len(ops) == 0 {
		return nil, err
	}
	slices.SortStableFunc(ops, comparePaths)
	return ops, nil
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
		if !inSent || !inBefore || bytes.Equal(bytes.TrimSpace(sv), []byte("null")) {
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
