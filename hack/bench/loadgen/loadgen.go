// Package loadgen sends a fixed number of identical HTTPS requests (an admission review, for
// instance) at a fixed concurrency over keep-alive connections, and reports the throughput,
// the latency percentiles, the answers by status code and the failures by kind. It is the
// load generator of `make bench` and of the sustained-load tests; it measures, it never
// judges: callers decide what figures are acceptable.
package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrorKind classifies a failed request.
type ErrorKind string

// The kinds of failure Run counts. A request fails with exactly one kind.
const (
	// ErrTimeout: Options.Timeout (or a deadline) expired before the whole answer arrived.
	ErrTimeout ErrorKind = "timeout"
	// ErrConnection: the connection could not be made or broke (refused, reset, closed
	// before the answer, e.g. by a server shutting down).
	ErrConnection ErrorKind = "connection"
	// ErrTLS: the TLS handshake failed (untrusted or expired certificate, wrong name).
	ErrTLS ErrorKind = "tls"
	// ErrStatus: the server answered with a status outside 200-299.
	ErrStatus ErrorKind = "status"
	// ErrResponse: the answer had a 2xx status but Options.Check rejected its body.
	ErrResponse ErrorKind = "response"
	// ErrOther: anything else (a malformed URL, for instance).
	ErrOther ErrorKind = "other"
)

// Options describe one run.
type Options struct {
	// URL is the target (https://127.0.0.1:9443/validate-...).
	URL string
	// TLS configures the client side of TLS (RootCAs trusting the server, ServerName); nil
	// means the system roots. HTTP/2 is not offered: the API server calls webhooks over
	// HTTP/1.1 with keep-alive, which is what this measures.
	TLS *tls.Config
	// Method is the HTTP method; POST when empty.
	Method string
	// Body is sent with every request.
	Body []byte
	// ContentType is the Content-Type header; application/json when empty.
	ContentType string
	// Concurrency is the number of workers, each with its own keep-alive connection, sending
	// one request at a time (≥ 1).
	Concurrency int
	// Requests is the number of requests to send in total (≥ 1).
	Requests int
	// MaxDuration stops sending new requests once it has elapsed (0: no limit); the requests
	// in flight finish and Result.Incomplete is set when fewer than Requests were sent.
	MaxDuration time.Duration
	// Timeout bounds each request, answer included; 30 s when zero.
	Timeout time.Duration
	// Check, when set, judges the body of each 2xx answer (e.g. "the review is allowed"); an
	// error counts the request as ErrResponse.
	Check func(body []byte) error
}

// Result are the figures of one run. Latencies are those of the requests that got a
// complete answer, failed or not.
type Result struct {
	// Requests is the number of requests sent; Succeeded of them got a 2xx answer that Check
	// accepted.
	Requests, Succeeded int
	// Incomplete is set when MaxDuration or the context stopped the run before Requests.
	Incomplete bool
	// Duration is the wall time from the first request to the last answer.
	Duration time.Duration
	// RequestsPerSecond is Requests / Duration.
	RequestsPerSecond float64
	// Latency percentiles (nearest rank) and extremes over every request that got an answer
	// or failed.
	P50, P90, P99, P999, Max, Mean time.Duration
	// Status counts the answers by HTTP status code.
	Status map[int]int
	// Errors counts the failed requests by kind.
	Errors map[ErrorKind]int
	// ErrorSamples holds the first error message of each kind, for diagnosis.
	ErrorSamples map[ErrorKind]string
}

// ErrorCount is the number of failed requests, all kinds together.
func (r Result) ErrorCount() int {
	n := 0
	for _, c := range r.Errors {
		n += c
	}
	return n
}

// String summarizes the result on one line.
func (r Result) String() string {
	return fmt.Sprintf("%d requests in %s: %.0f req/s, p50 %s, p99 %s, p99.9 %s, max %s, %d errors %v",
		r.Requests, r.Duration.Round(time.Millisecond), r.RequestsPerSecond,
		r.P50, r.P99, r.P999, r.Max, r.ErrorCount(), r.Errors)
}

