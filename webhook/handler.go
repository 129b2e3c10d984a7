package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// contentTypeJSON is the only content type the API server sends admission reviews with.
const contentTypeJSON = "application/json"

// reviewKind is the kind of an admission review body.
const reviewKind = "AdmissionReview"

var (
	// flinkClusterKind is the only kind the webhooks admit.
	flinkClusterKind = v1beta1.GroupVersion.WithKind(v1beta1.Kind)
	// flinkClusterResource is the only resource the webhooks admit.
	flinkClusterResource = v1beta1.GroupVersion.WithResource(v1beta1.Resource)
	// flinkClusterGroupKind names the object in a denial's status.
	flinkClusterGroupKind = schema.GroupKind{Group: v1beta1.GroupVersion.Group, Kind: v1beta1.Kind}
)

// server is one webhook's http.Handler: the thin wrapper around controller-runtime's
// admission.Webhook that keeps what controller-runtime's own ServeHTTP lacks. It answers a
// request that is no admission review at all with a 4xx status (controller-runtime answers
// it with 200 and a denial inside), so that a misconfigured caller sees at once that it
// was not understood; it refuses, before any policy runs, every review that is not a
// CREATE or UPDATE of a FlinkCluster (fail closed); and it records the metrics. The review
// is decoded with sigs.k8s.io/json, the API server's own decoder (case-sensitive names);
// the objects are decoded by the admission.Handler, strictly.
//
// It keeps no state between requests, so a dry-run request is judged exactly like a real
// one and leaves nothing behind.
type server struct {
	// hook runs the admission.Handler: panics become 500 answers, and the response is
	// completed (uid, status code, the patch encoded).
	hook *admission.Webhook
	// needOld is set for the validating webhook, which judges an UPDATE against the old
	// object; the mutating one only checks that it is there.
	needOld bool
	// budget is shared by both webhooks' servers: it bounds their bodies together.
	budget *bodyBudget
	r      *refuser
}

// refuser answers and records the reviews a webhook refuses to judge.
type refuser struct {
	// name is the webhook's metrics label.
	name    string
	metrics *webhookMetrics
	log     logr.Logger
}

// outcome is what one request's answer records in the metrics.
type outcome struct {
	operation string
	allowed   bool
}

// newServer wraps h for one webhook.
func newServer(h admission.Handler, needOld bool, budget *bodyBudget, r *refuser) *server {
	return &server{
		hook: &admission.Webhook{
			Handler: h,
			// The default adds the request's fields to the logger of every request;
			// refusals and denials log them themselves.
			LogConstructor: func(base logr.Logger, _ *admission.Request) logr.Logger { return base },
		},
		needOld: needOld,
		budget:  budget,
		r:       r,
	}
}

// ServeHTTP implements http.Handler.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	out := outcome{operation: operationNone}
	defer func() {
		s.r.metrics.duration.Observe(time.Since(start).Seconds())
		s.r.metrics.request(out.operation, out.allowed)
	}()

	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		s.fail(w, http.StatusMethodNotAllowed, fmt.Sprintf(msgMethodFmt, r.Method))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != contentTypeJSON {
		s.fail(w, http.StatusUnsupportedMediaType, fmt.Sprintf(msgContentTypeFmt, ct))
		return
	}
	if r.ContentLength > MaxRequestBytes {
		s.fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf(msgTooLargeFmt, MaxRequestBytes))
		return
	}
	body, held, err := readBody(r.Context(), http.MaxBytesReader(w, r.Body, MaxRequestBytes), r.ContentLength, s.budget)
	defer s.budget.release(held)
	if err != nil {
		if errors.Is(err, errNoBudget) {
			s.r.metrics.budgetRefusals.Inc()
			w.Header().Set("Retry-After", "1")
			s.answer(w, http.StatusServiceUnavailable, fmt.Sprintf(msgNoBudgetFmt, s.budget.size))
			return
		}
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			s.fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf(msgTooLargeFmt, MaxRequestBytes))
			return
		}
		s.fail(w, http.StatusBadRequest, fmt.Sprintf(msgUnreadableFmt, err))
		return
	}
	if len(body) == 0 {
		s.fail(w, http.StatusBadRequest, msgEmptyBody)
		return
	}
	req := admission.Request{}
	var gvk schema.GroupVersionKind
	decoded := false
	if s.needOld {
		gvk, decoded = decodeReviewObjects(body, &req)
	}
	if !decoded {
		if gvk, err = decodeReview(body, &req); err != nil {
			s.fail(w, http.StatusBadRequest, fmt.Sprintf(msgNotAReviewFmt, err))
			return
		}
	}
	if gvk == (schema.GroupVersionKind{}) {
		s.fail(w, http.StatusBadRequest, msgNoRequest)
		return
	}
	out.operation = operationLabel(req.Operation)

	var resp admission.Response
	if rule, msg := checkReview(&req.AdmissionRequest, s.needOld); rule != "" {
		resp = s.r.refuse(&req, rule, msg)
		resp.UID = req.UID
	} else {
		resp = s.hook.Handle(r.Context(), req)
	}
	out.allowed = resp.Allowed
	s.write(w, http.StatusOK, gvk, &resp.AdmissionResponse)
}

