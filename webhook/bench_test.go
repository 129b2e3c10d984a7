package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flink-admission/flink-admission/internal/test/benchdata"
)

// benchReviews returns the benchmark review bodies (package benchdata) by name.
func benchReviews(tb testing.TB) map[string][]byte {
	tb.Helper()
	reviews, err := benchdata.Reviews()
	if err != nil || len(reviews) == 0 {
		tb.Fatalf("no benchmark reviews: %v", err)
	}
	out := map[string][]byte{}
	for _, r := range reviews {
		out[r.Name] = r.Body
	}
	running, err := withRunningJob(out["typical-validate-update"])
	if err != nil {
		tb.Fatalf("typical-validate-update with a running job: %v", err)
	}
	out["typical-validate-update-job-running"] = running
	return out
}

// withRunningJob is an update review whose stored status (old and new object alike, as the
// API server keeps the status on a spec update) records the job running: the update then
// carries the upgrade plan, which an update of a cluster without a job status skips.
func withRunningJob(body []byte) ([]byte, error) {
	var review map[string]any
	if err := json.Unmarshal(body, &review); err != nil {
		return nil, err
	}
	req, _ := review["request"].(map[string]any)
	for _, key := range []string{"object", "oldObject"} {
		obj, _ := req[key].(map[string]any)
		status, _ := obj["status"].(map[string]any)
		components, _ := status["components"].(map[string]any)
		if components == nil {
			return nil, errors.New(key + " has no status.components")
		}
		components["job"] = map[string]any{"id": "4f3c0d5e9a8b7c6d5e4f3a2b1c0d9e8f", "state": "Running", "flinkVersion": obj["spec"].(map[string]any)["flinkVersion"]}
	}
	return json.Marshal(review)
}

// BenchmarkServeHTTP measures one admission review through the whole in-process
// http.Handler (reading, decoding, pipeline, encoding), on the benchmark bodies of package
// benchdata: BenchmarkServeHTTP/<size>-<webhook>-<operation>.
func BenchmarkServeHTTP(b *testing.B) {
	h, err := NewHandlers(Options{})
	if err != nil {
		b.Fatal(err)
	}
	reviews := benchReviews(b)
	for _, name := range slices.Sorted(maps.Keys(reviews)) {
		body := reviews[name]
		handler, path := h.Validate, ValidatePath
		if strings.Contains(name, "mutate") {
			handler, path = h.Mutate, MutatePath
		}
		b.Run(name, func(b *testing.B) {
			// Check once that the review is admitted, so that the figures are those of the
			// real path and not of an early refusal.
			rec := serve(handler, path, body)
			if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"allowed":true`)) {
				b.Fatalf("review not allowed: %d %s", rec.Code, rec.Body)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				rec := serve(handler, path, body)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
			}
		})
	}
}

// serve posts body to h as the API server does and returns the recorded answer.
func serve(h http.Handler, path string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// BenchmarkDecodeReview measures decoding alone, as the webhook decodes
// (BenchmarkDecodeReview/<review>): a validating review and its objects in one strict pass
// (decodeReviewObjects), a mutating one with sigs.k8s.io/json and then its object strictly
// into the Go type.
func BenchmarkDecodeReview(b *testing.B) {
	reviews := benchReviews(b)
	for _, name := range slices.Sorted(maps.Keys(reviews)) {
		body := reviews[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			if !strings.Contains(name, "mutate") {
				for b.Loop() {
					if _, ok := decodeReviewObjects(body, &admission.Request{}); !ok {
						b.Fatal("not decoded in one pass")
					}
				}
				return
			}
			for b.Loop() {
				req := admission.Request{}
				if _, err := decodeReview(body, &req); err != nil {
					b.Fatal(err)
				}
				for _, raw := range [][]byte{req.Object.Raw, req.OldObject.Raw} {
					if raw == nil {
						continue
					}
					if _, err := decodeObject(raw); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// TestServeHTTPAllocations keeps the allocations of one review through the whole handler
// within budget, below the flink-on-k8s-operator webhook's on the same bodies (1,014 for the
// minimal mutate CREATE, 4,611 for the typical one, 1,734 for the typical validate UPDATE):
// a patch that needs a few defaults must not cost a diff of the whole object.
func TestServeHTTPAllocations(t *testing.T) {
	h, err := NewHandlers(Options{})
	if err != nil {
		t.Fatal(err)
	}
	reviews := benchReviews(t)
	for _, tt := range []struct {
		review string
		max    float64
	}{
		{"minimal-mutate-create", 400},
		{"typical-mutate-create", 1400},
		{"typical-validate-update", 1700},
	} {
		t.Run(tt.review, func(t *testing.T) {
			handler, path := h.Validate, ValidatePath
			if strings.Contains(tt.review, "mutate") {
				handler, path = h.Mutate, MutatePath
			}
			body := reviews[tt.review]
			if rec := serve(handler, path, body); !bytes.Contains(rec.Body.Bytes(), []byte(`"allowed":true`)) {
				t.Fatalf("review not allowed: %d %s", rec.Code, rec.Body)
			}
			if got := testing.AllocsPerRun(20, func() { serve(handler, path, body) }); got > tt.max {
				t.Errorf("%.0f allocations per review, want at most %.0f", got, tt.max)
			}
		})
	}
}
