package webhook

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/pipeline"
)

// flinkClusterAPIVersion is the apiVersion an admitted object must carry.
var flinkClusterAPIVersion = v1beta1.GroupVersion.String()

// mutator is the mutating webhook's admission.Handler: it defaults a deep copy of the
// object and answers with the patch from the object as sent to the copy.
type mutator struct {
	pipeline pipeline.Pipeline
	r        *refuser
}

// validator is the validating webhooks' admission.Handler: it judges the object (and, on
// UPDATE, the change from the old one) with the policy, under staged enforcement when steps
// has pipeline.Stage.
type validator struct {
	pipeline pipeline.Pipeline
	steps    pipeline.Steps
	r        *refuser
}

var (
	_ admission.Handler = &mutator{}
	_ admission.Handler = &validator{}
)

// Handle implements admission.Handler. The server has checked the review (checkReview).
func (m *mutator) Handle(_ context.Context, req admission.Request) admission.Response {
	obj, err := decodeObject(req.Object.Raw)
	if err != nil {
		return m.r.refuse(&req, ruleUndecodableObject, fmt.Sprintf(msgObjectUndecodableFmt, err))
	}
	v := m.pipeline.Admit(nil, obj, pipeline.Default)
	patch, err := pipeline.DefaultingPatch(req.Object.Raw, obj, v.Object)
	if err != nil {
		// The object decoded, so its JSON is valid and the Go types always encode; fail
		// closed all the same.
		return m.r.refuse(&req, ruleUndecodableObject, fmt.Sprintf(msgObjectUndecodableFmt, err))
	}
	return admission.Patched("", patch...)
}

// Handle implements admission.Handler. The server has checked the review (checkReview).
func (h *validator) Handle(_ context.Context, req admission.Request) admission.Response {
	obj, err := objectOf(req.Object)
	if err != nil {
		return h.r.refuse(&req, ruleUndecodableObject, fmt.Sprintf(msgObjectUndecodableFmt, err))
	}
	var old *v1beta1.FlinkCluster
	if req.Operation == admissionv1.Update {
		if old, err = objectOf(req.OldObject); err != nil {
			return h.r.refuse(&req, ruleUndecodableObject, fmt.Sprintf(msgOldUndecodableFmt, err))
		}
	}
	v := h.pipeline.Admit(old, obj, h.steps)
	if len(v.Warnings) > 0 {
		h.r.metrics.warnings.Add(float64(len(v.Warnings)))
	}
	if len(v.Warned) > 0 {
		h.r.metrics.warned(v.Warned)
	}
	if v.Allowed() {
		return admission.Allowed("").WithWarnings(v.Warnings...)
	}
	for _, rule := range v.Rules {
		h.r.metrics.denial(rule)
	}
	name := obj.Name
	if name == "" {
		name = req.Name
	}
	// A denial is the user's business (kubectl shows it); log it for debugging only.
	if l := h.r.log.V(1); l.Enabled() {
		l.Info("denied a FlinkCluster", "webhook", h.r.name, "rules", v.Rules, "uid", req.UID,
			"operation", req.Operation, "namespace", req.Namespace, "name", name, "dryRun", req.DryRun != nil && *req.DryRun)
	}
	// A 422 Invalid status with one cause per field error: kubectl prints every field
	// path ("The FlinkCluster "x" is invalid: spec.job.mode: ...").
	status := apierrors.NewInvalid(flinkClusterGroupKind, name, v.Errors).ErrStatus
	resp := admission.Denied("").WithWarnings(v.Warnings...)
	resp.Result = &status
	return resp
}

// decodeObject decodes an object of a review as a FlinkCluster with sigs.k8s.io/json,
// strictly, as the API server decodes a request under fieldValidation=Strict:
// case-sensitive names, numbers out of range refused, and a field the Go types do not
// know, or a name given twice in one object, is an error. The API server has already pruned
// unknown fields from a FlinkCluster (its schema is generated from the same Go types), so
// such a field means the object is not what this webhook understands: judging it would be
// guessing, and a patch computed from it would delete the field.
func decodeObject(raw []byte) (*v1beta1.FlinkCluster, error) {
	fc := &v1beta1.FlinkCluster{}
	// A duplicate name is refused rather than read: decoding merges repeated objects
	// while a JSON patch addresses the last one, so the patch would be computed from an
	// object other than the one judged. The API server never sends one (it encodes the
	// object it decoded), so only a hand-made review meets this.
	strict, err := sigsjson.UnmarshalStrict(raw, fc, sigsjson.DisallowUnknownFields, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, utilerrors.NewAggregate(strict)
	}
	if err := checkObjectKind(fc); err != nil {
		return nil, err
	}
	return fc, nil
}

// checkObjectKind refuses an object whose apiVersion and kind are not a FlinkCluster's.
func checkObjectKind(fc *v1beta1.FlinkCluster) error {
	if fc.APIVersion != flinkClusterAPIVersion || fc.Kind != v1beta1.Kind {
		return fmt.Errorf("apiVersion %q and kind %q, want %q and %q", fc.APIVersion, fc.Kind, flinkClusterAPIVersion, v1beta1.Kind)
	}
	return nil
}

// objectOf returns an object of a review: the one decodeReviewObjects decoded, or its
// JSON decoded by decodeObject.
func objectOf(ext runtime.RawExtension) (*v1beta1.FlinkCluster, error) {
	if fc, ok := ext.Object.(*v1beta1.FlinkCluster); ok {
		return fc, nil
	}
	return decodeObject(ext.Raw)
}
