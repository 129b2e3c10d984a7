package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
)

// TestAnnouncedBodiesHoldNoMemory opens 100 TLS connections that announce a body of the
// largest size and send none of it, as an unauthenticated client can. Each request waits
// for its body while holding almost nothing, the heap grows by far less than the bodies
// announced (700 MiB), and ordinary reviews go on being answered.
func TestAnnouncedBodiesHoldNoMemory(t *testing.T) {
	const connections = 100
	const heapBound = 64 << 20
	h := newBudgetHandlers(t, 0)
	reading := make(chan struct{}, connections+1)
	ts := startTLS(t, waitingForBody(h.h.Validate, reading))

	// HeapInuse, after a collection, counts the memory the live requests hold.
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	for range connections {
		conn, err := tls.Dial("tcp", ts.Listener.Addr().String(), &tls.Config{RootCAs: ts.pool})
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
			ValidatePath, MaxRequestBytes)
		require.NoError(t, err)
	}
	timeout := time.After(time.Minute)
	for i := range connections {
		select {
		case <-reading:
		case <-timeout:
			t.Fatalf("%d of %d requests read their body after a minute", i, connections)
		}
	}

	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap in use %.1f MiB before, %.1f MiB with %d connections announcing %d MiB each: +%.1f MiB; body budget held %.0f KiB",
		mib(before.HeapInuse), mib(after.HeapInuse), connections, MaxRequestBytes>>20, float64(grown)/(1<<20), h.inFlight()/1024)
	assert.Less(t, grown, int64(heapBound), "the heap grows by less than 64 MiB")

	a := roundTrip(t, ts.client, reviewRequest(t, ts.URL+ValidatePath, reviewBody(request(admissionv1.Create, jobCluster(), nil))))
	assert.Equal(t, http.StatusOK, a.code, "an ordinary review is answered: %s", a.body)
	assert.True(t, a.review != nil && a.review.Response != nil && a.review.Response.Allowed, "the ordinary review is allowed: %s", a.body)
}

// TestBodyBudgetRefusesWhenFull fills a small body budget with one client that sends part
// of a body and stalls: a review that finds no room in time is answered 503 with the
// reason, not made to wait; once the stalled client is gone, its budget is free again.
func TestBodyBudgetRefusesWhenFull(t *testing.T) {
	const budget = 64 << 10
	h := newBudgetHandlers(t, budget)
	ts := startTLS(t, h.h.Validate)

	conn, err := tls.Dial("tcp", ts.Listener.Addr().String(), &tls.Config{RootCAs: ts.pool})
	require.NoError(t, err)
	defer conn.Close()
	// 60 KiB fill buffers of 4, 8, 16 and 32 KiB: the whole budget.
	_, err = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		ValidatePath, 1<<20, bytes.Repeat([]byte(" "), 60<<10))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return h.inFlight() == budget }, time.Minute, 10*time.Millisecond,
		"the stalled client holds the whole budget")

	body := reviewBody(request(admissionv1.Create, jobCluster(), nil))
	a := roundTrip(t, ts.client, reviewRequest(t, ts.URL+ValidatePath, body))
	assert.Equal(t, http.StatusServiceUnavailable, a.code, "a review without budget: %s", a.body)
	assert.Equal(t, "1", a.header.Get("Retry-After"))
	if assert.NotNil(t, a.review, "the answer is an AdmissionReview: %s", a.body) && assert.NotNil(t, a.review.Response) {
		assert.False(t, a.review.Response.Allowed)
		assert.Equal(t, fmt.Sprintf(msgNoBudgetFmt, budget), a.review.Response.Result.Message)
	}
	assert.Equal(t, 1.0, testutil.ToFloat64(h.m.budgetRefusals.WithLabelValues(webhookValidate)), "the refusal is counted")

	require.NoError(t, conn.Close())
	require.Eventually(t, func() bool { return h.inFlight() == 0 }, time.Minute, 10*time.Millisecond,
		"the stalled client's budget is released when it is gone")
	a = roundTrip(t, ts.client, reviewRequest(t, ts.URL+ValidatePath, body))
	assert.Equal(t, http.StatusOK, a.code, "a review once the budget is free: %s", a.body)
	assert.Equal(t, 0.0, h.inFlight(), "an answered review holds no budget")
}

