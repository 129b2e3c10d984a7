package bench

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/cert-manager/cert-manager/pkg/util/pki"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/flink-admission/flink-admission/internal/freeport"
)

// ServingCert is a throwaway CA and a serving certificate for 127.0.0.1 signed by it, written
// as tls.crt and tls.key for `serve --cert-mode=files`.
type ServingCert struct {
	// Dir holds tls.crt and tls.key.
	Dir string
	// CAPEM is the CA certificate the clients (loadgen, the API server) trust.
	CAPEM []byte
}

// WriteServingCert makes a CA and a certificate for 127.0.0.1 valid for a day, and writes the
// pair into dir.
func WriteServingCert(dir string) (*ServingCert, error) {
	now := time.Now()
	caKey, err := pki.GenerateECPrivateKey(pki.ECCurve256)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		Subject: pkix.Name{CommonName: "flink-admission bench CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:  x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
	}
	caPEM, ca, err := pki.SignCertificate(caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, err
	}
	key, err := pki.GenerateECPrivateKey(pki.ECCurve256)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
	}
	certPEM, _, err := pki.SignCertificate(tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, err
	}
	keyPEM, err := pki.EncodePKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600); err != nil {
		return nil, err
	}
	return &ServingCert{Dir: dir, CAPEM: caPEM}, nil
}

// ClientTLS trusts the CA only.
func (c *ServingCert) ClientTLS() (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.CAPEM) {
		return nil, errors.New("the bench CA does not parse")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// ServeProcess is a running `flink-admission serve` child process.
type ServeProcess struct {
	cmd *exec.Cmd
	// WebhookURL is https://127.0.0.1:<port>; HealthURL, MetricsURL and PprofURL (empty
	// unless ServeOptions.Pprof) are http://….
	WebhookURL, HealthURL, MetricsURL, PprofURL string
	done                                        chan struct{}
	err                                         error
}

// ServeOptions configure StartServe.
type ServeOptions struct {
	// Binary is the flink-admission executable; Kubeconfig reaches the API server.
	Binary, Kubeconfig string
	// Cert is the serving certificate (files mode).
	Cert *ServingCert
	// Controller runs the FlinkCluster controller.
	Controller bool
	// LeaderElectNamespace, when not empty, turns leader election on with its Lease in that
	// namespace: replicas of one install must all name the same one. Empty runs the
	// controller without leader election (one replica).
	LeaderElectNamespace string
	// ShardFleet, with LeaderElectNamespace, shares the clusters among the replicas
	// (--shard-fleet, their Leases in that namespace) instead of electing one leader: what
	// the manifests run with more than one replica.
	ShardFleet bool
	// Pprof serves Go's profiling endpoints (ServeProcess.Profile).
	Pprof bool
	// Log receives the server's output (a file).
	Log *os.File
	// Env is added to the server's environment (e.g. HTTP_PROXY).
	Env []string
	// Args are added to the server's flags.
	Args []string
}

// StartServe starts `flink-admission serve` in files mode on free ports of 127.0.0.1 and
// waits until /readyz answers 200 (certificate loaded, listener up), within timeout.
func StartServe(ctx context.Context, o ServeOptions, timeout time.Duration) (*ServeProcess, error) {
	ports, err := freeport.GetN(4)
	if err != nil {
		return nil, err
	}
	webhookPort, health, metrics := ports[0], "127.0.0.1:"+strconv.Itoa(ports[1]), "127.0.0.1:"+strconv.Itoa(ports[2])
	pprof := "0"
	if o.Pprof {
		pprof = "127.0.0.1:" + strconv.Itoa(ports[3])
	}
	leaderElect := []string{"--leader-elect=false"}
	switch {
	case o.LeaderElectNamespace != "" && o.ShardFleet:
		leaderElect = []string{"--leader-elect=false", "--shard-fleet=true", "--namespace=" + o.LeaderElectNamespace}
	case o.LeaderElectNamespace != "":
		leaderElect = []string{"--leader-elect=true", "--namespace=" + o.LeaderElectNamespace}
	}
	cmd := exec.Command(o.Binary, append([]string{"serve",
		"--cert-mode=files", "--cert-dir=" + o.Cert.Dir,
		"--webhook-port=" + strconv.Itoa(webhookPort),
		"--health-probe-bind-address=" + health,
		"--metrics-bind-address=" + metrics,
		// Plain HTTP on loopback: the bench reads /metrics without a token.
		"--metrics-secure=false",
		"--pprof-bind-address=" + pprof,
		"--enable-controller=" + strconv.FormatBool(o.Controller),
		"--log-level=error",
	}, append(leaderElect, o.Args...)...)...)
	// $KUBECONFIG rather than --kubeconfig: controller-runtime's lookup of $KUBECONFIG
	// turns off client-go's default rate limit of 5 requests/s (the API server's priority
	// and fairness limits instead), which --kubeconfig keeps; with it the controller would
	// reconcile hundreds of clusters at the client's pace, not the server's.
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+o.Kubeconfig), o.Env...)
	cmd.Stdout, cmd.Stderr = o.Log, o.Log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s serve: %w", o.Binary, err)
	}
	p := &ServeProcess{
		cmd:        cmd,
		WebhookURL: "https://127.0.0.1:" + strconv.Itoa(webhookPort),
		HealthURL:  "http://" + health,
		MetricsURL: "http://" + metrics,
		done:       make(chan struct{}),
	}
	if o.Pprof {
		p.PprofURL = "http://" + pprof
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := p.waitReady(ctx, timeout); err != nil {
		return nil, errors.Join(err, p.Stop())
	}
	return p, nil
}

