package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flink-admission/flink-admission/pipeline"
)

// maxRequestBytes is the admission request limit controller-runtime's admission.Webhook
// uses: two objects of at most 3 MiB each plus the review around them.
const maxRequestBytes = 7 << 20

// contentTypeJSON is the only content type the API server sends admission reviews with.
const contentTypeJSON = "application/json"

// handler serves one webhook: it decodes the review in one pass (objects straight into the
// Go type), calls pipeline.Admit and encodes the answer. It keeps no state between
// requests, so a dry-run request is judged exactly like a real one and leaves nothing
// behind.
//
// It is an http.Handler of its own rather than controller-runtime's admission.Webhook:
// that one decodes the review into raw objects with the API machinery's decoder, which
// alone costs more than the whole in-process budget of a review, and answers a request it
// cannot read with HTTP 200 (a denial inside). Here a request that is no admission review
// at all gets a 4xx status, so that a misconfigured caller sees at once that it was not
// understood; a review that cannot be judged gets 200 and a denial with code 400.
type handler struct {
	// name is the webhook's metrics label.
	name     string
	steps    pipeline.Steps
	pipeline pipeline.Pipeline
	metrics  *webhookMetrics
	log      logr.Logger
}

// outcome is what one request's answer records in the metrics.
type outcome struct {
	operation string
	allowed   bool
}

// ServeHTTP implements http.Handler.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	out := outcome{operation: operationNone}
	defer func() {
		h.metrics.duration.Observe(time.Since(start).Seconds())
		h.metrics.request(out.operation, out.allowed)
	}()

	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.fail(w, http.StatusMethodNotAllowed, fmt.Sprintf(msgMethodFmt, r.Method))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != contentTypeJSON {
		h.fail(w, http.StatusUnsupportedMediaType, fmt.Sprintf(msgContentTypeFmt, ct))
		return
	}
	if r.ContentLength > maxRequestBytes {
		h.fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf(msgTooLargeFmt, maxRequestBytes))
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			h.fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf(msgTooLargeFmt, maxRequestBytes))
			return
		}
		h.fail(w, http.StatusBadRequest, fmt.Sprintf(msgUnreadableFmt, err))
		return
	}
	if len(body) == 0 {
		h.fail(w, http.StatusBadRequest, msgEmptyBody)
		return
	}
	gvk, rv, objErr, err := decodeReview(body, h.steps&pipeline.Validate == 0)
	if err != nil {
		h.fail(w, http.StatusBadRequest, fmt.Sprintf(msgNotAReviewFmt, err))
		return
	}
	req := rv.Request
	if req == nil || req.UID == "" && req.Operation == "" && req.Kind == (metav1.GroupVersionKind{}) &&
		req.Resource == (metav1.GroupVersionResource{}) && !req.Object.present {
		h.fail(w, http.StatusBadRequest, msgNoRequest)
		return
	}
	out.operation = operationLabel(req.Operation)

	resp := h.admit(req, objErr)
	out.allowed = resp.Allowed
	resp.UID = req.UID
	h.write(w, http.StatusOK, gvk, resp)
}

// readBody reads the request body, at most maxRequestBytes, into a buffer of the announced
// length (the API server announces it), so that reading it does not grow the buffer
// several times. The body is the request's alone: the decoded review shares its memory.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, maxRequestBytes)
	if r.ContentLength <= 0 {
		return io.ReadAll(body)
	}
	// One byte more than announced, so that the end is seen without growing the buffer.
	buf := make([]byte, 0, r.ContentLength+1)
	for {
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case err == io.EOF:
			return buf, nil
		case err != nil:
			return buf, err
		case len(buf) == cap(buf):
			// A body longer than announced.
			buf = append(buf, 0)[:len(buf)]
		}
	}
}

// admit answers a decoded review.
func (h *handler) admit(req *reviewRequest, objErr *errObject) *admissionv1.AdmissionResponse {
	if rule, msg := checkReview(req, objErr, h.steps&pipeline.Validate != 0); rule != "" {
		return h.refuse(req, rule, msg)
	}
	var old = req.OldObject.fc
	if req.Operation != admissionv1.Update {
		old = nil
	}
	v := h.pipeline.Admit(old, req.Object.fc, h.steps)
	resp := &admissionv1.AdmissionResponse{Allowed: v.Allowed(), Warnings: v.Warnings}
	if len(v.Warnings) > 0 {
		h.metrics.warnings.Add(float64(len(v.Warnings)))
	}
	if !resp.Allowed {
		for _, r := range v.Rules {
			h.metrics.denial(r)
		}
		name := req.Object.fc.Name
		if name == "" {
			name = req.Name
		}
		// A denial is the user's business (kubectl shows it); log it for debugging only.
		if l := h.log.V(1); l.Enabled() {
			l.Info("denied a FlinkCluster", "webhook", h.name, "rules", v.Rules, "uid", req.UID,
				"operation", req.Operation, "namespace", req.Namespace, "name", name, "dryRun", req.DryRun != nil && *req.DryRun)
		}
		// A 422 Invalid status with one cause per field error: kubectl prints every field
		// path ("The FlinkCluster "x" is invalid: spec.job.mode: ...").
		status := apierrors.NewInvalid(flinkClusterGroupKind, name, v.Errors).ErrStatus
		resp.Result = &status
		return resp
	}
	if len(v.Patch) > 0 {
		patch, err := encodePatch(v.Patch)
		if err != nil {
			// The operations hold values of the Go types, which always encode; fail closed
			// all the same.
			return h.refuse(req, ruleUndecodableObject, fmt.Sprintf(msgObjectUndecodableFmt, err))
		}
		pt := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = patch, &pt
	}
	return resp
}

