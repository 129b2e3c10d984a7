package loadgen_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/hack/bench/loadgen"
)

// tlsServer serves h over TLS on 127.0.0.1 and counts the connections it accepts.
func tlsServer(t *testing.T, h http.HandlerFunc) (srv *httptest.Server, conns *atomic.Int64) {
	t.Helper()
	conns = &atomic.Int64{}
	srv = httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, conns
}

// clientTLS trusts the test server's certificate.
func clientTLS(srv *httptest.Server) *tls.Config {
	return srv.Client().Transport.(*http.Transport).TLSClientConfig
}

func TestRunCountsEveryRequestOverKeepAlive(t *testing.T) {
	var served atomic.Int64
	var mu sync.Mutex
	var bodies []string
	srv, conns := tlsServer(t, func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		if len(bodies) < 3 {
			bodies = append(bodies, r.Method+" "+r.Header.Get("Content-Type")+" "+string(b))
		}
		mu.Unlock()
		_, _ = w.Write([]byte(`{"allowed":true}`))
	})
	res, err := loadgen.Run(t.Context(), loadgen.Options{
		URL: srv.URL + "/validate", TLS: clientTLS(srv), Body: []byte(`{"x":1}`),
		Concurrency: 4, Requests: 200,
		Check: func(body []byte) error {
			if !strings.Contains(string(body), `"allowed":true`) {
				return errors.New("not allowed")
			}
			return nil
		},
	})
	require.NoError(t, err)
	assert.Equal(t, 200, res.Requests)
	assert.Equal(t, 200, res.Succeeded)
	assert.False(t, res.Incomplete)
	assert.Equal(t, int64(200), served.Load())
	assert.Equal(t, map[int]int{200: 200}, res.Status)
	assert.Zero(t, res.ErrorCount())
	assert.Equal(t, []string{`POST application/json {"x":1}`}, bodies[:1])
	assert.LessOrEqual(t, conns.Load(), int64(4), "each worker keeps one connection alive")
	assert.Positive(t, res.RequestsPerSecond)
	assert.True(t, res.P50 > 0 && res.P50 <= res.P99 && res.P99 <= res.P999 && res.P999 <= res.Max, "%s", res)
}

func TestRunCountsErrorsByKind(t *testing.T) {
	var n atomic.Int64
	srv, _ := tlsServer(t, func(w http.ResponseWriter, _ *http.Request) {
		switch n.Add(1) % 4 {
		case 0:
			http.Error(w, "boom", http.StatusInternalServerError)
		case 1:
			_, _ = w.Write([]byte(`{"allowed":false}`))
		default:
			_, _ = w.Write([]byte(`{"allowed":true}`))
		}
	})
	res, err := loadgen.Run(t.Context(), loadgen.Options{
		URL: srv.URL, TLS: clientTLS(srv), Concurrency: 3, Requests: 100,
		Check: func(body []byte) error {
			if !strings.Contains(string(body), `"allowed":true`) {
				return errors.New("denied")
			}
			return nil
		},
	})
	require.NoError(t, err)
	assert.Equal(t, 100, res.Requests)
	assert.Equal(t, 50, res.Succeeded)
	assert.Equal(t, map[int]int{200: 75, 500: 25}, res.Status)
	assert.Equal(t, map[loadgen.ErrorKind]int{loadgen.ErrStatus: 25, loadgen.ErrResponse: 25}, res.Errors)
	assert.Contains(t, res.ErrorSamples[loadgen.ErrStatus], "status 500")
	assert.Equal(t, "denied", res.ErrorSamples[loadgen.ErrResponse])
}

func TestRunClassifiesTransportFailures(t *testing.T) {
	srv, _ := tlsServer(t, func(w http.ResponseWriter, _ *http.Request) {})
	closed := httptest.NewTLSServer(http.NotFoundHandler())
	closedURL, closedTLS := closed.URL, clientTLS(closed)
	closed.Close()

	cases := []struct {
		name string
		opts loadgen.Options
		want loadgen.ErrorKind
	}{
		{"tls: the server's certificate is not trusted", loadgen.Options{URL: srv.URL}, loadgen.ErrTLS},
		{"connection: nobody listens", loadgen.Options{URL: closedURL, TLS: closedTLS}, loadgen.ErrConnection},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Concurrency, tc.opts.Requests = 2, 6
			res, err := loadgen.Run(t.Context(), tc.opts)
			require.NoError(t, err)
			assert.Equal(t, 6, res.Requests)
			assert.Zero(t, res.Succeeded)
			assert.Empty(t, res.Status)
			assert.Equal(t, map[loadgen.ErrorKind]int{tc.want: 6}, res.Errors, "%v", res.ErrorSamples)
		})
	}
}

