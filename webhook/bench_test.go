package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/flink-admission/flink-admission/policy"
)

// BenchmarkServeHTTP measures one admission review through the whole in-process
// http.Handler (guard, admission.Webhook decoding and encoding, policy, CEL rules, patch),
// on the shared benchmark bodies in testdata/bench (copies of shared/bench/reviews).
func BenchmarkServeHTTP(b *testing.B) {
	h, err := NewHandlers(Options{})
	if err != nil {
		b.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "bench", "*.json"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no benchmark reviews in testdata/bench: %v", err)
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
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

// BenchmarkValidateStages splits the validating webhook's work on the UPDATE reviews into
// its stages, to show where the time of BenchmarkServeHTTP goes: decoding each object
// into the Go type and into the CEL rules' map form, the policy, and the CEL rules.
func BenchmarkValidateStages(b *testing.B) {
	ctx := b.Context()
	for _, name := range []string{"minimal-validate-update", "typical-validate-update"} {
		body, err := os.ReadFile(filepath.Join("testdata", "bench", name+".json"))
		if err != nil {
			b.Fatal(err)
		}
		var review admissionv1.AdmissionReview
		if err := json.Unmarshal(body, &review); err != nil {
			b.Fatal(err)
		}
		raw, oldRaw := review.Request.Object.Raw, review.Request.OldObject.Raw
		fc, err := decodeCluster(raw)
		if err != nil {
			b.Fatal(err)
		}
		old, err := decodeCluster(oldRaw)
		if err != nil {
			b.Fatal(err)
		}
		obj, err := decodeUnstructured(raw)
		if err != nil {
			b.Fatal(err)
		}
		oldObj, err := decodeUnstructured(oldRaw)
		if err != nil {
			b.Fatal(err)
		}
		stages := []struct {
			name string
			run  func()
		}{
			{"decode-typed-both", func() { _, _ = decodeCluster(raw); _, _ = decodeCluster(oldRaw) }},
			{"decode-map-both", func() { _, _ = decodeUnstructured(raw); _, _ = decodeUnstructured(oldRaw) }},
			{"policy", func() { _, _ = policy.Validator{}.ValidateUpdate(old, fc) }},
			{"cel", func() { _ = testHandlers.rules.Validate(ctx, obj, oldObj) }},
		}
		for _, s := range stages {
			b.Run(name+"/"+s.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					s.run()
				}
			})
		}
	}
}
