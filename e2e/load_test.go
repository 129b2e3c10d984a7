package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/flink-admission/flink-admission/hack/bench/loadgen"
	"github.com/flink-admission/flink-admission/internal/test/testcerts"
	"github.com/flink-admission/flink-admission/webhook"
)

// loadReviews is how many reviews TestSustainedLoad sends: a brief run in `make test`, and
// 100,000 in `make soak`.
var loadReviews = flag.Int("load-reviews", 2000, "reviews TestSustainedLoad sends (make soak: 100000)")

// webhookOnly is a `flink-admission serve` process in files mode without the controller,
// which needs nothing from the API server: the server under test of the load and shutdown
// tests, called straight over HTTPS as the API server calls it.
type webhookOnly struct {
	proc                               *exec.Cmd
	addr                               string
	pool                               *x509.CertPool
	metricsPort, healthPort, pprofPort int
}

func startWebhookOnly(t *testing.T, args ...string) *webhookOnly {
	t.Helper()
	ca := testcerts.NewCA(t)
	vol := newCertVolume(t)
	vol.publish(t, ca)
	port := freePort(t)
	w := &webhookOnly{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), metricsPort: freePort(t), healthPort: freePort(t), pprofPort: freePort(t)}
	w.proc = startServe(t, binary(t), append([]string{
		"--cert-mode=files", "--cert-dir=" + vol.dir,
		"--webhook-port=" + strconv.Itoa(port),
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(w.metricsPort),
		// Plain HTTP on loopback: the test reads /metrics without a token.
		"--metrics-secure=false",
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(w.healthPort),
		// The profiling endpoints let a test force a collection (see collect).
		"--pprof-bind-address=127.0.0.1:" + strconv.Itoa(w.pprofPort),
		"--enable-controller=false", "--leader-elect=false",
		"--kubeconfig=" + dev.Env.Kubeconfig,
	}, args...)...)
	eventually(t, 30*time.Second, "serve is ready", func() error { return httpOK(w.readyz()) })
	w.pool = x509.NewCertPool()
	w.pool.AddCert(ca.Cert)
	return w
}

func (w *webhookOnly) readyz() string {
	return fmt.Sprintf("http://127.0.0.1:%d/readyz", w.healthPort)
}

// memory reads the process's resident set from /proc and its heap in use and goroutines from
// its metrics.
func (w *webhookOnly) memory(t *testing.T) (rss, heap, goroutines float64) {
	t.Helper()
	rss, heap, goroutines, err := w.readMemory()
	require.NoError(t, err)
	return rss, heap, goroutines
}

// readMemory is memory for a goroutine other than the test's, which must not call
// t.FailNow: it returns the error instead.
func (w *webhookOnly) readMemory() (rss, heap, goroutines float64, err error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", w.proc.Process.Pid))
	if err != nil {
		return 0, 0, 0, err
	}
	for line := range strings.Lines(string(status)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return 0, 0, 0, fmt.Errorf("VmRSS %q: %w", f[1], err)
			}
			rss = kb * 1024
		}
	}
	m, err := scrapeMetrics(w.metricsPort)
	if err != nil {
		return 0, 0, 0, err
	}
	return rss, m["go_memstats_heap_inuse_bytes"], m["go_goroutines"], nil
}

// scrape reads the unlabelled samples of a metrics endpoint.
func scrape(t *testing.T, port int) map[string]float64 {
	t.Helper()
	m, err := scrapeMetrics(port)
	require.NoError(t, err)
	return m
}

// scrapeMetrics is scrape returning its error, for any goroutine.
func scrapeMetrics(port int) (map[string]float64, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || strings.HasPrefix(f[0], "#") || strings.Contains(f[0], "{") {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			out[f[0]] = v
		}
	}
	return out, sc.Err()
}

// collect makes the server run two full garbage collections, through its heap profile's gc
// parameter, so that a heap figure read next counts live memory only. Left alone, the heap
// of a server that stopped allocating shrinks only at the collection Go forces every two
// minutes. Two, because objects parked in a sync.Pool survive one collection.
func (w *webhookOnly) collect(t *testing.T) {
	t.Helper()
	for range 2 {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap?gc=1", w.pprofPort))
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, "the heap profile")
	}
}

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// allowed is loadgen's check of an answer: the review came back allowed.
func allowed(body []byte) error {
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &out); err != nil {
		return err
	}
	if out.Response == nil || !out.Response.Allowed {
		return fmt.Errorf("not allowed: %+v", out.Response)
	}
	return nil
}