func TestRunTimesOutSlowAnswers(t *testing.T) {
	release := make(chan struct{})
	srv, _ := tlsServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	res, err := loadgen.Run(t.Context(), loadgen.Options{
		URL: srv.URL, TLS: clientTLS(srv), Concurrency: 2, Requests: 4, Timeout: 50 * time.Millisecond,
	})
	require.NoError(t, err)
	assert.Equal(t, map[loadgen.ErrorKind]int{loadgen.ErrTimeout: 4}, res.Errors, "%v", res.ErrorSamples)
	assert.GreaterOrEqual(t, res.P50, 50*time.Millisecond)
}

func TestRunStopsAtMaxDuration(t *testing.T) {
	srv, _ := tlsServer(t, func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(10 * time.Millisecond) // each answer takes at least this long
	})
	// 10,000 answers of ≥ 10 ms on 2 workers take ≥ 50 s: the 200 ms limit must cut the run.
	res, err := loadgen.Run(t.Context(), loadgen.Options{
		URL: srv.URL, TLS: clientTLS(srv), Concurrency: 2, Requests: 10_000, MaxDuration: 200 * time.Millisecond,
	})
	require.NoError(t, err)
	assert.True(t, res.Incomplete)
	assert.Positive(t, res.Requests)
	assert.Less(t, res.Requests, 10_000)
	assert.Equal(t, res.Requests, res.Succeeded, "requests in flight at the limit finish: %v", res.ErrorSamples)
}

func TestRunRejectsBadOptions(t *testing.T) {
	for name, o := range map[string]loadgen.Options{
		"no URL":           {Concurrency: 1, Requests: 1},
		"no concurrency":   {URL: "https://127.0.0.1:1", Requests: 1},
		"no requests":      {URL: "https://127.0.0.1:1", Concurrency: 1},
		"negative timeout": {URL: "https://127.0.0.1:1", Concurrency: 1, Requests: 1, Timeout: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadgen.Run(t.Context(), o)
			assert.Error(t, err)
		})
	}
}

func TestPercentileNearestRank(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	thousand := make([]time.Duration, 1000)
	for i := range thousand {
		thousand[i] = time.Duration(i+1) * time.Millisecond
	}
	cases := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty: zero", nil, 50, 0},
		{"one value: every percentile is it", ms(7), 99.9, 7 * time.Millisecond},
		{"median of four: the second", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p99 of 1000: the 990th", thousand, 99, 990 * time.Millisecond},
		{"p99.9 of 1000: the 999th", thousand, 99.9, 999 * time.Millisecond},
		{"p100: the maximum", thousand, 100, 1000 * time.Millisecond},
		{"p99.9 of 10: the maximum", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99.9, 10 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, loadgen.Percentile(tc.sorted, tc.p))
		})
	}
}

func TestRunCountsADrainingServerAsConnectionErrors(t *testing.T) {
	var served atomic.Int64
	var once sync.Once
	var srv *httptest.Server
	srv, _ = tlsServer(t, func(w http.ResponseWriter, _ *http.Request) {
		if served.Add(1) == 50 {
			// A graceful shutdown, as on SIGTERM: this answer completes, then the listener
			// and the idle keep-alive connections close.
			once.Do(func() { go func() { _ = srv.Config.Shutdown(context.Background()) }() })
		}
	})
	res, err := loadgen.Run(t.Context(), loadgen.Options{URL: srv.URL, TLS: clientTLS(srv), Concurrency: 4, Requests: 400})
	require.NoError(t, err)
	assert.Equal(t, 400, res.Requests)
	assert.GreaterOrEqual(t, res.Succeeded, 50)
	assert.Equal(t, map[loadgen.ErrorKind]int{loadgen.ErrConnection: 400 - res.Succeeded}, res.Errors, "%v", res.ErrorSamples)
}

func TestRunCancelledCountsTheRequestsInFlightAsConnectionErrors(t *testing.T) {
	started := make(chan struct{}, 2)
	srv, _ := tlsServer(t, func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done() // answers only when the client goes away
	})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		<-started
		cancel()
	}()
	res, err := loadgen.Run(ctx, loadgen.Options{URL: srv.URL, TLS: clientTLS(srv), Concurrency: 2, Requests: 10})
	require.NoError(t, err)
	assert.True(t, res.Incomplete)
	assert.Equal(t, 2, res.Requests, "no request is sent once the run is cancelled")
	assert.Equal(t, map[loadgen.ErrorKind]int{loadgen.ErrConnection: 2}, res.Errors, "%v", res.ErrorSamples)
	assert.Contains(t, res.ErrorSamples[loadgen.ErrConnection], context.Canceled.Error())
}