// decodeReview decodes an AdmissionReview body into req with sigs.k8s.io/json, as the API
// server reads JSON: case-sensitive names, the last of duplicate names wins, members the
// review does not define are ignored. It returns the review's kind (the answer must be of
// the same version), or an empty kind when the review has no request. Any error means
// that the body is not an AdmissionReview.
func decodeReview(body []byte, req *admission.Request) (schema.GroupVersionKind, error) {
	// v1 and v1beta1 have the same shape; decoding straight into req saves a copy.
	rv := admissionv1.AdmissionReview{Request: &req.AdmissionRequest}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, &rv); err != nil {
		return schema.GroupVersionKind{}, err
	}
	gvk, err := reviewGVK(rv.TypeMeta)
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	if r := rv.Request; r == nil || r.UID == "" && r.Operation == "" && r.Kind == (metav1.GroupVersionKind{}) &&
		r.Resource == (metav1.GroupVersionResource{}) && r.Object.Raw == nil {
		// "request": null, {} or no request member at all.
		return schema.GroupVersionKind{}, nil
	}
	return gvk, nil
}

// typedReview is an AdmissionReview whose objects are FlinkClusters, so that one strict
// pass decodes the review and its objects (decodeReviewObjects).
type typedReview struct {
	metav1.TypeMeta `json:",inline"`
	Request         *typedRequest `json:"request"`
}

// typedRequest is an AdmissionRequest whose objects are FlinkClusters: Object and
// OldObject, at a shallower depth, hide the embedded request's raw members of the same
// names from the decoder.
type typedRequest struct {
	admissionv1.AdmissionRequest `json:",inline"`
	Object                       *v1beta1.FlinkCluster `json:"object"`
	OldObject                    *v1beta1.FlinkCluster `json:"oldObject"`
}

// decodeReviewObjects decodes an AdmissionReview body and its objects in one strict pass
// of sigs.k8s.io/json, for the validating webhook, which judges both objects of an
// UPDATE: decodeReview then decodeObject read every object's bytes three times
// (validating the JSON, skipping the object in the review, decoding it), and this once.
// The decoded objects are set as req.Object.Object and req.OldObject.Object (objectOf).
//
// A name given twice is found by jsontext (RFC 7493's JSON: unique names, valid UTF-8)
// before the pass, which then only refuses unknown names: sigs.k8s.io/json's own check of
// duplicates copies every member name of every map (a typical update's Flink properties,
// labels and resources: a sixth of the pass's allocations), jsontext's does not.
//
// It reports false, and leaves the review to decodeReview and decodeObject, on anything
// but a review they would decode and judge without complaint: a body that does not
// decode or is no RFC 7493 JSON, any name given twice or unknown (in the review too,
// which decodeReview ignores), no request or no object, an object of another kind. Only
// those two then answer a malformed review, so the answers are theirs, word for word.
func decodeReviewObjects(body []byte, req *admission.Request) (schema.GroupVersionKind, bool) {
	if !jsontext.Value(body).IsValid() {
		return schema.GroupVersionKind{}, false
	}
	rv := typedReview{}
	strict, err := sigsjson.UnmarshalStrict(body, &rv, sigsjson.DisallowUnknownFields)
	if err != nil || len(strict) > 0 || rv.Request == nil || rv.Request.Object == nil ||
		checkObjectKind(rv.Request.Object) != nil ||
		(rv.Request.OldObject != nil && checkObjectKind(rv.Request.OldObject) != nil) {
		return schema.GroupVersionKind{}, false
	}
	gvk, err := reviewGVK(rv.TypeMeta)
	if err != nil {
		return schema.GroupVersionKind{}, false
	}
	req.AdmissionRequest = rv.Request.AdmissionRequest
	req.Object = runtime.RawExtension{Object: rv.Request.Object}
	if rv.Request.OldObject != nil {
		req.OldObject = runtime.RawExtension{Object: rv.Request.OldObject}
	}
	return gvk, true
}