// refuse answers a review that cannot be judged: not allowed, code 400. It logs at the
// default level: the API server sends no such review, so one means a misconfigured
// webhook configuration or a caller that is not the API server.
func (h *handler) refuse(req *reviewRequest, rule, msg string) *admissionv1.AdmissionResponse {
	h.metrics.denial(rule)
	h.log.Info("refused an admission review", "webhook", h.name, "rule", rule, "reason", msg,
		"uid", req.UID, "operation", req.Operation, "resource", req.Resource, "subResource", req.SubResource,
		"namespace", req.Namespace, "name", req.Name)
	return &admissionv1.AdmissionResponse{
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusBadRequest,
			Reason:  metav1.StatusReasonBadRequest,
			Message: msg,
		},
	}
}

// fail answers a request that is no admission review: the HTTP status code, and an
// AdmissionReview that is not allowed, so that a caller reading only the body is not
// mistaken either.
func (h *handler) fail(w http.ResponseWriter, code int, msg string) {
	h.metrics.denial(ruleMalformedRequest)
	h.write(w, code, admissionv1.SchemeGroupVersion.WithKind(reviewKind), &admissionv1.AdmissionResponse{
		Allowed: false,
		Result:  &metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Message: msg},
	})
}

// write encodes the answer as an AdmissionReview of the request's version.
func (h *handler) write(w http.ResponseWriter, code int, gvk schema.GroupVersionKind, resp *admissionv1.AdmissionResponse) {
	out := admissionv1.AdmissionReview{Response: resp}
	out.APIVersion, out.Kind = gvk.GroupVersion().String(), gvk.Kind
	b, err := json.Marshal(&out)
	if err != nil {
		// An AdmissionResponse always encodes; should it not, the answer must still deny.
		code, b = http.StatusInternalServerError, []byte(`{"response":{"allowed":false}}`)
	}
	w.Header().Set("Content-Type", contentTypeJSON)
	w.WriteHeader(code)
	// The status line is out; an error here means the connection is gone.
	_, _ = w.Write(b)
}

// checkReview returns the rule and message of a review that these webhooks cannot judge,
// or "". It runs before anything else, so that no policy ever sees a review for
// something else. objErr is the decoding error of an object, if any.
func checkReview(req *reviewRequest, objErr *errObject, needOld bool) (string, string) {
	switch {
	case req.UID == "":
		// The API server matches the answer to its request by uid; one without is not its.
		return ruleMalformedRequest, msgNoUID
	case req.Resource == (metav1.GroupVersionResource{}):
		return ruleWrongResource, msgNoResource
	case req.Resource.Group != flinkClusterResource.Group || req.Resource.Version != flinkClusterResource.Version ||
		req.Resource.Resource != flinkClusterResource.Resource:
		return ruleWrongResource, fmt.Sprintf(msgWrongResourceFmt, gvrString(req.Resource))
	case req.SubResource != "":
		return ruleWrongResource, fmt.Sprintf(msgSubResourceFmt, req.SubResource)
	case req.Kind.Group != flinkClusterKind.Group || req.Kind.Version != flinkClusterKind.Version ||
		req.Kind.Kind != flinkClusterKind.Kind:
		return ruleWrongKind, fmt.Sprintf(msgWrongKindFmt, gvkString(req.Kind))
	case req.Operation != admissionv1.Create && req.Operation != admissionv1.Update:
		return ruleUnsupportedOp, fmt.Sprintf(msgUnsupportedOpFmt, req.Operation)
	case objErr != nil && !objErr.old:
		return ruleUndecodableObject, fmt.Sprintf(msgObjectUndecodableFmt, objErr.err)
	case !req.Object.present:
		return ruleMissingObject, msgNoObject
	case req.Operation == admissionv1.Update && objErr != nil:
		return ruleUndecodableObject, fmt.Sprintf(msgOldUndecodableFmt, objErr.err)
	case req.Operation == admissionv1.Update && !req.OldObject.present:
		return ruleMissingOldObject, msgNoOldObject
	case objErr != nil:
		// A CREATE with an old object that does not decode: nothing the API server sends.
		return ruleUndecodableObject, fmt.Sprintf(msgOldUndecodableFmt, objErr.err)
	case needOld && req.Operation == admissionv1.Update && req.OldObject.fc == nil:
		return ruleMissingOldObject, msgNoOldObject
	}
	return "", ""
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
