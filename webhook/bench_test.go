package webhook

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
