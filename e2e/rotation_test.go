package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/internal/devenv"
	"github.com/flink-admission/flink-admission/internal/freeport"
	"github.com/flink-admission/flink-admission/internal/test/testcerts"
	"github.com/flink-admission/flink-admission/webhook"
)

// TestFileCertificateReplacedWhileRequestsFlow runs `flink-admission serve` in files mode
// (the cert-manager setup) as a second server against the same API server, behind its own
// ValidatingWebhookConfiguration limited to one namespace, and replaces its certificate
// three times the way kubelet updates a mounted Secret (a new timestamped directory, an
// atomic swap of the ..data symlink, the old directory removed), while requests flow through
// the API server and, each on a new TLS connection, straight to the server. No request may
// fail, and every replacement must be picked up.
func TestFileCertificateReplacedWhileRequestsFlow(t *testing.T) {
	bin := binary(t)
	ca := testcerts.NewCA(t)
	vol := newCertVolume(t)
	serial := vol.publish(t, ca)

	port, metricsPort, healthPort := freePort(t), freePort(t), freePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	proc := startServe(t, bin,
		"--cert-mode=files", "--cert-dir="+vol.dir,
		"--webhook-port="+strconv.Itoa(port),
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metricsPort),
		// Plain HTTP on loopback: the test reads /metrics without a token.
		"--metrics-secure=false",
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(healthPort),
		"--enable-controller=false", "--leader-elect=false",
		"--kubeconfig="+dev.Env.Kubeconfig,
	)
	eventually(t, 30*time.Second, "serve is ready", func() error {
		return httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
	})

	// The API server calls this server for FlinkClusters in one labelled namespace only.
	ns := newNamespace(t, map[string]string{"e2e.flink-admission.io/files-mode": "true"})
	installFilesModeWebhook(t, "https://"+addr, ca.CertPEM, "e2e.flink-admission.io/files-mode")
	c := crClient(t)
	probe := readSample(t, "deployment-mode.yaml")
	probe.Namespace = ns
	served := func() float64 { return validateRequests(t, metricsPort) }
	before := served()
	eventually(t, 30*time.Second, "the API server calls the files-mode server", func() error {
		if err := c.Create(context.Background(), probe.DeepCopy(), client.DryRunAll); err != nil {
			return err
		}
		if served() <= before {
			return fmt.Errorf("the files-mode server has not served a review yet")
		}
		return nil
	})

	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	direct := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
		// A new connection, so a new handshake with the certificate of the moment, per request.
		DisableKeepAlives: true,
	}}
	review := admissionReview(t, probe)

	var (
		stop             atomic.Bool
		viaAPI, viaHTTPS atomic.Int64
		failuresMu       sync.Mutex
		failures         []string
		wg               sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		failuresMu.Lock()
		defer failuresMu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	apiBefore := served()
	for range 2 {
		wg.Go(func() {
			for !stop.Load() {
				if err := c.Create(context.Background(), probe.DeepCopy(), client.DryRunAll); err != nil {
					fail("through the API server: %v", err)
				}
				viaAPI.Add(1)
			}
		})
		wg.Go(func() {
			for !stop.Load() {
				if err := postReview(direct, "https://"+addr+webhook.ValidatePath, review); err != nil {
					fail("straight to the server: %v", err)
				}
				viaHTTPS.Add(1)
			}
		})
	}

	// Each replacement happens under load, rather than after some time that may have seen none.
	flowed := func() { requestsFlow(t, 3, &viaAPI, &viaHTTPS) }
	for range 3 {
		flowed()
		old := serial
		serial = vol.publish(t, ca)
		require.NotEqual(t, old, serial)
		start := time.Now()
		eventually(t, 20*time.Second, "the replaced certificate is served", func() error {
			got, err := servedSerial(addr, pool)
			if err != nil {
				return err
			}
			if got.Cmp(serial) != 0 {
				return fmt.Errorf("serving serial %s, want %s", got, serial)
			}
			return nil
		})
		t.Logf("certificate replaced: serving serial %s after %s", serial, time.Since(start).Round(time.Millisecond))
	}
	flowed()
	stop.Store(true)
	wg.Wait()

	t.Logf("requests while the certificate was replaced three times: %d through the API server, %d straight (each on a new connection)", viaAPI.Load(), viaHTTPS.Load())
	assert.Empty(t, failures, "no request failed")
	assert.Positive(t, viaAPI.Load())
	assert.Positive(t, viaHTTPS.Load())
	assert.GreaterOrEqual(t, served()-apiBefore, float64(viaAPI.Load()+viaHTTPS.Load()),
		"the files-mode server served every request, also those through the API server")

	// SIGTERM: a graceful shutdown, exit 0.
	require.NoError(t, proc.Process.Signal(syscall.SIGTERM))
	assert.NoError(t, waitExit(proc, 60*time.Second), "serve exits 0 on SIGTERM")
}

// requestsFlow waits until each counter has grown by n: the loops behind them made that
// many more requests.
func requestsFlow(t *testing.T, n int64, counters ...*atomic.Int64) {
	t.Helper()
	start := make([]int64, len(counters))
	for i, c := range counters {
		start[i] = c.Load()
	}
	eventually(t, 30*time.Second, "requests flow", func() error {
		for i, c := range counters {
			if c.Load() < start[i]+n {
				return fmt.Errorf("loop %d made %d requests, want %d", i, c.Load()-start[i], n)
			}
		}
		return nil
	})
}

