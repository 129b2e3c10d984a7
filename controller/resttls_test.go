package controller

import (
	"crypto/tls"
	"crypto/x509"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
	"github.com/flink-admission/flink-admission/internal/test/testcerts"
)

// restTLSCase is a JobManager serving its REST API over TLS, and the cluster and Secret the
// controller reads to reach it.
type restTLSCase struct {
	name string
	// serverName is the DNS name the JobManager's certificate carries.
	serverName string
	// clientAuth makes the JobManager require a client certificate signed by the CA.
	clientAuth bool
	// props are the cluster's Flink properties beyond security.ssl.rest.enabled: true.
	props map[string]string
	// secret is the Secret's data by key: "ca", "other-ca", "client" stand for PEM made here.
	secret    []string
	noSecret  bool
	noAnnot   bool
	wantError string // "" when ListJobs must succeed
}

func TestFlinkRESTOverTLS(t *testing.T) {
	ca, otherCA := testcerts.NewCA(t), testcerts.NewCA(t)
	svcName := "wc-jobmanager.default.svc"
	clientCrt, clientKey := ca.IssueClient(t, "flink-admission")
	mutual := map[string]string{flinkRESTSSLMutualAuth: "true"}

	tests := []restTLSCase{
		{name: "the JobManager's certificate verifies against the Secret's CA", serverName: svcName, secret: []string{"ca"}},
		{name: "mutual TLS: the controller presents the Secret's client certificate", serverName: svcName, clientAuth: true, props: mutual, secret: []string{"ca", "client"}},
		{name: "verify-hostname false: a certificate for another name is accepted, the chain is still verified", serverName: "elsewhere.example",
			props: map[string]string{flinkSSLVerifyHostname: "false"}, secret: []string{"ca"}},
		{name: "refused: a certificate for another name", serverName: "elsewhere.example", secret: []string{"ca"},
			wantError: "certificate is valid for elsewhere.example, not " + svcName},
		{name: "refused: a certificate from another CA", serverName: svcName, secret: []string{"other-ca"}, wantError: "certificate signed by unknown authority"},
		{name: "refused: another CA with verify-hostname false", serverName: svcName, props: map[string]string{flinkSSLVerifyHostname: "false"},
			secret: []string{"other-ca"}, wantError: "certificate signed by unknown authority"},
		{name: "refused: SSL without the annotation says which to set", serverName: svcName, noAnnot: true,
			wantError: "annotate the FlinkCluster with " + RESTTLSSecretAnnotation},
		{name: "refused: the named Secret is missing", serverName: svcName, noSecret: true, wantError: `reading Secret default/wc-rest-tls`},
		{name: "refused: a Secret without ca.crt", serverName: svcName, secret: nil, wantError: "has no PEM certificate in ca.crt"},
		{name: "refused: mutual TLS without a client certificate in the Secret", serverName: svcName, clientAuth: true, props: mutual,
			secret: []string{"ca"}, wantError: "needs tls.crt and tls.key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			crt, key := ca.IssueServing(t, tc.serverName)
			pair, err := tls.X509KeyPair(crt, key)
			require.NoError(t, err)
			srvTLS := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
			if tc.clientAuth {
				pool := x509.NewCertPool()
				pool.AddCert(ca.Cert)
				srvTLS.ClientAuth, srvTLS.ClientCAs = tls.RequireAndVerifyClientCert, pool
			}
			flink := fakeflink.NewCluster(fakeflink.Options{TLS: srvTLS})
			t.Cleanup(flink.Close)
			flink.Start(fakeflink.Config{Session: true})

			fc := builder.MakeAppCluster("wc").FlinkProperty(flinkRESTSSLEnabled, "true").Obj()
			for k, v := range tc.props {
				fc.Spec.FlinkProperties[k] = v
			}
			if !tc.noAnnot {
				metav1.SetMetaDataAnnotation(&fc.ObjectMeta, RESTTLSSecretAnnotation, "wc-rest-tls")
			}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fc.Namespace, Name: "wc-rest-tls"}, Data: map[string][]byte{}}
			for _, k := range tc.secret {
				switch k {
				case "ca":
					secret.Data[restTLSCAKey] = ca.CertPEM
				case "other-ca":
					secret.Data[restTLSCAKey] = otherCA.CertPEM
				case "client":
					secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey] = clientCrt, clientKey
				}
			}
			r := tlsReconciler(t, fc, secret, !tc.noSecret, flink.URL())

			c := r.newCycle(fc)
			cl, err := c.flinkClient(t.Context())
			if err == nil {
				_, err = cl.ListJobs(t.Context())
			}
			if tc.wantError == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantError)
		})
	}
}

