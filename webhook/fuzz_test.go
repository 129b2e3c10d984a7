package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/flink-admission/flink-admission/policy"
)

// FuzzServeHTTP posts random bodies to both webhooks and checks that nothing panics, that
// no answer is a 5xx (bad input is the client's fault), and that a review is allowed only
// when the body is a valid FlinkCluster review: a CREATE or UPDATE of
// flinkclusters.flinkoperator.k8s.io/v1beta1 with a uid and objects that decode, and, for
// the validating webhook, an object the policy accepts.
func FuzzServeHTTP(f *testing.F) {
	for _, body := range benchReviews(f) {
		f.Add(body)
	}
	f.Add(reviewBody(request(admissionv1.Create, jobCluster(), nil)))
	f.Add(reviewBody(request(admissionv1.Create, deploymentCluster(), nil)))
	f.Add(reviewBody(request(admissionv1.Update, set(jobCluster(), "spec.jobManager.deploymentType", "Deployment"), jobCluster())))
	f.Add(reviewBody(request(admissionv1.Update, jobCluster(), nil)))
	f.Add(reviewBody(request(admissionv1.Delete, jobCluster(), jobCluster())))
	f.Add([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u","operation":"CREATE","object":{}}}`))
	f.Add([]byte(`{"request":{"uid":"u","kind":{"group":"flinkoperator.k8s.io","version":"v1beta1","kind":"FlinkCluster"},"resource":{"group":"flinkoperator.k8s.io","version":"v1beta1","resource":"flinkclusters"},"operation":"CREATE","object":{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","spec":null}}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Add([]byte(``))

	f.Fuzz(func(t *testing.T, body []byte) {
		for _, wh := range []struct {
			name string
			h    http.Handler
		}{{webhookValidate, testHandlers.Validate}, {webhookMutate, testHandlers.Mutate}} {
			req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			wh.h.ServeHTTP(rec, req)

			if rec.Code >= 500 {
				t.Fatalf("%s: HTTP %d for %q: %s", wh.name, rec.Code, body, rec.Body)
			}
			review := &admissionv1.AdmissionReview{}
			if err := json.Unmarshal(rec.Body.Bytes(), review); err != nil || review.Response == nil {
				t.Fatalf("%s: the answer is not an AdmissionReview (%v): %s", wh.name, err, rec.Body)
			}
			resp := review.Response
			if resp.Result != nil && resp.Result.Code >= 500 {
				t.Fatalf("%s: result code %d for %q: %s", wh.name, resp.Result.Code, body, resp.Result.Message)
			}
			if !resp.Allowed {
				continue
			}
			if rec.Code != http.StatusOK {
				t.Fatalf("%s: allowed with HTTP %d", wh.name, rec.Code)
			}
			if why := invalidReview(body, wh.name == webhookValidate); why != "" {
				t.Fatalf("%s: allowed, but %s: %q", wh.name, why, body)
			}
		}
	})
}

// invalidReview says why body is not a review the webhooks may allow, or "". It is the
// fuzz test's oracle, written from the rules rather than from the handlers' code.
func invalidReview(body []byte, validate bool) string {
	review := &admissionv1.AdmissionReview{}
	// The decoder controller-runtime uses: case-sensitive field names.
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, review); err != nil {
		return "the body does not decode: " + err.Error()
	}
	r := review.Request
	switch {
	case r == nil:
		return "no request"
	case r.UID == "":
		return "no uid"
	case r.Kind.Group != "flinkoperator.k8s.io" || r.Kind.Version != "v1beta1" || r.Kind.Kind != "FlinkCluster":
		return "kind " + r.Kind.String()
	case r.Resource.Group != "flinkoperator.k8s.io" || r.Resource.Version != "v1beta1" || r.Resource.Resource != "flinkclusters" || r.SubResource != "":
		return "resource " + r.Resource.String() + " " + r.SubResource
	case r.Operation != admissionv1.Create && r.Operation != admissionv1.Update:
		return "operation " + string(r.Operation)
	}
	fc, err := decodeCluster(r.Object.Raw)
	if err != nil {
		return "the object does not decode: " + err.Error()
	}
	if r.Operation == admissionv1.Update && len(r.OldObject.Raw) == 0 {
		return "an UPDATE without the old object"
	}
	if !validate {
		return ""
	}
	if r.Operation == admissionv1.Create {
		if errs, _ := policy.ValidateCreate(fc); len(errs) > 0 {
			return "the policy denies it: " + errs.ToAggregate().Error()
		}
		return ""
	}
	old, err := decodeCluster(r.OldObject.Raw)
	if err != nil {
		return "the old object does not decode: " + err.Error()
	}
	if errs, _ := policy.ValidateUpdate(old, fc); len(errs) > 0 {
		return "the policy denies it: " + errs.ToAggregate().Error()
	}
	return ""
}