// startServe starts `flink-admission serve` and stops it (SIGKILL) when the test ends if it
// still runs. Its log is shown when the test fails.
func startServe(t *testing.T, bin string, args ...string) *exec.Cmd {
	t.Helper()
	cmd, _ := startServeLogged(t, bin, args...)
	return cmd
}

// startServeLogged is startServe that also returns the process's log (stdout and stderr
// together, as it grows), for tests that check what the server said.
func startServeLogged(t *testing.T, bin string, args ...string) (*exec.Cmd, *lockedBuffer) {
	t.Helper()
	log := &lockedBuffer{}
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("flink-admission serve log:\n%s", log.String())
		}
	})
	return cmd, log
}

// waitExit waits for cmd and returns its error (nil for exit 0), or an error after timeout.
func waitExit(cmd *exec.Cmd, timeout time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		return fmt.Errorf("still running after %s", timeout)
	}
}

// installFilesModeWebhook creates a ValidatingWebhookConfiguration with deploy/base's rules,
// pointing at baseURL and trusting caPEM, for namespaces labelled label=true; it is deleted
// when the test ends.
func installFilesModeWebhook(t *testing.T, baseURL string, caPEM []byte, label string) {
	t.Helper()
	_, validating, err := devenv.WebhookConfigurations(baseURL)
	require.NoError(t, err)
	validating.Name = "e2e-files-mode"
	for i := range validating.Webhooks {
		validating.Webhooks[i].ClientConfig.CABundle = caPEM
		// The label added to the manifests' selector, which keeps the staged webhook to the
		// namespaces under staged enforcement: an unlabelled one calls the validating webhook
		// once.
		validating.Webhooks[i].NamespaceSelector.MatchLabels = map[string]string{label: "true"}
	}
	api := clientset(t).AdmissionregistrationV1().ValidatingWebhookConfigurations()
	_, err = api.Create(context.Background(), validating, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = api.Delete(context.Background(), validating.Name, metav1.DeleteOptions{})
	})
}

// admissionReview is a CREATE review of fc, as the API server sends it.
func admissionReview(t *testing.T, fc any) []byte {
	t.Helper()
	obj, err := json.Marshal(fc)
	require.NoError(t, err)
	raw, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "e2e-rotation",
			Kind:      metav1.GroupVersionKind{Group: "flinkoperator.k8s.io", Version: "v1beta1", Kind: "FlinkCluster"},
			Resource:  metav1.GroupVersionResource{Group: "flinkoperator.k8s.io", Version: "v1beta1", Resource: "flinkclusters"},
			Operation: admissionv1.Create,
			Namespace: "default",
			Name:      "statemachine",
			Object:    runtime.RawExtension{Raw: obj},
			DryRun:    ptrTo(true),
		},
	})
	require.NoError(t, err)
	return raw
}

// postReview sends a review and checks that it was answered and allowed.
func postReview(c *http.Client, url string, review []byte) error {
	resp, err := c.Post(url, "application/json", bytes.NewReader(review))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return err
	}
	if out.Response == nil || out.Response.UID != "e2e-rotation" || !out.Response.Allowed {
		return fmt.Errorf("unexpected answer: %+v", out.Response)
	}
	return nil
}

// servedSerial makes a new TLS connection and returns the serial of the certificate served.
func servedSerial(addr string, pool *x509.CertPool) (*big.Int, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: pool})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber, nil
}

// validateRequests reads flink_admission_webhook_requests_total{webhook="validate"} (all
// operations and verdicts) from the server's metrics endpoint.
func validateRequests(t *testing.T, port int) float64 {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	require.NoError(t, err)
	defer resp.Body.Close()
	var total float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "flink_admission_webhook_requests_total{") || !strings.Contains(line, `webhook="validate"`) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		require.NoError(t, err, line)
		total += v
	}
	require.NoError(t, sc.Err())
	return total
}

func httpOK(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

// freePort returns a free port (see internal/freeport for why not port 0).
func freePort(t *testing.T) int {
	t.Helper()
	p, err := freeport.Get()
	require.NoError(t, err)
	return p
}

// certVolume lays out a directory as kubelet does for a Secret volume: tls.crt and tls.key
// are symlinks into ..data, itself a symlink to a timestamped directory that each update
// replaces atomically.
type certVolume struct {
	dir     string
	n       int
	current string
}

func newCertVolume(t *testing.T) *certVolume {
	return &certVolume{dir: t.TempDir()}
}

// publish issues a new pair and swaps it in; it returns the new serial.
func (v *certVolume) publish(t *testing.T, ca *testcerts.CA) *big.Int {
	t.Helper()
	certPEM, keyPEM, serial := ca.Issue(t)
	v.n++
	next := fmt.Sprintf("..2026_01_01_00_00_%02d.%d", v.n, v.n)
	require.NoError(t, os.Mkdir(filepath.Join(v.dir, next), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(v.dir, next, "tls.crt"), certPEM, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(v.dir, next, "tls.key"), keyPEM, 0o600))
	tmp := filepath.Join(v.dir, "..data_tmp")
	require.NoError(t, os.Symlink(next, tmp))
	require.NoError(t, os.Rename(tmp, filepath.Join(v.dir, "..data")))
	if v.current == "" {
		for _, f := range []string{"tls.crt", "tls.key"} {
			require.NoError(t, os.Symlink(filepath.Join("..data", f), filepath.Join(v.dir, f)))
		}
	} else {
		require.NoError(t, os.RemoveAll(filepath.Join(v.dir, v.current)))
	}
	v.current = next
	return serial
}

// lockedBuffer is a bytes.Buffer safe for a process's stdout and stderr at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
