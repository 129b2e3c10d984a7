package webhook

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flink-admission/flink-admission/policy"
)

// mutator is the mutating webhook's admission.Handler: it applies policy.Default and
// answers with the JSON patch from the object as sent to the defaulted one (see
// DefaultingPatch). It never denies a FlinkCluster for its content (that is the validating
// webhook's job), only a review it cannot judge. It keeps no state between requests.
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
		return refuse(ctx, st, webhookMutate, &req, r)
	}
	fc, err := decodeCluster(req.Object.Raw)
	if err != nil {
		return refuse(ctx, st, webhookMutate, &req, &refusal{rule: ruleUndecodableObject, msg: fmt.Sprintf(msgObjectUndecodableFmt, err)})
	}

	// DefaultingPatch needs the object as sent; a deep copy is far cheaper than encoding
	// both and diffing the JSON documents.
	original := fc.DeepCopy()
	policy.Default(fc)
	ops := DefaultingPatch(original, fc)
	// Set only now: a panic above is answered by admission.Webhook with a denial.
	st.allowed = true
	if len(ops) == 0 {
		// Most updates: the object was defaulted when it was created.
		return admission.Allowed("")
	}
	patchType := admissionv1.PatchTypeJSONPatch
	return admission.Response{
		// admission.Webhook encodes the operations into the response's patch.
		Patches:           ops,
		AdmissionResponse: admissionv1.AdmissionResponse{Allowed: true, PatchType: &patchType},
	}
}
