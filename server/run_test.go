package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
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

	"github.com/flink-admission/flink-admission/internal/freeport"
	"github.com/flink-admission/flink-admission/internal/test/testcerts"
	"github.com/flink-admission/flink-admission/webhook"
)

// TestRunFilesMode runs the serve code path in files mode, webhook only (no API server call
// is needed): the health endpoints, TLS 1.2 as the minimum, both webhook paths, and a
// graceful stop when the context ends.
func TestRunFilesMode(t *testing.T) {
	ts := startFilesServer(t, nil)
	assert.Equal(t, http.StatusOK, httpStatus(ts.healthURL+"/healthz"))
	pool, addr := ts.pool, ts.addr

	_, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, MaxVersion: tls.VersionTLS11})
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

	ts.cancel()
	select {
	case <-ts.stopped:
		assert.NoError(t, ts.runErr, "a cancelled context is a clean stop")
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after the context was cancelled")
	}
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Error(t, err, "the webhook server no longer listens")
}

// testServer is Run in files mode, webhook only, on 127.0.0.1.
type testServer struct {
	ca        *testcerts.CA
	pool      *x509.CertPool
	addr      string // host:port of the webhook server
	healthURL string
	cancel    context.CancelFunc
	stopped   chan struct{} // closed when Run returned, with runErr
	runErr    error
}

// startFilesServer runs Run in files mode (no API server call is needed), with modify applied
// to the options, and waits until /readyz passes. The server stops when the test ends.
func startFilesServer(t *testing.T, modify func(*Options)) *testServer {
	t.Helper()
	dir := t.TempDir()
	ca := testcerts.NewCA(t)
	ca.WriteServing(t, dir)
	webhookPort, err := freeport.Get()
	require.NoError(t, err)
	healthPort, err := freeport.Get()
	require.NoError(t, err)
	health := net.JoinHostPort("127.0.0.1", strconv.Itoa(healthPort))
	o := Options{
		WebhookHost: "127.0.0.1", WebhookPort: webhookPort,
		CertMode: CertModeFiles, CertDir: dir, CertName: "tls.crt", KeyName: "tls.key",
		MetricsBindAddress: "0", HealthProbeBindAddress: health, LogLevel: "info",
		EnableController: false, LeaderElect: true, // no election without the controller
		// Nothing listens there: the webhook-only server must not need the API server.
		Config: &rest.Config{Host: "https://127.0.0.1:1"},
		Log:    logr.Discard(),
	}
	if modify != nil {
		modify(&o)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{ca: ca, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(webhookPort)), cancel: cancel, stopped: make(chan struct{})}
	go func() {
		defer close(ts.stopped)
		ts.runErr = Run(ctx, o)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-ts.stopped:
		case <-time.After(time.Minute):
			t.Error("Run did not return within a minute after the context was cancelled")
		}
	})
	ts.healthURL = "http://" + health
	require.Eventually(t, func() bool { return httpStatus(ts.healthURL+"/readyz") == http.StatusOK },
		30*time.Second, 50*time.Millisecond, "/readyz turns ready once the certificate is loaded and the listener is up")
	ts.pool = x509.NewCertPool()
	ts.pool.AddCert(ca.Cert)
	return ts
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

// TestClientCAFileMustHoldACertificate: a --client-ca-file that cannot be read, or that holds
// no certificate, stops serve at start rather than refusing every client later.
func TestClientCAFileMustHoldACertificate(t *testing.T) {
	dir := t.TempDir()
	testcerts.NewCA(t).WriteServing(t, dir)
	empty := filepath.Join(dir, "empty.pem")
	require.NoError(t, os.WriteFile(empty, []byte("not a certificate\n"), 0o600))
	for file, want := range map[string]string{
		empty:                             "holds no PEM certificate",
		filepath.Join(dir, "missing.pem"): "reading --client-ca-file",
	} {
		_, err := New(Options{
			WebhookPort: 9443, CertMode: CertModeFiles, CertDir: dir, CertName: "tls.crt", KeyName: "tls.key",
			ClientCAFile: file, MetricsBindAddress: "0", HealthProbeBindAddress: "0", LogLevel: "info",
			Config: &rest.Config{Host: "https://127.0.0.1:1"},
		})
		assert.ErrorContains(t, err, want, file)
	}
}