// TestBodiesAreReadWhole reads bodies around the buffer sizes and the limit: each is read
// byte for byte, holding budget for no more than twice its size (the last buffer doubled),
// and one byte over the limit is refused.
func TestBodiesAreReadWhole(t *testing.T) {
	for _, tt := range []struct {
		name    string
		size    int
		tooLong bool
	}{
		{name: "empty", size: 0},
		{name: "one byte", size: 1},
		{name: "the first buffer, full", size: firstBodyBuffer},
		{name: "one byte more than the first buffer", size: firstBodyBuffer + 1},
		{name: "a typical review", size: 18805},
		{name: "the limit", size: MaxRequestBytes},
		{name: "one byte over the limit", size: MaxRequestBytes + 1, tooLong: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newBudgetHandlers(t, 0)
			want := bytes.Repeat([]byte("x"), tt.size)
			// One byte at a time for the small ones: the body arrives in pieces.
			var src io.Reader = bytes.NewReader(want)
			if tt.size < 64<<10 {
				src = oneByteReader{src}
			}
			got, held, err := readBody(context.Background(), http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(src), MaxRequestBytes), -1, h.budget)
			defer h.budget.release(held)
			assert.Equal(t, float64(held), h.inFlight(), "the gauge shows the budget held")
			if tt.tooLong {
				_, ok := errors.AsType[*http.MaxBytesError](err)
				assert.True(t, ok, "a body over the limit is refused with http.MaxBytesError, not %v", err)
				return
			}
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want, got), "the body is read byte for byte")
			assert.LessOrEqual(t, held, int64(max(2*tt.size, firstBodyBuffer)), "budget held")
		})
	}
}

// TestBodiesAnnouncedSmallAreReadIntoTheirSize checks that a body whose Content-Length is
// below the first buffer holds one byte more than announced, and that a body longer than
// announced is still read whole.
func TestBodiesAnnouncedSmallAreReadIntoTheirSize(t *testing.T) {
	for _, tt := range []struct {
		name            string
		size, announced int
		wantHeld        int64
	}{
		{name: "empty", size: 0, announced: 0, wantHeld: 1},
		{name: "a minimal review", size: 2047, announced: 2047, wantHeld: 2048},
		{name: "one byte below the first buffer", size: firstBodyBuffer - 1, announced: firstBodyBuffer - 1, wantHeld: firstBodyBuffer},
		{name: "the first buffer, announced", size: firstBodyBuffer, announced: firstBodyBuffer, wantHeld: 2 * firstBodyBuffer},
		{name: "longer than announced", size: 3000, announced: 100, wantHeld: firstBodyBuffer},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newBudgetHandlers(t, 0)
			want := bytes.Repeat([]byte("x"), tt.size)
			got, held, err := readBody(context.Background(), http.MaxBytesReader(httptest.NewRecorder(), io.NopCloser(oneByteReader{bytes.NewReader(want)}), MaxRequestBytes), int64(tt.announced), h.budget)
			defer h.budget.release(held)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(want, got), "the body is read byte for byte")
			assert.Equal(t, tt.wantHeld, held, "budget held")
		})
	}
}

// budgetHandlers are handlers with metrics of their own, to read the body budget's.
type budgetHandlers struct {
	h      *Handlers
	m      *Metrics
	budget *bodyBudget
}

func newBudgetHandlers(t *testing.T, budget int64) *budgetHandlers {
	t.Helper()
	m, err := NewMetrics(nil)
	require.NoError(t, err)
	h, err := NewHandlers(Options{Metrics: m, BodyBytesInFlight: budget})
	require.NoError(t, err)
	return &budgetHandlers{h: h, m: m, budget: h.Validate.(*server).budget}
}

// inFlight reads the gauge of body bytes in flight.
func (b *budgetHandlers) inFlight() float64 { return testutil.ToFloat64(b.m.bodyBytes) }

// tlsServer is an HTTPS server of HTTP/1.1, as the webhook server is, with a client that
// trusts it.
type tlsServer struct {
	*httptest.Server
	pool   *x509.CertPool
	client *http.Client
}

func startTLS(t *testing.T, h http.Handler) *tlsServer {
	t.Helper()
	ts := httptest.NewTLSServer(h)
	t.Cleanup(ts.Close)
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	return &tlsServer{Server: ts, pool: pool, client: ts.Client()}
}

// waitingForBody sends on reading when a request first reads its body: by then the
// handler holds whatever it allocated for the body. reading must have room for every
// request.
func waitingForBody(h http.Handler, reading chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &firstRead{ReadCloser: r.Body, done: func() { reading <- struct{}{} }}
		h.ServeHTTP(w, r)
	})
}

type firstRead struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (f *firstRead) Read(p []byte) (int, error) {
	f.once.Do(f.done)
	return f.ReadCloser.Read(p)
}

// oneByteReader returns one byte per Read.
type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func reviewRequest(t *testing.T, url string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentTypeJSON)
	return req
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
