package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/api/equality"

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
// When defaulting changed the spec alone, which is what policy.Default does, only the
// spec members it changed are diffed (the probes, ports and resources of the JobManager
// and TaskManager, the job's settings): the metadata, with its managed fields, and the
// spec members defaulting leaves alone (environment, volumes, sidecars) are most of a
// stored object and would otherwise be parsed four times for nothing. Anything else
// changed, and the whole object is diffed.
func DefaultingPatch(sent []byte, decoded, defaulted *v1beta1.FlinkCluster) ([]jsonpatch.Operation, error) {
	if decoded.TypeMeta != defaulted.TypeMeta || !equality.Semantic.DeepEqual(decoded.ObjectMeta, defaulted.ObjectMeta) ||
		!equality.Semantic.DeepEqual(decoded.Status, defaulted.Status) {
		return diff(sent, decoded, defaulted, "")
	}
	var sentObj struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(sent, &sentObj); err != nil {
		return nil, fmt.Errorf("reading the object as sent: %w", err)
	}
	before, err := members(&decoded.Spec)
	if err != nil {
		return nil, err
	}
	after, err := members(&defaulted.Spec)
	if err != nil {
		return nil, err
	}
	if len(sentObj.Spec) == 0 || string(sentObj.Spec) == "null" {
		if equality.Semantic.DeepEqual(decoded.Spec, defaulted.Spec) {
			return nil, nil
		}
		// "add" creates the member, or replaces a null one.
		return []jsonpatch.Operation{{Operation: "add", Path: "/spec", Value: &defaulted.Spec}}, nil
	}
	// The last of duplicate names wins, as when the object was decoded.
	sentSpec := map[string]json.RawMessage{}
	if err := json.Unmarshal(sentObj.Spec, &sentSpec); err != nil {
		return nil, fmt.Errorf("reading the spec as sent: %w", err)
	}
	var ops []jsonpatch.Operation
	for _, name := range slices.Sorted(maps.Keys(after)) {
		b, a := before[name], after[name]
		if bytes.Equal(b, a) {
			continue
		}
		path := "/spec/" + escapePointer(name)
		s, ok := sentSpec[name]
		if !ok || string(s) == "null" {
			ops = append(ops, jsonpatch.Operation{Operation: "add", Path: path, Value: a})
			continue
		}
		memberOps, err := diff(s, b, a, path)
		if err != nil {
			return nil, err
		}
		ops = append(ops, memberOps...)
	}
	for _, name := range slices.Sorted(maps.Keys(before)) {
		if _, kept := after[name]; !kept {
			if _, ok := sentSpec[name]; ok {
				ops = append(ops, jsonpatch.Operation{Operation: "remove", Path: "/spec/" + escapePointer(name)})
			}
		}
	}
	return ops, nil
}

// members returns the JSON of each member of spec as the Go type writes it.
func members(spec *v1beta1.FlinkClusterSpec) (map[string]json.RawMessage, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encoding the spec: %w", err)
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// escapePointer escapes a member name for a JSON pointer (RFC 6901).
func escapePointer(name string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
}

// diff returns the operations that turn sent into after's JSON, less those that turn it
// into before's too (re-spellings), with prefix before every path. before and after are
// Go values, or their JSON as json.RawMessage.
func diff(sent []byte, before, after any, prefix string) ([]jsonpatch.Operation, error) {
	afterJSON, err := json.Marshal(after)
	if err != nil {
		return nil, fmt.Errorf("encoding the defaulted object: %w", err)
	}
	ops, err := jsonpatch.CreatePatch(sent, afterJSON)
	if err != nil || len(ops) == 0 {
		return nil, err
	}
	beforeJSON, err := json.Marshal(before)
	if err != nil {
		return nil, fmt.Errorf("encoding the object as sent: %w", err)
	}
	respelled, err := jsonpatch.CreatePatch(sent, beforeJSON)
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
	if len(kept) == 0 {
		return nil, nil
	}
	slices.SortStableFunc(kept, comparePaths)
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