// loadReview is a review the validating webhook allows: the Deployment-mode sample.
func loadReview(t *testing.T) []byte {
	t.Helper()
	fc := readSample(t, "deployment-mode.yaml")
	fc.Namespace = "default"
	return admissionReview(t, fc)
}

// TestSustainedLoad sends -load-reviews reviews (2,000 here, 100,000 in `make soak`) at
// concurrency 64 over HTTPS keep-alive connections to the real binary: none may fail, and
// afterwards the goroutines and the heap must come back to their idle level (no leak per
// request or per connection). The figures are logged; the only bounds are generous ones.
func TestSustainedLoad(t *testing.T) {
	w := startWebhookOnly(t)
	review := loadReview(t)
	run := func(n int) loadgen.Result {
		t.Helper()
		res, err := loadgen.Run(context.Background(), loadgen.Options{
			URL: "https://" + w.addr + webhook.ValidatePath, TLS: &tls.Config{RootCAs: w.pool},
			Body: review, Concurrency: 64, Requests: n, Check: allowed,
		})
		require.NoError(t, err)
		return res
	}
	// Warm up (TLS session set-up, CEL, lazily built tables), then measure idle.
	warm := run(500)
	require.Zero(t, warm.ErrorCount(), "%v", warm.ErrorSamples)
	// Idle: once the warm-up's connections are gone (the goroutine count stops falling), and
	// after a collection.
	var rss0, heap0, gr0 float64
	eventually(t, 30*time.Second, "the server is idle after the warm-up", func() error {
		_, _, before := w.memory(t)
		time.Sleep(500 * time.Millisecond)
		_, _, after := w.memory(t)
		if after != before {
			return fmt.Errorf("goroutines %.0f → %.0f", before, after)
		}
		return nil
	})
	w.collect(t)
	rss0, heap0, gr0 = w.memory(t)

	// The peaks are sampled during the run and once at its end: a brief run may be over
	// before the first tick.
	var peakRSS, peakHeap atomic.Int64
	// The sampler runs beside the test's goroutine, so it keeps its first error for the
	// test to fail on once it stopped.
	var sampleErr error
	sample := func() {
		rss, heap, _, err := w.readMemory()
		if err != nil {
			if sampleErr == nil {
				sampleErr = err
			}
			return
		}
		if int64(rss) > peakRSS.Load() {
			peakRSS.Store(int64(rss))
		}
		if int64(heap) > peakHeap.Load() {
			peakHeap.Store(int64(heap))
		}
	}
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(50 * time.Millisecond):
			}
			sample()
		}
	}()
	res := run(*loadReviews)
	close(stopSampling)
	<-sampled
	sample()
	require.NoError(t, sampleErr, "sampling the server's memory")
	t.Logf("load: %s", res)
	assert.Equal(t, *loadReviews, res.Succeeded, "every review answered and allowed")
	assert.Zero(t, res.ErrorCount(), "%v", res.ErrorSamples)

	// The load generator has closed its connections: the server's goroutines go back to
	// their idle count as it reads their ends, and its heap, after a collection, to its idle
	// size. The wait is for those events (each try collects first); its bound only stops a
	// leak from hanging the test.
	var rss1, heap1, gr1 float64
	start := time.Now()
	eventually(t, time.Minute, "goroutines and heap back to their idle level", func() error {
		w.collect(t)
		rss1, heap1, gr1 = w.memory(t)
		if gr1 > gr0+2 {
			return fmt.Errorf("%.0f goroutines, %.0f idle", gr1, gr0)
		}
		if heap1 > heap0*1.5+4<<20 {
			return fmt.Errorf("heap in use %s, %s idle", mib(heap1), mib(heap0))
		}
		return nil
	})
	t.Logf("memory: idle RSS %s heap %s (%.0f goroutines); peak RSS %s heap %s; after %s RSS %s heap %s (%.0f goroutines)",
		mib(rss0), mib(heap0), gr0, mib(float64(peakRSS.Load())), mib(float64(peakHeap.Load())),
		time.Since(start).Round(time.Second), mib(rss1), mib(heap1), gr1)
}

