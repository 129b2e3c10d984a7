package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

var (
	// flinkClusterKind is the only kind the webhooks admit.
	flinkClusterKind = v1beta1.GroupVersion.WithKind(v1beta1.Kind)
	// flinkClusterResource is the only resource the webhooks admit.
	flinkClusterResource = v1beta1.GroupVersion.WithResource(v1beta1.Resource)
	// flinkClusterGroupKind names the object in a denial's status.
	flinkClusterGroupKind = schema.GroupKind{Group: v1beta1.GroupVersion.Group, Kind: v1beta1.Kind}
	// flinkClusterAPIVersion is the apiVersion an admitted object must carry.
	flinkClusterAPIVersion = v1beta1.GroupVersion.String()
)

// refusal is why a review cannot be judged: the message for the client, the metrics rule.
type refusal struct {
	rule string
	msg  string
	// noReview marks a review without a request: a malformed HTTP request, answered 400.
	noReview bool
}

// checkReview reports why req is not a review these webhooks can judge, or nil. It looks
// only at the envelope; the objects are decoded by the handlers, each as far as it needs.
// It runs before anything else, so that no policy ever sees a review for something else.
func checkReview(req *admission.Request) *refusal {
	switch {
	case req.UID == "" && req.Operation == "" && req.Kind == (metav1.GroupVersionKind{}) &&
		req.Resource == (metav1.GroupVersionResource{}) && req.Object.Raw == nil:
		return &refusal{rule: ruleMalformedRequest, msg: msgNoRequest, noReview: true}
	case req.UID == "":
		// The API server matches the answer to its request by uid; one without is not its.
		return &refusal{rule: ruleMalformedRequest, msg: msgNoUID}
	case req.Resource == (metav1.GroupVersionResource{}):
		return &refusal{rule: ruleWrongResource, msg: msgNoResource}
	case req.Resource.Group != flinkClusterResource.Group || req.Resource.Version != flinkClusterResource.Version ||
		req.Resource.Resource != flinkClusterResource.Resource:
		return &refusal{rule: ruleWrongResource, msg: fmt.Sprintf(msgWrongResourceFmt, gvrString(req.Resource))}
	case req.SubResource != "":
		return &refusal{rule: ruleWrongResource, msg: fmt.Sprintf(msgSubResourceFmt, req.SubResource)}
	case req.Kind.Group != flinkClusterKind.Group || req.Kind.Version != flinkClusterKind.Version ||
		req.Kind.Kind != flinkClusterKind.Kind:
		return &refusal{rule: ruleWrongKind, msg: fmt.Sprintf(msgWrongKindFmt, gvkString(req.Kind))}
	case req.Operation != admissionv1.Create && req.Operation != admissionv1.Update:
		return &refusal{rule: ruleUnsupportedOp, msg: fmt.Sprintf(msgUnsupportedOpFmt, req.Operation)}
	case len(req.Object.Raw) == 0:
		return &refusal{rule: ruleMissingObject, msg: msgNoObject}
	case req.Operation == admissionv1.Update && len(req.OldObject.Raw) == 0:
		return &refusal{rule: ruleMissingOldObject, msg: msgNoOldObject}
	}
	return nil
}

// gvrString writes a resource for a message, "<empty>" parts included, so that a
// misconfigured webhook rule is easy to spot.
func gvrString(r metav1.GroupVersionResource) string {
	return fmt.Sprintf("%s/%s, resource %s", orEmpty(r.Group), orEmpty(r.Version), orEmpty(r.Resource))
}

// gvkString writes a kind for a message.
func gvkString(k metav1.GroupVersionKind) string {
	return fmt.Sprintf("%s/%s, kind %s", orEmpty(k.Group), orEmpty(k.Version), orEmpty(k.Kind))
}

func orEmpty(s string) string {
	if s == "" {
		return "<empty>"
	}
	return s
}

// decodeCluster decodes raw, an object of a review, into a FlinkCluster: once, strictly.
//
// Strict means case-sensitive field names and no unknown fields. The API server has
// already pruned unknown fields from a FlinkCluster (its schema is generated from the same
// Go types), so a field the types do not know means the object is not what this webhook
// understands: judging it would be guessing, and a patch computed from it would delete the
// field. Duplicate fields are not looked for (that costs a fifth more allocations): the API
// server encodes the objects itself and never repeats one, and in a hand-made review both
// decoders here take the last value, so the policy and the CEL rules still see one object.
func decodeCluster(raw []byte) (*v1beta1.FlinkCluster, error) {
	fc := &v1beta1.FlinkCluster{}
	strictErrs, err := sigsjson.UnmarshalStrict(raw, fc, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, err
	}
	if len(strictErrs) > 0 {
		return nil, errors.Join(strictErrs...)
	}
	if fc.APIVersion != flinkClusterAPIVersion || fc.Kind != v1beta1.Kind {
		return nil, fmt.Errorf("apiVersion %q and kind %q, want %q and %q", fc.APIVersion, fc.Kind, flinkClusterAPIVersion, v1beta1.Kind)
	}
	return fc, nil
}

// decodeUnstructured decodes raw into the map form the CEL rules read, straight from the
// bytes (integers stay int64, as in the API server) rather than by reflection from the
// typed object.
func decodeUnstructured(raw []byte) (map[string]any, error) {
	var m map[string]any
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("the object is null")
	}
	return m, nil
}

// refuse answers a review that cannot be judged: not allowed, 400 Bad Request. It
// records the denial and tells the guard when the review was no review at all. It logs at
// the default level: the API server sends no such review, so one means a misconfigured
// webhook configuration or a caller that is not the API server.
func refuse(ctx context.Context, st *reviewState, webhook string, req *admission.Request, r *refusal) admission.Response {
	st.malformed = r.noReview
	denialsTotal.WithLabelValues(webhook, r.rule).Inc()
	logf.FromContext(ctx).Info("refused an admission review", "webhook", webhook, "rule", r.rule, "reason", r.msg,
		"uid", req.UID, "operation", req.Operation, "resource", req.Resource, "subResource", req.SubResource,
		"namespace", req.Namespace, "name", req.Name, "user", req.UserInfo.Username)
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusBadRequest,
			Reason:  metav1.StatusReasonBadRequest,
			Message: r.msg,
		},
	}}
}
