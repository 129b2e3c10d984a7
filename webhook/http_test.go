package webhook

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// TestMalformedHTTP sends requests that are not admission reviews: each gets a 4xx status,
// and whatever body comes back is never an allow.
func TestMalformedHTTP(t *testing.T) {
	valid := reviewBody(request(admissionv1.Create, jobCluster(), nil))
	tooLarge := append(append([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"`),
		bytes.Repeat([]byte("a"), MaxRequestBytes)...), `"}}`...)
	tests := []struct {
		name        string
		method      string
		contentType string
		body        []byte
		// chunked hides the length, so that only reading tells the body is too large.
		chunked bool
		code    int
	}{
		{name: "GET", method: http.MethodGet, contentType: "application/json", body: valid, code: http.StatusMethodNotAllowed},
		{name: "PUT", method: http.MethodPut, contentType: "application/json", body: valid, code: http.StatusMethodNotAllowed},
		{name: "no content type", method: http.MethodPost, body: valid, code: http.StatusUnsupportedMediaType},
		{name: "text/plain", method: http.MethodPost, contentType: "text/plain", body: valid, code: http.StatusUnsupportedMediaType},
		{name: "application/yaml", method: http.MethodPost, contentType: "application/yaml", body: valid, code: http.StatusUnsupportedMediaType},
		{name: "empty body", method: http.MethodPost, contentType: "application/json", code: http.StatusBadRequest},
		{name: "body too large", method: http.MethodPost, contentType: "application/json", body: tooLarge, code: http.StatusRequestEntityTooLarge},
		{name: "body too large, chunked", method: http.MethodPost, contentType: "application/json", body: tooLarge, chunked: true, code: http.StatusRequestEntityTooLarge},
		{name: "bad JSON", method: http.MethodPost, contentType: "application/json", body: []byte(`{"kind":"AdmissionReview",`), code: http.StatusBadRequest},
		{name: "not JSON", method: http.MethodPost, contentType: "application/json", body: []byte("hello"), code: http.StatusBadRequest},
		{name: "JSON list", method: http.MethodPost, contentType: "application/json", body: []byte(`[]`), code: http.StatusBadRequest},
		{name: "review of another kind", method: http.MethodPost, contentType: "application/json", body: []byte(`{"kind":"Pod","apiVersion":"v1"}`), code: http.StatusBadRequest},
		{name: "review without request", method: http.MethodPost, contentType: "application/json", body: []byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"}`), code: http.StatusBadRequest},
		{name: "review with a null request", method: http.MethodPost, contentType: "application/json", body: []byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":null}`), code: http.StatusBadRequest},
		{name: "empty JSON object", method: http.MethodPost, contentType: "application/json", body: []byte(`{}`), code: http.StatusBadRequest},
		{name: "request of the wrong type", method: http.MethodPost, contentType: "application/json", body: []byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":"CREATE"}`), code: http.StatusBadRequest},
	}
	for _, tt := range tests {
		for _, wh := range []struct {
			name string
			h    http.Handler
		}{{"validate", testHandlers.Validate}, {"mutate", testHandlers.Mutate}} {
			t.Run(wh.name+"/"+tt.name, func(t *testing.T) {
				srv := httptest.NewServer(wh.h)
				defer srv.Close()
				var body io.Reader = bytes.NewReader(tt.body)
				if tt.chunked {
					body = io.MultiReader(body) // not a type net/http knows the length of
				}
				req, err := http.NewRequest(tt.method, srv.URL, body)
				if err != nil {
					t.Fatal(err)
				}
				if tt.contentType != "" {
					req.Header.Set("Content-Type", tt.contentType)
				}
				a := roundTrip(t, srv.Client(), req)
				if a.code != tt.code {
					t.Errorf("HTTP status %d, want %d: %s", a.code, tt.code, a.body)
				}
				if bytes.Contains(a.body, []byte(`"allowed":true`)) {
					t.Errorf("body allows: %s", a.body)
				}
				if a.review == nil || a.review.Response == nil || a.review.Response.Allowed {
					t.Errorf("body is not a denying AdmissionReview: %s", a.body)
				}
				if a.contentType != "application/json" {
					t.Errorf("Content-Type %q, want application/json", a.contentType)
				}
			})
		}
	}
}

// TestServeHTTPValid checks the HTTP side of a good review: 200, JSON, an AdmissionReview v1.
func TestServeHTTPValid(t *testing.T) {
	a := post(t, testHandlers.Validate, reviewBody(request(admissionv1.Create, jobCluster(), nil)))
	if a.code != http.StatusOK || a.contentType != "application/json" {
		t.Errorf("HTTP %d %q, want 200 application/json", a.code, a.contentType)
	}
	if a.review == nil || a.review.APIVersion != "admission.k8s.io/v1" || a.review.Kind != "AdmissionReview" {
		t.Errorf("body is not an AdmissionReview v1: %s", a.body)
	}
}

// TestAdmissionReviewV1beta1 checks that a v1beta1 review (webhook configurations may allow
// it) is answered in v1beta1, as controller-runtime does.
func TestAdmissionReviewV1beta1(t *testing.T) {
	body := strings.Replace(string(reviewBody(request(admissionv1.Create, jobCluster(), nil))),
		`"apiVersion":"admission.k8s.io/v1"`, `"apiVersion":"admission.k8s.io/v1beta1"`, 1)
	a := post(t, testHandlers.Validate, []byte(body))
	if a.code != http.StatusOK || a.review == nil || a.review.APIVersion != "admission.k8s.io/v1beta1" || !a.review.Response.Allowed {
		t.Errorf("HTTP %d, want an allowed v1beta1 review: %s", a.code, a.body)
	}
}