// Pid is the server's process id.
func (p *ServeProcess) Pid() int { return p.cmd.Process.Pid }

func (p *ServeProcess) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.HealthURL+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("/readyz: %s", resp.Status)
		}
		last = err
		select {
		case <-p.done:
			return fmt.Errorf("serve exited before it was ready: %v", p.err)
		case <-ctx.Done():
			return fmt.Errorf("serve not ready within %s: %w", timeout, last)
		case <-tick.C:
		}
	}
}

// Exited reports whether the server's process has ended.
func (p *ServeProcess) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill ends the server at once (SIGKILL), as a node or a process lost: no shutdown, no
// Lease released. It returns once the process is gone.
func (p *ServeProcess) Kill() {
	if !p.Exited() {
		_ = p.cmd.Process.Kill()
	}
	<-p.done
}

// Stop sends SIGTERM (a graceful shutdown), and kills the process if it has not exited
// within 30 s. The error says when the server did not exit cleanly.
func (p *ServeProcess) Stop() error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("serve exited with %w after SIGTERM", p.err)
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return errors.New("serve did not stop within 30 s of SIGTERM and was killed")
	}
}

// Metrics returns the server's /metrics page.
func (p *ServeProcess) Metrics(ctx context.Context) ([]byte, error) {
	return httpGet(ctx, p.MetricsURL+"/metrics")
}

// Profile returns one of the server's Go profiles: name is the path under /debug/pprof/
// ("profile?seconds=10", "heap"). The server must run with ServeOptions.Pprof.
func (p *ServeProcess) Profile(ctx context.Context, name string) ([]byte, error) {
	if p.PprofURL == "" {
		return nil, errors.New("serve runs without its profiling endpoints")
	}
	return httpGet(ctx, p.PprofURL+"/debug/pprof/"+name)
}

func httpGet(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// Counter sums the values of the counter name whose labels include every pair of labels,
// from the server's /metrics.
func (p *ServeProcess) Counter(ctx context.Context, name string, labels map[string]string) (float64, error) {
	return p.metricSum(ctx, name, labels, func(m *dto.Metric) float64 { return m.GetCounter().GetValue() })
}

// Gauge sums the values of the gauge name whose labels include every pair of labels.
func (p *ServeProcess) Gauge(ctx context.Context, name string, labels map[string]string) (float64, error) {
	return p.metricSum(ctx, name, labels, func(m *dto.Metric) float64 { return m.GetGauge().GetValue() })
}

func (p *ServeProcess) metricSum(ctx context.Context, name string, labels map[string]string, value func(*dto.Metric) float64) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.MetricsURL+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("reading %s/metrics: %w", p.MetricsURL, err)
	}
	var sum float64
	for _, m := range families[name].GetMetric() {
		if hasLabels(m, labels) {
			sum += value(m)
		}
	}
	return sum, nil
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}