func (o *Options) validate() error {
	var errs []error
	if o.URL == "" {
		errs = append(errs, errors.New("loadgen: a URL is required"))
	}
	if o.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("loadgen: concurrency %d must be at least 1", o.Concurrency))
	}
	if o.Requests < 1 {
		errs = append(errs, fmt.Errorf("loadgen: requests %d must be at least 1", o.Requests))
	}
	if o.MaxDuration < 0 || o.Timeout < 0 {
		errs = append(errs, errors.New("loadgen: durations must not be negative"))
	}
	return errors.Join(errs...)
}

// outcome is what one request gave.
type outcome struct {
	latency time.Duration
	status  int // 0 when no answer
	kind    ErrorKind
	err     string
	done    bool // the request was sent
}

// Run sends o.Requests requests with o.Concurrency workers and returns the figures. An error
// means the run could not be made (bad options); failed requests are counted in the Result,
// not returned as an error. Cancelling ctx stops sending new requests, like MaxDuration.
func Run(ctx context.Context, o Options) (Result, error) {
	if err := o.validate(); err != nil {
		return Result{}, err
	}
	method, contentType, timeout := o.Method, o.ContentType, o.Timeout
	if method == "" {
		method = http.MethodPost
	}
	if contentType == "" {
		contentType = "application/json"
	}
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	target, err := newTarget(&o, method, contentType)
	if err != nil {
		return Result{}, err
	}

	outcomes := make([]outcome, o.Requests)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	// MaxDuration only stops new requests: the ones in flight finish (with ctx, not a
	// shorter deadline), so that a time-bounded run does not count its own cut as failures.
	stopped := func() bool {
		return ctx.Err() != nil || (o.MaxDuration > 0 && time.Since(start) >= o.MaxDuration)
	}
	for range o.Concurrency {
		wg.Go(func() {
			w := &worker{target: target, timeout: timeout, check: o.Check}
			defer w.close()
			for !stopped() {
				i := int(next.Add(1)) - 1
				if i >= o.Requests {
					return
				}
				outcomes[i] = w.send(ctx)
				outcomes[i].done = true
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	done := slices.DeleteFunc(outcomes, func(o outcome) bool { return !o.done })
	return summarize(done, len(done) < o.Requests, elapsed), nil
}

// target is what every request of a run goes to, and the request itself, serialized once.
type target struct {
	// addr is host:port; tls is nil for http URLs.
	addr string
	tls  *tls.Config
	// request is the whole HTTP/1.1 request, headers and body.
	request []byte
}

func newTarget(o *Options, method, contentType string) (*target, error) {
	req, err := http.NewRequest(method, o.URL, bytes.NewReader(o.Body))
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", contentType)
	var raw bytes.Buffer
	if err := req.Write(&raw); err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	t := &target{addr: req.URL.Host, request: raw.Bytes()}
	switch req.URL.Scheme {
	case "https":
		t.tls = o.TLS.Clone()
		if t.tls == nil {
			t.tls = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		t.tls.NextProtos = []string{"http/1.1"}
		if t.tls.ServerName == "" {
			t.tls.ServerName = req.URL.Hostname()
		}
		if req.URL.Port() == "" {
			t.addr = net.JoinHostPort(req.URL.Hostname(), "443")
		}
	case "http":
		if req.URL.Port() == "" {
			t.addr = net.JoinHostPort(req.URL.Hostname(), "80")
		}
	default:
		return nil, fmt.Errorf("loadgen: URL %q: the scheme must be http or https", o.URL)
	}
	return t, nil
}

// worker sends requests one at a time over its own keep-alive connection. It writes the
// serialized request in one call and reads the answer in the same goroutine: net/http's
// client hands every request to a writing and a reading goroutine of the connection, and
// those hand-offs cost the load generator CPU that the server, sharing the machine, then
// lacks. A connection that fails or that the server closes is replaced by a new one for the
// next request; a failed request is not retried.
type worker struct {
	*target
	timeout time.Duration
	check   func([]byte) error
	conn    net.Conn
	r       *bufio.Reader
}

func (w *worker) close() {
	if w.conn != nil {
		_ = w.conn.Close()
		w.conn = nil
	}
}

// send makes one request and reads the whole answer.
func (w *worker) send(ctx context.Context) outcome {
	t0 := time.Now()
	deadline := t0.Add(w.timeout)
	fail := func(err error) outcome {
		w.close()
		if ctx.Err() != nil {
			// The run was cancelled (or its context timed out): that, not the deadline it
			// set on the connection to interrupt the request, is the failure's kind.
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return outcome{latency: time.Since(t0), kind: classify(err), err: err.Error()}
	}
	if w.conn == nil {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		conn, err := w.dial(dctx)
		cancel()
		if err != nil {
			return fail(err)
		}
		w.conn, w.r = conn, bufio.NewReader(conn)
	}
	// Cancelling ctx ends a request in flight, as it would with net/http.
	stop := context.AfterFunc(ctx, func() { _ = w.conn.SetDeadline(time.Now()) })
	defer stop()
	if err := w.conn.SetDeadline(deadline); err != nil {
		return fail(err)
	}
	if _, err := w.conn.Write(w.request); err != nil {
		return fail(err)
	}
	resp, err := http.ReadResponse(w.r, nil)
	if err != nil {
		return fail(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fail(err)
	}
	if resp.Close {
		w.close() // the server asked for it (Connection: close, e.g. while draining)
	}
	out := outcome{latency: time.Since(t0), status: resp.StatusCode}
	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		out.kind, out.err = ErrStatus, fmt.Sprintf("status %d: %.200s", resp.StatusCode, body)
	case w.check != nil:
		if err := w.check(body); err != nil {
			out.kind, out.err = ErrResponse, err.Error()
		}
	}
	return out
}

// dial opens a connection to the target, with its TLS handshake done.
func (w *worker) dial(ctx context.Context) (net.Conn, error) {
	if w.tls == nil {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", w.addr)
	}
	d := tls.Dialer{Config: w.tls}
	return d.DialContext(ctx, "tcp", w.addr)
}

// classify names the kind of a transport error.
func classify(err error) ErrorKind {
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	var alert tls.AlertError
	var recordErr tls.RecordHeaderError
	var opErr *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return ErrTimeout
	case errors.As(err, &certErr), errors.As(err, &alert), errors.As(err, &recordErr):
		return ErrTLS
	case errors.As(err, &opErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, net.ErrClosed), errors.Is(err, context.Canceled),
		// net/http does not export this one: a keep-alive connection the server closed (a
		// server draining on SIGTERM) just as a POST, which it does not retry, was sent on it.
		strings.Contains(err.Error(), "server closed idle connection"):
		return ErrConnection
	default:
		return ErrOther
	}
}

// summarize turns the outcomes into a Result.
func summarize(outcomes []outcome, incomplete bool, elapsed time.Duration) Result {
	r := Result{
		Requests:     len(outcomes),
		Incomplete:   incomplete,
		Duration:     elapsed,
		Status:       map[int]int{},
		Errors:       map[ErrorKind]int{},
		ErrorSamples: map[ErrorKind]string{},
	}
	if elapsed > 0 {
		r.RequestsPerSecond = float64(len(outcomes)) / elapsed.Seconds()
	}
	latencies := make([]time.Duration, 0, len(outcomes))
	var sum time.Duration
	for _, o := range outcomes {
		latencies = append(latencies, o.latency)
		sum += o.latency
		if o.status != 0 {
			r.Status[o.status]++
		}
		if o.kind == "" {
			r.Succeeded++
			continue
		}
		r.Errors[o.kind]++
		if _, ok := r.ErrorSamples[o.kind]; !ok {
			r.ErrorSamples[o.kind] = o.err
		}
	}
	if len(latencies) == 0 {
		return r
	}
	slices.Sort(latencies)
	r.P50 = Percentile(latencies, 50)
	r.P90 = Percentile(latencies, 90)
	r.P99 = Percentile(latencies, 99)
	r.P999 = Percentile(latencies, 99.9)
	r.Max = latencies[len(latencies)-1]
	r.Mean = sum / time.Duration(len(latencies))
	return r
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of sorted by the nearest-rank
// method: the smallest value that at least p % of the values do not exceed. It returns 0 for
// an empty slice.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	// rank = ceil(p/100 × n), computed in integers (per mille of a percent) so that 99.9 %
	// of 1000 is exactly rank 999.
	n := int64(len(sorted))
	scaled := int64(p*1000 + 0.5)
	rank := (scaled*n + 100_000 - 1) / 100_000
	rank = max(1, min(rank, n))
	return sorted[rank-1]
}
