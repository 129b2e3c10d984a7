package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/certs"
	"github.com/flink-admission/flink-admission/internal/devenv"
	"github.com/flink-admission/flink-admission/server"
	"github.com/flink-admission/flink-admission/webhook"
)

// offsetClock is the real clock moved ahead by offset: renewals and rotations that take
// days happen when the test moves it, while the certificates stay valid for the API server,
// which checks them against the real time. A serving certificate's NotBefore is backdated
// by 5 minutes, so the offset must stay below that.
type offsetClock struct {
	clock.RealClock
	offset atomic.Int64
}

func (c *offsetClock) Now() time.Time                  { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *offsetClock) set(d time.Duration)             { c.offset.Store(int64(d)) }

// TestSelfSignedRotationWhileRequestsFlow runs the server in self-signed mode (in this
// process, for its clock) behind a ValidatingWebhookConfiguration of its own, and while
// reviews flow through the API server and, each on a new TLS connection, straight to the
// server, its serving certificate is renewed and then its CA rotated. No request and no
// handshake may fail.
//
// Lifetimes: the CA lives 36 minutes (plus its one-hour backdate), so it is due 4 minutes
// after its creation; the serving certificate lives 3 minutes (plus 5 minutes backdate), so
// it is renewed every 20 seconds. Moving the clock 4m10s ahead rotates the CA.
func TestSelfSignedRotationWhileRequestsFlow(t *testing.T) {
	const label = "e2e.flink-admission.io/self-signed-rotation"
	ns := newNamespace(t, map[string]string{label: "true"})
	port := freePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	_, validating, err := devenv.WebhookConfigurations("https://" + addr)
	require.NoError(t, err)
	validating.Name = "e2e-self-signed-rotation"
	for i := range validating.Webhooks {
		validating.Webhooks[i].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{label: "true"}}
	}
	cs := clientset(t)
	ctx := context.Background()
	configs := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	_, err = configs.Create(ctx, validating, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = configs.Delete(context.Background(), validating.Name, metav1.DeleteOptions{}) })

	clk := &offsetClock{}
	var logs lockedBuffer
	srv, err := server.New(server.Options{
		WebhookHost: "127.0.0.1", WebhookPort: port,
		CertMode: server.CertModeSelfSigned, Namespace: ns, CASecretName: "rotation-ca",
		IPAddresses:                    []net.IP{net.IPv4(127, 0, 0, 1)},
		ValidatingWebhookConfiguration: validating.Name,
		MetricsBindAddress:             "0", HealthProbeBindAddress: "0", LogLevel: "info",
		Config: dev.Env.Config,
		Log:    funcr.New(func(prefix, args string) { fmt.Fprintln(&logs, prefix, args) }, funcr.Options{}),
		SelfSigned: func(o *certs.SelfSignedOptions) {
			o.Clock = clk
			o.CADuration = 36 * time.Minute
			o.LeafDuration = 3 * time.Minute
			o.ResyncInterval = time.Second
		},
	})
	require.NoError(t, err)
	src := srv.Source.(*certs.SelfSignedSource)
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Start(runCtx) }()
	t.Cleanup(func() {
		stop()
		assert.NoError(t, <-stopped)
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})

	c := crClient(t)
	probe := readSample(t, "deployment-mode.yaml")
	probe.Namespace = ns
	eventually(t, 60*time.Second, "the API server calls the self-signed server", func() error {
		return c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
	})

	// Straight to the server: a new connection per request, trusting the bundle the server
	// injects (read before each request, as the API server reads the configuration).
	review := admissionReview(t, probe)
	var (
		stopLoad         atomic.Bool
		viaAPI, viaHTTPS atomic.Int64
		mu               sync.Mutex
		failures         []string
		serials          = map[string]bool{}
		wg               sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	for range 2 {
		wg.Go(func() {
			for !stopLoad.Load() {
				if err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll); err != nil {
					fail("through the API server: %v", err)
				}
				viaAPI.Add(1)
			}
		})
		wg.Go(func() {
			for !stopLoad.Load() {
				pool := x509.NewCertPool()
				pool.AppendCertsFromPEM(src.CABundle())
				var served *x509.Certificate
				direct := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
					DisableKeepAlives: true,
					TLSClientConfig: &tls.Config{RootCAs: pool, VerifyConnection: func(cs tls.ConnectionState) error {
						served = cs.PeerCertificates[0]
						return nil
					}},
				}}
				if err := postReview(direct, "https://"+addr+webhook.ValidatePath, review); err != nil {
					fail("straight to the server: %v", err)
				} else {
					mu.Lock()
					serials[served.SerialNumber.String()] = true
					mu.Unlock()
				}
				viaHTTPS.Add(1)
			}
		})
	}
	flowed := func() { requestsFlow(t, 10, &viaAPI, &viaHTTPS) }
	servingSerial := func() *big.Int {
		cert, err := src.GetCertificate(nil)
		require.NoError(t, err)
		return cert.Leaf.SerialNumber
	}
	caCert := func() []byte {
		s, err := cs.CoreV1().Secrets(ns).Get(ctx, "rotation-ca", metav1.GetOptions{})
		require.NoError(t, err)
		return s.Data[corev1.TLSCertKey]
	}

	// The serving certificate is renewed (the same CA).
	flowed()
	firstCA, first := caCert(), servingSerial()
	clk.set(25 * time.Second)
	eventually(t, 30*time.Second, "the serving certificate is renewed", func() error {
		if servingSerial().Cmp(first) == 0 {
			return fmt.Errorf("still serving %s", first)
		}
		return nil
	})
	flowed()
	require.Equal(t, firstCA, caCert(), "renewing the serving certificate leaves the CA alone")

	// The CA is rotated: a new CA in the Secret, injected, and a certificate signed by it.
	clk.set(4*time.Minute + 10*time.Second)
	eventually(t, 30*time.Second, "the CA is rotated and the serving certificate signed by the new one", func() error {
		now := caCert()
		if bytes.Equal(now, firstCA) {
			return fmt.Errorf("the CA has not been rotated")
		}
		served, err := src.GetCertificate(nil)
		if err != nil {
			return err
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(now)
		_, err = served.Leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: time.Now()})
		return err
	})
	flowed()
	flowed()
	stopLoad.Store(true)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	t.Logf("while the serving certificate was renewed and the CA rotated: %d requests through the API server, %d straight (each on a new connection, %d serving certificates seen), %d failed",
		viaAPI.Load(), viaHTTPS.Load(), len(serials), len(failures))
	assert.Empty(t, failures, "no request or handshake failed")
	assert.GreaterOrEqual(t, len(serials), 3, "requests met the first certificate, the renewed one and the one signed by the new CA")
}
