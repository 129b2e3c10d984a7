package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/flink-admission/flink-admission/internal/testcerts"
	"github.com/flink-admission/flink-admission/webhook"
)

// TestRunFilesMode runs the serve code path in files mode, webhook only (no API server call
// is needed): the health endpoints, TLS 1.2 as the minimum, both webhook paths, and a
// graceful stop when the context ends.
func TestRunFilesMode(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t)
	ca.WriteServing(t, dir)
	webhookPort, err := FreePort()
	require.NoError(t, err)
	health, err := ResolvePort("127.0.0.1:0")
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{
			WebhookHost: "127.0.0.1", WebhookPort: webhookPort,
			CertMode: CertModeFiles, CertDir: dir, CertName: "tls.crt", KeyName: "tls.key",
			MetricsBindAddress: "0", HealthProbeBindAddress: health, LogLevel: "info",
			EnableController: false, LeaderElect: true, // no election without the controller
			// Nothing listens there: the webhook-only server must not need the API server.
			Config: &rest.Config{Host: "https://127.0.0.1:1"},
			Log:    logr.Discard(),
		})
	}()

	healthURL := HTTPURL(health)
	require.Eventually(t, func() bool { return httpStatus(healthURL+"/readyz") == http.StatusOK },
		10*time.Second, 50*time.Millisecond, "/readyz turns ready once the certificate is loaded and the listener is up")
	assert.Equal(t, http.StatusOK, httpStatus(healthURL+"/healthz"))

	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookPort))

	_, err = tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS11})
	assert.Error(t, err, "TLS 1.1 is refused")
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}})
	require.NoError(t, err, "the certificate from the files verifies against the CA")
	assert.Equal(t, "http/1.1", conn.ConnectionState().NegotiatedProtocol, "HTTP/2 is not offered")
	require.NoError(t, conn.Close())

	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, NextProtos: []string{"h2", "http/1.1"}},
		ForceAttemptHTTP2: true,
	}, Timeout: 10 * time.Second}
	for _, path := range []string{webhook.MutatePath, webhook.ValidatePath} {
		review := reviewOf(t, []byte(`{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","metadata":{"name":"x","namespace":"default"},"spec":{}}`))
		resp, err := client.Post("https://"+addr+path, "application/json", bytes.NewReader(review))
		require.NoError(t, err, path)
		assert.Equal(t, "HTTP/1.1", resp.Proto, "the server does not offer HTTP/2")
		var out admissionv1.AdmissionReview
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out), path)
		require.NoError(t, resp.Body.Close())
		require.NotNil(t, out.Response, path)
		assert.Equal(t, "review-1", string(out.Response.UID), "%s answers the review", path)
		if path == webhook.ValidatePath {
			assert.False(t, out.Response.Allowed, "an empty spec is denied")
		}
	}

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err, "a cancelled context is a clean stop")
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after the context was cancelled")
	}
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "the webhook server no longer listens")
}

func httpStatus(url string) int {
	resp, err := http.Get(url) //nolint:noctx // a test poll
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func reviewOf(t *testing.T, object []byte) []byte {
	t.Helper()
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "review-1",
			Kind:      metav1.GroupVersionKind{Group: "flinkoperator.k8s.io", Version: "v1beta1", Kind: "FlinkCluster"},
			Resource:  metav1.GroupVersionResource{Group: "flinkoperator.k8s.io", Version: "v1beta1", Resource: "flinkclusters"},
			Name:      "x",
			Namespace: "default",
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: object},
		},
	}
	raw, err := json.Marshal(review)
	require.NoError(t, err)
	return raw
}
