package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxRequestBytes is controller-runtime's admission request limit (two objects of at most
// 3 MiB each plus the review around them). admission.Webhook enforces it; the guard repeats
// it only to answer an oversized request with 413 before reading it.
const maxRequestBytes = 7 << 20

// contentTypeJSON is the only content type the API server sends admission reviews with,
// and the only one admission.Webhook accepts.
const contentTypeJSON = "application/json"

// guard is the http.Handler in front of admission.Webhook.
//
// admission.Webhook answers every request with HTTP 200, also one it could not read: an
// empty or oversized body, a wrong Content-Type or a body that is not an AdmissionReview get
// a review whose response is "not allowed" with the error code inside. The API server
// treats such an answer as a denial, but a malformed request deserves a 4xx status, so that
// a misconfigured caller sees at once that it was not understood. admission.Webhook does not
// check the method either. The guard checks what it can before the webhook reads the body
// and, for the rest, learns from the handler (through the request context) whether a review
// was decoded at all; if not, it turns the webhook's 200 into 400 (or 413).
//
// The guard also records the request metrics, so that every HTTP request is counted once,
// malformed or not.
type guard struct {
	// name is the webhook's metrics label.
	name string
	// next is the admission.Webhook.
	next http.Handler
}

// reviewState is what one request's handler tells the guard. Each request has its own; it
// lives only for the request, so no state outlives it (dry-run requests leave no trace).
type reviewState struct {
	// handled is set when admission.Webhook decoded a review and called the handler.
	handled bool
	// malformed is set by the handler for a review it cannot answer at all (no request).
	malformed bool
	// operation and allowed are the metrics labels of the answer.
	operation string
	allowed   bool
	// bodyBytes counts the bytes admission.Webhook read, to tell an oversized body apart.
	bodyBytes int64
}

type stateKey struct{}

// stateFrom returns the request's state, or a throwaway one when the handler runs without
// a guard (a direct call in a test), so that the handler never has to check for nil.
func stateFrom(ctx context.Context) *reviewState {
	if st, ok := ctx.Value(stateKey{}).(*reviewState); ok {
		return st
	}
	return &reviewState{}
}

// ServeHTTP implements http.Handler.
func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	st := &reviewState{operation: operationNone}
	defer func() {
		requestDuration.WithLabelValues(g.name).Observe(time.Since(start).Seconds())
		requestsTotal.WithLabelValues(g.name, st.operation, strconv.FormatBool(st.allowed)).Inc()
		if !st.handled {
			denialsTotal.WithLabelValues(g.name, ruleMalformedRequest).Inc()
		}
	}()

	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeStatus(w, http.StatusMethodNotAllowed, fmt.Sprintf(msgMethodFmt, r.Method))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != contentTypeJSON {
		writeStatus(w, http.StatusUnsupportedMediaType, fmt.Sprintf(msgContentTypeFmt, ct))
		return
	}
	if r.ContentLength >= maxRequestBytes {
		writeStatus(w, http.StatusRequestEntityTooLarge, fmt.Sprintf(msgTooLargeFmt, maxRequestBytes-1))
		return
	}

	r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &countingBody{ReadCloser: r.Body, n: &st.bodyBytes}
	}
	g.next.ServeHTTP(&statusWriter{ResponseWriter: w, st: st}, r)
}

// writeStatus answers a request the guard refuses itself: the status code, and an
// AdmissionReview that is not allowed, like admission.Webhook's own error answers.
func writeStatus(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", contentTypeJSON)
	w.WriteHeader(code)
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: &admissionv1.AdmissionResponse{
			Allowed: false,
			Result:  &metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Message: msg},
		},
	}
	// The status line is out; an error here means the connection is gone.
	_ = json.NewEncoder(w).Encode(review)
}

// statusWriter sets the HTTP status of admission.Webhook's answer, which writes its body
// without calling WriteHeader.
type statusWriter struct {
	http.ResponseWriter
	st          *reviewState
	wroteHeader bool
}

// WriteHeader implements http.ResponseWriter.
func (w *statusWriter) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	w.wroteHeader = true
	w.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.Header().Set("Content-Type", contentTypeJSON)
		w.WriteHeader(w.st.httpStatus())
	}
	return w.ResponseWriter.Write(b)
}

// httpStatus is the status of admission.Webhook's answer: 200 for a review the handler
// answered, 4xx for a request that never became one.
func (st *reviewState) httpStatus() int {
	switch {
	case st.handled && !st.malformed:
		return http.StatusOK
	case !st.handled && st.bodyBytes >= maxRequestBytes:
		return http.StatusRequestEntityTooLarge
	default:
		return http.StatusBadRequest
	}
}

// countingBody counts the bytes read from a request body.
type countingBody struct {
	io.ReadCloser
	n *int64
}

// Read implements io.Reader.
func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	*b.n += int64(n)
	return n, err
}
