package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"

	"gomodules.xyz/jsonpatch/v2"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flink-admission/flink-admission/policy"
)

// mutator is the mutating webhook's admission.Handler: it applies policy.Default and
// answers with the JSON patch from the object as sent to the defaulted one. It never
// denies a FlinkCluster for its content (that is the validating webhook's job), only a
// review it cannot judge. It keeps no state between requests.
type mutator struct{}

var _ admission.Handler = &mutator{}

// Handle implements admission.Handler.
func (m *mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	st := stateFrom(ctx)
	st.handled = true
	st.operation = operationLabel(req.Operation)

	// The old object of an UPDATE is not needed for defaulting, but a review without it is
	// not one the API server sends: checkReview refuses it here as in the validating webhook.
	if r := checkReview(&req); r != nil {
		return refuse(st, webhookMutate, r)
	}
	fc, err := decodeCluster(req.Object.Raw)
	if err != nil {
		return refuse(st, webhookMutate, &refusal{rule: ruleUndecodableObject, msg: fmt.Sprintf(msgObjectUndecodableFmt, err)})
	}

	// Most updates carry an object the webhook defaulted when it was created: compare
	// before encoding, so that they cost no patch at all.
	original := fc.DeepCopy()
	policy.Default(fc)
	st.allowed = true
	if reflect.DeepEqual(original, fc) {
		return admission.Allowed("")
	}
	defaulted, err := json.Marshal(fc)
	if err != nil {
		// Cannot happen for a decoded FlinkCluster; deny rather than admit it undefaulted.
		st.allowed = false
		return admission.Errored(http.StatusInternalServerError, fmt.Errorf("encoding the defaulted object: %w", err))
	}
	resp := admission.PatchResponseFromRaw(req.Object.Raw, defaulted)
	if !resp.Allowed {
		st.allowed = false
		return resp
	}
	// policy.Default only sets unset fields, so a "remove" in the diff is never its doing:
	// it is the Go encoding omitting what the request carried empty or null ("args": [],
	// "annotations": {}). Removing those would change the object for no reason.
	resp.Patches = slices.DeleteFunc(resp.Patches, func(op jsonpatch.JsonPatchOperation) bool {
		return op.Operation == "remove"
	})
	if len(resp.Patches) == 0 {
		resp.PatchType = nil
	}
	return resp
}
