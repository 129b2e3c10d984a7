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
	"strconv"
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
	"github.com/flink-admission/flink-admission/cmd/flink-admission/devenv"
	"github.com/flink-admission/flink-admission/internal/test/testcerts"
	"github.com/flink-admission/flink-admission/internal/testenv"
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
// answered; a client without a certificate, or with one from another CA, is refused.
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

	startServe(t, bin,
		"--cert-mode=files", "--cert-dir="+vol.dir, "--client-ca-file="+clientCAFile,
		"--webhook-port="+strconv.Itoa(port),
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metricsPort),
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
	post := func(certs ...tls.Certificate) error {
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs},
		}}
		return postReview(c, "https://"+addr+webhook.ValidatePath, review)
	}
	pair := func(ca *testcerts.CA) tls.Certificate {
		certPEM, keyPEM := ca.IssueClient(t, "someone")
		p, err := tls.X509KeyPair(certPEM, keyPEM)
		require.NoError(t, err)
		return p
	}
	err = post()
	assert.ErrorContains(t, err, "certificate required", "a client without a certificate is refused")
	err = post(pair(other))
	assert.ErrorContains(t, err, "unknown certificate authority", "a client with a certificate from another CA is refused")
	assert.NoError(t, post(pair(clients)), "a client with a certificate from the configured CA is served")
}