// TestShutdownDrainsUnderLoad sends SIGTERM to the real binary while reviews flow. A
// load balancer is simulated: it polls /readyz as the kubelet does, and one second after the
// first failure (the endpoint removal reaching the API servers) it sends no new request.
// The server must turn unready at once, go on serving for --shutdown-drain, finish a request
// still in flight when it closes its listener, and exit 0: no request may fail.
func TestShutdownDrainsUnderLoad(t *testing.T) {
	const drain = 3 * time.Second
	w := startWebhookOnly(t, "--shutdown-drain="+drain.String())
	review := loadReview(t)
	url := "https://" + w.addr + webhook.ValidatePath
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: w.pool}, MaxIdleConnsPerHost: 8}
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	t.Cleanup(transport.CloseIdleConnections)

	var (
		routed                atomic.Bool // the simulated load balancer still sends here
		unreadyAt, listenerAt atomic.Pointer[time.Time]
		ok, okAfterUnready    atomic.Int64
		mu                    sync.Mutex
		failures              []string
		wg                    sync.WaitGroup
	)
	routed.Store(true)
	for range 8 {
		wg.Go(func() {
			for routed.Load() {
				if err := postReview(client, url, review); err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					continue
				}
				ok.Add(1)
				if unreadyAt.Load() != nil {
					okAfterUnready.Add(1)
				}
			}
		})
	}
	// The kubelet and the endpoint propagation: routing stops a second after the server
	// turned unready, and not before a review was answered in that second (on a loaded
	// machine the workers may get no turn in it), unless the listener closed first.
	wg.Go(func() {
		for unreadyAt.Load() == nil {
			if httpOK(w.readyz()) != nil {
				now := time.Now()
				unreadyAt.Store(&now)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(time.Second)
		for okAfterUnready.Load() == 0 && listenerAt.Load() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		routed.Store(false)
	})
	// When the listener closes: the first refused connection.
	wg.Go(func() {
		for {
			c, err := net.DialTimeout("tcp", w.addr, time.Second)
			if err != nil {
				now := time.Now()
				listenerAt.Store(&now)
				return
			}
			_ = c.Close()
			time.Sleep(20 * time.Millisecond)
		}
	})

	before := ok.Load()
	eventually(t, 30*time.Second, "reviews flow", func() error {
		if ok.Load() < before+100 {
			return fmt.Errorf("%d reviews so far", ok.Load()-before)
		}
		return nil
	})
	sigterm := time.Now()
	require.NoError(t, w.proc.Process.Signal(syscall.SIGTERM))

	// A request in flight when the listener closes: its headers and half its body are sent
	// during the drain, the rest only once new connections are refused.
	eventually(t, 10*time.Second, "unready", func() error {
		if unreadyAt.Load() == nil {
			return errors.New("still ready")
		}
		return nil
	})
	body, feed := io.Pipe()
	inFlight := make(chan error, 1)
	go func() {
		req, err := http.NewRequest(http.MethodPost, url, body)
		if err != nil {
			inFlight <- err
			return
		}
		req.ContentLength = int64(len(review))
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: w.pool}}, Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			inFlight <- err
			return
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		if err == nil {
			err = allowed(raw)
		}
		inFlight <- err
	}()
	_, err := feed.Write(review[:len(review)/2])
	require.NoError(t, err)
	eventually(t, 2*drain+10*time.Second, "the listener closes", func() error {
		if listenerAt.Load() == nil {
			return errors.New("still accepting connections")
		}
		return nil
	})
	_, err = feed.Write(review[len(review)/2:])
	require.NoError(t, err)
	require.NoError(t, feed.Close())
	select {
	case err := <-inFlight:
		assert.NoError(t, err, "the request in flight when the listener closed was answered")
	case <-time.After(time.Minute):
		t.Fatal("the request in flight was never answered")
	}

	assert.NoError(t, waitExit(w.proc, time.Minute), "serve exits 0")
	exited := time.Now()
	wg.Wait()

	unready, closed := unreadyAt.Load().Sub(sigterm), listenerAt.Load().Sub(sigterm)
	t.Logf("SIGTERM → unready after %s, listener closed after %s (drain %s), exit after %s; %d reviews answered, %d of them after the server turned unready, %d failed",
		unready.Round(time.Millisecond), closed.Round(time.Millisecond), drain, exited.Sub(sigterm).Round(time.Millisecond),
		ok.Load(), okAfterUnready.Load(), len(failures))
	assert.Empty(t, failures, "no review failed")
	// An order of events, not a duration: a test process starved of CPU sees both late.
	assert.True(t, unreadyAt.Load().Before(*listenerAt.Load()), "readiness turns false while the listener still accepts connections")
	// A lower bound: a loaded machine only makes the listener's close look later.
	assert.GreaterOrEqual(t, closed, drain, "the listener stays open for the drain period")
	assert.Positive(t, okAfterUnready.Load(), "reviews still routed here after the server turned unready were answered")
}
