package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/devenv"
	"github.com/flink-admission/flink-admission/internal/test/testcerts"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/webhook"
)

// admissionConfiguration is kube-apiserver's --admission-control-config-file: both webhook
// admission plugins read the client credentials for webhooks from one kubeconfig.
const admissionConfiguration = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]s
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]s
`

// TestClientCertificateRequired runs `flink-admission serve --client-ca-file` behind a
// kube-apiserver of its own, started with an admission configuration that gives the webhook
// calls a client certificate (as docs/operations.md describes). The API server's reviews are
// answered; a client without a certificate, or with one from another CA, is refused: the
// server logs the refused handshake for that client's connection, with the reason, and its
// webhook never sees the request. The client's error text is not checked (it is racy, see
// the subtests).
func TestClientCertificateRequired(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	serving, clients, other := testcerts.NewCA(t), testcerts.NewCA(t), testcerts.NewCA(t)
	vol := newCertVolume(t)
	vol.publish(t, serving)
	clientCAFile := filepath.Join(dir, "client-ca.crt")
	require.NoError(t, os.WriteFile(clientCAFile, clients.CertPEM, 0o600))

	port, metricsPort, healthPort := freePort(t), freePort(t), freePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))

	// The kubeconfig of the admission configuration names the user by the webhook's host:port
	// (for a Service: <svc>.<ns>.svc:443).
	apiCert, apiKey := clients.IssueClient(t, "kube-apiserver")
	webhookKubeconfig := filepath.Join(dir, "webhook-kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(clientcmdapi.Config{AuthInfos: map[string]*clientcmdapi.AuthInfo{
		addr: {ClientCertificateData: apiCert, ClientKeyData: apiKey},
	}}, webhookKubeconfig))
	admissionFile := filepath.Join(dir, "admission.yaml")
	require.NoError(t, os.WriteFile(admissionFile, fmt.Appendf(nil, admissionConfiguration, webhookKubeconfig), 0o600))

	env, err := testenv.Start(testenv.Options{APIServerFlags: map[string]string{"admission-control-config-file": admissionFile}})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })

	_, log := startServeLogged(t, bin,
		"--cert-mode=files", "--cert-dir="+vol.dir, "--client-ca-file="+clientCAFile,
		"--webhook-port="+strconv.Itoa(port),
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metricsPort),
		// Plain HTTP on loopback: the test reads /metrics without a token.
		"--metrics-secure=false",
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(healthPort),
		"--enable-controller=false", "--leader-elect=false",
		"--kubeconfig="+env.Kubeconfig,
	)
	eventually(t, 30*time.Second, "serve is ready (readiness does not need a client certificate)", func() error {
		return httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
	})

	// Through the API server: both webhooks of deploy/base, pointing at this server.
	mutating, validating, err := devenv.WebhookConfigurations("https://" + addr)
	require.NoError(t, err)
	for i := range mutating.Webhooks {
		mutating.Webhooks[i].ClientConfig.CABundle = serving.CertPEM
	}
	for i := range validating.Webhooks {
		validating.Webhooks[i].ClientConfig.CABundle = serving.CertPEM
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{})
	require.NoError(t, err)

	c, err := client.New(env.Config, client.Options{Scheme: dev.Server.Manager.GetScheme()})
	require.NoError(t, err)
	fc := readSample(t, "deployment-mode.yaml")
	fc.Namespace = "default"
	before := validateRequests(t, metricsPort)
	eventually(t, 30*time.Second, "the API server's review is answered", func() error {
		if err := c.Create(ctx, fc.DeepCopy(), client.DryRunAll); err != nil {
			return err
		}
		if validateRequests(t, metricsPort) <= before {
			return fmt.Errorf("the server has not served the review")
		}
		return nil
	})
	bad := fc.DeepCopy()
	if bad.Spec.JobManager == nil {
		bad.Spec.JobManager = &v1beta1.JobManagerSpec{}
	}
	bad.Spec.JobManager.Ports.UI = ptrTo(int32(80))
	err = c.Create(ctx, bad, client.DryRunAll)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "must be greater than 1024", "the webhook's own denial comes back through the API server")

	// Straight to the server, as anyone in the cluster could.
	review := admissionReview(t, fc)
	pool := x509.NewCertPool()
	pool.AddCert(serving.Cert)
	pair := func(ca *testcerts.CA) tls.Certificate {
		certPEM, keyPEM := ca.IssueClient(t, "someone")
		p, err := tls.X509KeyPair(certPEM, keyPEM)
		require.NoError(t, err)
		return p
	}
	for _, tc := range []struct {
		name  string
		certs []tls.Certificate
		// reason is how Go's TLS server words the refusal in the serve log.
		reason string
	}{
		{"refuse: no client certificate", nil, "client didn't provide a certificate"},
		{"refuse: a client certificate from another CA", []tls.Certificate{pair(other)}, "certificate signed by unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			served := validateRequests(t, metricsPort)
			conns, err := postDirect(addr, pool, tc.certs, review)
			// Only that the client failed: what it read depends on a race. With TLS 1.3 the
			// client's side of the handshake is over before the server checks the client's
			// certificate, so the client either reads the server's alert or fails its first
			// write ("broken pipe", "connection reset").
			require.Error(t, err, "the client is refused")
			t.Logf("the client saw: %v", err)
			require.NotEmpty(t, conns)
			eventually(t, 30*time.Second, "the serve log shows the handshake refused", func() error {
				return handshakeRefused(log.String(), conns, tc.reason)
			})
			// The handshake is over (it was logged), so nothing of this connection can reach
			// the handler any more: the count is final.
			assert.Equal(t, served, validateRequests(t, metricsPort), "the refused request never reached the webhook")
		})
	}

	served := validateRequests(t, metricsPort)
	_, err = postDirect(addr, pool, []tls.Certificate{pair(clients)}, review)
	require.NoError(t, err, "a client with a certificate from the configured CA is served")
	eventually(t, 30*time.Second, "the served review is counted", func() error {
		if n := validateRequests(t, metricsPort); n != served+1 {
			return fmt.Errorf("%.0f reviews counted since, want 1", n-served)
		}
		return nil
	})
}

// postDirect posts review to the webhook at addr over new connections, presenting certs,
// and returns the local addresses of the connections it made (the server logs a refused
// handshake by its peer's address) with postReview's error.
func postDirect(addr string, roots *x509.CertPool, certs []tls.Certificate, review []byte) ([]string, error) {
	var mu sync.Mutex
	var local []string
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs},
		DialContext: func(ctx context.Context, network, address string) (net.Conn, error) {
			conn, err := dialer.DialContext(ctx, network, address)
			if err == nil {
				mu.Lock()
				local = append(local, conn.LocalAddr().String())
				mu.Unlock()
			}
			return conn, err
		},
		DisableKeepAlives: true,
	}}
	err := postReview(c, "https://"+addr+webhook.ValidatePath, review)
	mu.Lock()
	defer mu.Unlock()
	return slices.Clone(local), err
}

// handshakeRefused checks that log has a TLS handshake error for a connection from one of
// clients, worded with reason. The line is Go's net/http one ("http: TLS handshake error from
// <client>: <reason>"), whatever logger carries it.
func handshakeRefused(log string, clients []string, reason string) error {
	for line := range strings.Lines(log) {
		if !strings.Contains(line, "TLS handshake error") || !strings.Contains(line, reason) {
			continue
		}
		for _, c := range clients {
			if strings.Contains(line, "from "+c+":") {
				return nil
			}
		}
	}
	return fmt.Errorf("no TLS handshake error %q logged for a connection from %v", reason, clients)
}