// tlsReconciler is a reconciler whose TLS client goes to the fake Flink's address, with the
// TLS configuration the controller derived (so the name verified is still the Service's).
func tlsReconciler(t *testing.T, fc *v1beta1.FlinkCluster, secret *corev1.Secret, withSecret bool, url string) *Reconciler {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(fc).WithStatusSubresource(fc)
	if withSecret {
		b = b.WithObjects(secret)
	}
	cl := b.Build()
	opts, err := Options{
		FlinkClientFor: func(*v1beta1.FlinkCluster) (flinkclient.Client, error) {
			t.Error("the plain HTTP client was asked for a cluster with REST SSL")
			return flinkclient.New(url, nil)
		},
		FlinkTLSClientFor: func(_ *v1beta1.FlinkCluster, cfg *tls.Config) (flinkclient.Client, error) {
			return flinkclient.New(url, TLSHTTPClient(cfg))
		},
	}.complete()
	require.NoError(t, err)
	return &Reconciler{Client: cl, Reader: cl, Recorder: events.NewFakeRecorder(100), Options: opts}
}

func TestRESTTLSOffIsPlainHTTP(t *testing.T) {
	fc := builder.MakeAppCluster("wc").FlinkProperty(flinkRESTSSLEnabled, "false").Obj()
	r := &Reconciler{}
	cfg, err := r.restTLS(t.Context(), fc)
	require.NoError(t, err)
	assert.Nil(t, cfg, "security.ssl.rest.enabled false: plain HTTP, no Secret read")
}

func TestDefaultFlinkTLSClientUsesTheServiceName(t *testing.T) {
	fc := builder.MakeAppCluster("wc").Namespace("flink").Obj()
	cl, err := DefaultFlinkTLSClient(fc, &tls.Config{MinVersion: tls.VersionTLS12})
	require.NoError(t, err)
	assert.IsType(t, &flinkclient.HTTPClient{}, cl)
	assert.Equal(t, "wc-jobmanager.flink.svc", restServerName(fc))
}

// TestRESTTLSErrorIsAWait: a TLS setting the controller cannot use is said in the Waiting
// condition's message (WaitingForFlinkAPI), not only in the log.
func TestRESTTLSErrorIsAWait(t *testing.T) {
	fc := builder.MakeAppCluster("wc").FlinkProperty(flinkRESTSSLEnabled, "true").Obj()
	r := tlsReconciler(t, fc, nil, false, "https://127.0.0.1:1")
	c := r.newCycle(fc)
	c.observeFlink(t.Context())
	assert.Nil(t, c.obs.flink)
	assert.Contains(t, c.obs.untrusted, "the Flink REST API cannot be reached: security.ssl.rest.enabled is true: annotate the FlinkCluster")
}

// TestRESTTLSTransportIsReusedUntilTheSecretChanges: reconciles of a cluster with REST TLS
// share one transport, and so one connection to the JobManager (one TLS handshake); a
// changed Secret gets a new transport, and the replaced one's idle connection is closed.
func TestRESTTLSTransportIsReusedUntilTheSecretChanges(t *testing.T) {
	ca, otherCA := testcerts.NewCA(t), testcerts.NewCA(t)
	crt, key := ca.IssueServing(t, "reuse-jobmanager.default.svc")
	pair, err := tls.X509KeyPair(crt, key)
	require.NoError(t, err)
	var handshakes atomic.Int32
	srvTLS := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { handshakes.Add(1); return nil, nil }}
	flink := fakeflink.NewCluster(fakeflink.Options{TLS: srvTLS})
	t.Cleanup(flink.Close)
	flink.Start(fakeflink.Config{Session: true})

	fc := builder.MakeAppCluster("reuse").FlinkProperty(flinkRESTSSLEnabled, "true").Obj()
	metav1.SetMetaDataAnnotation(&fc.ObjectMeta, RESTTLSSecretAnnotation, "reuse-rest-tls")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fc.Namespace, Name: "reuse-rest-tls"},
		Data: map[string][]byte{restTLSCAKey: ca.CertPEM}}
	r := tlsReconciler(t, fc, secret, true, flink.URL())
	reconcile := func() flinkclient.Client {
		t.Helper()
		c := r.newCycle(fc)
		cl, err := c.flinkClient(t.Context())
		require.NoError(t, err)
		_, err = cl.ListJobs(t.Context())
		require.NoError(t, err)
		return cl
	}

	first := reconcile()
	for range 4 {
		reconcile()
	}
	assert.Equal(t, int32(1), handshakes.Load(), "five reconciles, one transport: its connection is kept alive")

	// A renewal that changes nothing (a new resourceVersion, the same keys) keeps it.
	require.NoError(t, r.Client.Get(t.Context(), client.ObjectKeyFromObject(secret), secret))
	secret.Labels = map[string]string{"renewed": "true"}
	require.NoError(t, r.Client.Update(t.Context(), secret))
	reconcile()
	assert.Equal(t, int32(1), handshakes.Load(), "the same content: the same transport")

	// A CA bundle that gains a CA is a new configuration, with a new transport.
	secret.Data[restTLSCAKey] = append(append([]byte{}, otherCA.CertPEM...), ca.CertPEM...)
	require.NoError(t, r.Client.Update(t.Context(), secret))
	reconcile()
	reconcile()
	assert.Equal(t, int32(2), handshakes.Load(), "the new configuration's transport, reused")

	// The replaced transport kept no idle connection: a request through it dials again.
	_, err = first.ListJobs(t.Context())
	require.NoError(t, err)
	assert.Equal(t, int32(3), handshakes.Load(), "the replaced transport's idle connection was closed")
}
