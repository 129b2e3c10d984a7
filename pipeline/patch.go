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
func DefaultingPatch(sent []byte, decoded, defaulted *v1beta1.FlinkCluster) ([]jsonpatch.Operation, error) {
	before, err := json.Marshal(decoded)
	if err != nil {
		return nil, fmt.Errorf("encoding the object as sent: %w", err)
	}
	after, err := json.Marshal(defaulted)
	if err != nil {
		return nil, fmt.Errorf("encoding the defaulted object: %w", err)
	}
	if bytes.Equal(before, after) {
		// Defaulting changed nothing: encoding/json writes map keys sorted, so equal
		// objects write equal bytes.
		return nil, nil
	}
	ops, err := diff(sent, before, after)
	if err != nil || len(ops) == 0 {
		return nil, err
	}
	slices.SortStableFunc(ops, comparePaths)
	return ops, nil
}

// diff returns the operations that turn sent into after, less those that turn it into
// before too (re-spellings). Re-spelling never changes the length of a list, so the
// operations it drops never shift the index of one it keeps.
func diff(sent, before, after []byte) ([]jsonpatch.Operation, error) {
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