// reviewGVK returns the kind of the review, refusing anything but an AdmissionReview of
// admission.k8s.io/v1 or v1beta1. A missing apiVersion or kind is taken from v1, as
// controller-runtime's decoder does.
func reviewGVK(tm metav1.TypeMeta) (schema.GroupVersionKind, error) {
	gv := admissionv1.SchemeGroupVersion
	if tm.APIVersion != "" {
		parsed, err := schema.ParseGroupVersion(tm.APIVersion)
		if err != nil {
			return schema.GroupVersionKind{}, err
		}
		gv = parsed
	}
	kind := tm.Kind
	if kind == "" {
		kind = reviewKind
	}
	if kind != reviewKind || (gv != admissionv1.SchemeGroupVersion && gv != admissionv1beta1.SchemeGroupVersion) {
		return schema.GroupVersionKind{}, fmt.Errorf("the body is a %s %s, not an AdmissionReview of %s or %s",
			gv, kind, admissionv1.SchemeGroupVersion, admissionv1beta1.SchemeGroupVersion)
	}
	return gv.WithKind(kind), nil
}

// checkReview returns the rule and message of a review that these webhooks cannot judge,
// or "". It runs before the admission.Handler, so that no policy ever sees a review for
// something else; the handler refuses the objects that do not decode.
func checkReview(req *admissionv1.AdmissionRequest, needOld bool) (string, string) {
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
	case !hasObject(req.Object):
		return ruleMissingObject, msgNoObject
	case req.Operation == admissionv1.Update && !hasObject(req.OldObject):
		return ruleMissingOldObject, msgNoOldObject
	}
	return "", ""
}

// hasObject reports whether a review's object is there: its JSON, or the object
// decodeReviewObjects decoded.
func hasObject(ext runtime.RawExtension) bool { return len(ext.Raw) > 0 || ext.Object != nil }

// refuse answers a review that cannot be judged: not allowed, code 400. It logs at the
// default level: the API server sends no such review, so one means a misconfigured
// webhook configuration or a caller that is not the API server.
func (r *refuser) refuse(req *admission.Request, rule, msg string) admission.Response {
	r.metrics.denial(rule)
	r.log.Info("refused an admission review", "webhook", r.name, "rule", rule, "reason", msg,
		"uid", req.UID, "operation", req.Operation, "resource", req.Resource, "subResource", req.SubResource,
		"namespace", req.Namespace, "name", req.Name)
	resp := admission.Errored(http.StatusBadRequest, errors.New(msg))
	resp.Result.Status, resp.Result.Reason = metav1.StatusFailure, metav1.StatusReasonBadRequest
	return resp
}

// fail answers a request that is no admission review: the HTTP status code, and an
// AdmissionReview that is not allowed, so that a caller reading only the body is not
// mistaken either.
func (s *server) fail(w http.ResponseWriter, code int, msg string) {
	s.r.metrics.denial(ruleMalformedRequest)
	s.answer(w, code, msg)
}

// answer writes an HTTP error status with an AdmissionReview that is not allowed.
func (s *server) answer(w http.ResponseWriter, code int, msg string) {
	s.write(w, code, admissionv1.SchemeGroupVersion.WithKind(reviewKind), &admissionv1.AdmissionResponse{
		Allowed: false,
		Result:  &metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Message: msg},
	})
}

// write encodes the answer as an AdmissionReview of the request's version.
func (s *server) write(w http.ResponseWriter, code int, gvk schema.GroupVersionKind, resp *admissionv1.AdmissionResponse) {
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
