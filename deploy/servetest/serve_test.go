package servetest_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/shard"
	"github.com/flink-admission/flink-admission/internal/freeport"
	"github.com/flink-admission/flink-admission/internal/test/policyreport"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/server"
)

// TestServeAsServiceAccount installs an overlay on a real API server (RBAC enforced) and runs
// `flink-admission serve` with the overlay's arguments, as the overlay's service account
// (impersonated): the certificate source creates its CA Secret and injects the CA bundle,
// /metrics answers only a caller allowed to read it, and, with the controller, the leader
// takes the Lease and the controller reconciles a FlinkCluster — with no more rights than
// the overlay grants. Any Forbidden answer fails the test, so a permission missing from
// deploy/base/rbac*.yaml shows here rather than in a cluster; the webhook-only overlay, which
// has none of the controller's RBAC, shows that a webhook-only server needs none of it.
func TestServeAsServiceAccount(t *testing.T) {
	ctrllog.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))
	for _, tc := range []struct {
		overlay    string
		controller bool
	}{
		{"self-signed", true},
		{"webhook-only", false},
	} {
		// Parsed here: it sets POD_NAMESPACE, which a parallel test may not.
		o := overlayOptions(t, tc.overlay)
		t.Run(tc.overlay, func(t *testing.T) {
			// Each on its own API server, mostly waiting on them: side by side.
			t.Parallel()
			serveAsServiceAccount(t, tc.overlay, o, tc.controller)
		})
	}
}

func serveAsServiceAccount(t *testing.T, overlay string, o server.Options, withController bool) {
	env, err := testenv.Start(testenv.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })

	kubectl(t, env, "apply", "-k", overlayDir(overlay))
	// A FlinkCluster in the webhook's own namespace, which the webhooks leave alone: nothing
	// serves them at the Service's address here, only this process on a local port.
	kubectl(t, env, "apply", "-n", namespace, "-f", filepath.Join("..", "samples", "deployment-mode.yaml"))
	// The PolicyReport CRD, so that the audit writes its report under the RBAC too.
	reportCRD := filepath.Join(t.TempDir(), "policyreport-crd.yaml")
	require.NoError(t, os.WriteFile(reportCRD, policyreport.CRD, 0o600))
	kubectl(t, env, "apply", "-f", reportCRD)
	require.NoError(t, env.WaitEstablished("policyreports.wgpolicyk8s.io", time.Minute))

	require.Equal(t, withController, o.EnableController)
	require.True(t, o.MetricsSecure, "the overlay serves /metrics over HTTPS, authorized")
	rec := &forbiddenRecorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + serviceAccount}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &forbiddenRoundTripper{next: rt, rec: rec} })
	o.Config = cfg
	o.WebhookPort = freePort(t)
	metricsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	o.MetricsBindAddress = metricsAddr
	o.HealthProbeBindAddress = "0"
	var logs syncBuffer
	o.Log = funcr.New(func(prefix, args string) { fmt.Fprintln(&logs, prefix, args) }, funcr.Options{})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})

	srv, err := server.New(o)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Manager.Start(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(time.Minute):
			t.Error("the server did not stop within a minute")
		}
	}()

	admin, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	scheme := runtime.NewScheme()
	require.NoError(t, v1beta1.AddToScheme(scheme))
	fcClient, err := client.New(env.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)

	const cluster = "statemachine" // deploy/samples/deployment-mode.yaml
	type check struct {
		what string
		done func(context.Context) (bool, error)
	}
	checks := []check{
		{"CA Secret " + o.CASecretName + " created", func(ctx context.Context) (bool, error) {
			_, err := admin.CoreV1().Secrets(namespace).Get(ctx, o.CASecretName, metav1.GetOptions{})
			return err == nil, ignoreNotFound(err)
		}},
		{"CA bundle injected into the MutatingWebhookConfiguration", func(ctx context.Context) (bool, error) {
			c, err := admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, o.MutatingWebhookConfiguration, metav1.GetOptions{})
			return err == nil && len(c.Webhooks) == 1 && len(c.Webhooks[0].ClientConfig.CABundle) > 0, err
		}},
		{"CA bundle injected into the ValidatingWebhookConfiguration", func(ctx context.Context) (bool, error) {
			c, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, o.ValidatingWebhookConfiguration, metav1.GetOptions{})
			// The validating webhook and the staged one.
			return err == nil && len(c.Webhooks) == 2 && len(c.Webhooks[0].ClientConfig.CABundle) > 0 &&
				len(c.Webhooks[1].ClientConfig.CABundle) > 0, err
		}},
	}
	if withController {
		checks = append(checks, []check{
			// The overlays' replicas share the fleet: one Lease each, no leader.
			{"shard Lease of the replica held", func(ctx context.Context) (bool, error) {
				ls, err := admin.CoordinationV1().Leases(namespace).List(ctx, metav1.ListOptions{LabelSelector: shard.GroupLabel + "=" + server.LeaderElectionID})
				return err == nil && len(ls.Items) == 1 && ls.Items[0].Spec.HolderIdentity != nil && *ls.Items[0].Spec.HolderIdentity == ls.Items[0].Name, err
			}},
			{"JobManager Deployment created by the controller", func(ctx context.Context) (bool, error) {
				_, err := admin.AppsV1().Deployments(namespace).Get(ctx, resources.JobManagerName(cluster), metav1.GetOptions{})
				return err == nil, ignoreNotFound(err)
			}},
			{"FlinkCluster status written by the controller", func(ctx context.Context) (bool, error) {
				fc := &v1beta1.FlinkCluster{}
				err := fcClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: cluster}, fc)
				return err == nil && fc.Status.State != "", err
			}},
		}...)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for _, c := range checks {
		for {
			ok, err := c.done(ctx)
			require.NoError(t, err, c.what)
			if ok {
				t.Log(c.what)
				break
			}
			require.Empty(t, rec.list(), "requests the service account's RBAC refused, waiting for: %s", c.what)
			require.True(t, time.Now().Before(deadline), "timed out waiting: %s", c.what)
			time.Sleep(250 * time.Millisecond)
		}
	}

	checkMetricsAccess(t, ctx, admin, metricsAddr)

	// Refusals show up only once a request is made, so rather than waiting some time, wait
	// until the requests that run after start-up have been made at least once: the watches
	// of the certificate source and of the controller's caches, and a renewal of the Lease.
	made := []struct{ what, method, path string }{
		{"watch of the CA Secret", "WATCH", "/namespaces/" + namespace + "/secrets"},
		{"watch of the MutatingWebhookConfiguration", "WATCH", "/mutatingwebhookconfigurations"},
		{"watch of the ValidatingWebhookConfiguration", "WATCH", "/validatingwebhookconfigurations"},
		{"TokenReview of a metrics caller", "POST", "/tokenreviews"},
		{"SubjectAccessReview of a metrics caller", "POST", "/subjectaccessreviews"},
		{"list of FlinkClusters by the audit", "GET", "/flinkclusters"},
		{"list of the audit's PolicyReports", "GET", "/policyreports"},
		{"PolicyReport written by the audit", "PATCH", "/namespaces/" + namespace + "/policyreports/flink-admission"},
	}
	if withController {
		made = append(made, []struct{ what, method, path string }{
			{"watch of FlinkClusters", "WATCH", "/flinkclusters"},
			{"watch of Deployments", "WATCH", "/deployments"},
			{"watch of Pods", "WATCH", "/pods"},
			{"list of the shard Leases", "GET", "/leases"},
			{"renewal of the shard Lease", "PUT", "/leases/"},
		}...)
	}
	for _, want := range made {
		for !rec.made(want.method, want.path) {
			require.Empty(t, rec.list(), "requests the service account's RBAC refused, waiting for: %s", want.what)
			require.True(t, time.Now().Before(deadline), "timed out waiting for a %s", want.what)
			time.Sleep(250 * time.Millisecond)
		}
		t.Logf("made: %s", want.what)
	}
	assert.Empty(t, rec.list(), "requests the service account's RBAC refused")
	if !withController {
		for _, p := range []string{"/deployments", "/pods", "/leases"} {
			assert.False(t, rec.made("GET", p) || rec.made("WATCH", p), "the webhook-only server reads %s", p)
		}
		// The audit lists the clusters; nothing watches them.
		assert.False(t, rec.made("WATCH", "/flinkclusters"), "the webhook-only server watches FlinkClusters")
	}
}

// checkMetricsAccess reads /metrics over HTTPS, verifying the server with the CA the binary
// injected into the webhook configuration, as three callers: anonymous (401), a service
// account without the metrics-reader role (403), and one bound to it (200, the metrics).
func checkMetricsAccess(t *testing.T, ctx context.Context, admin kubernetes.Interface, addr string) {
	t.Helper()
	mwc, err := admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "flink-admission", metav1.GetOptions{})
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(mwc.Webhooks[0].ClientConfig.CABundle))
	httpClient := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, ServerName: "flink-admission-webhook." + namespace + ".svc", MinVersion: tls.VersionTLS12,
	}}}

	const scrapers = "monitoring"
	_, err = admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scrapers}}, metav1.CreateOptions{})
	require.NoError(t, err)
	token := func(sa string) string {
		_, err := admin.CoreV1().ServiceAccounts(scrapers).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		require.NoError(t, err)
		tr, err := admin.CoreV1().ServiceAccounts(scrapers).CreateToken(ctx, sa, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		require.NoError(t, err)
		return tr.Status.Token
	}
	prometheus, other := token("prometheus"), token("other")
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-flink-admission"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "flink-admission-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "prometheus", Namespace: scrapers}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	get := func(token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	for _, c := range []struct {
		who   string
		token string
		want  int
	}{
		{"anonymous", "", http.StatusUnauthorized},
		{"a service account without the role", other, http.StatusForbidden},
		{"a service account bound to flink-admission-metrics-reader", prometheus, http.StatusOK},
	} {
		code, body := get(c.token)
		assert.Equal(t, c.want, code, "%s: %s", c.who, body)
		if c.want == http.StatusOK {
			assert.Contains(t, body, "flink_admission_build_info", c.who)
		} else {
			assert.NotContains(t, body, "flink_admission_build_info", c.who)
		}
	}
}

// forbiddenRecorder collects the requests the API server refused with 403 Forbidden, and
// which kinds of request were made at all.
type forbiddenRecorder struct {
	mu   sync.Mutex
	seen []string
	// requests holds "METHOD path" of every request (WATCH for a GET with watch=true).
	requests map[string]bool
}

func (r *forbiddenRecorder) request(req *http.Request) {
	method := req.Method
	if req.URL.Query().Get("watch") == "true" {
		method = "WATCH"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.requests == nil {
		r.requests = map[string]bool{}
	}
	r.requests[method+" "+req.URL.Path] = true
}

// made reports whether a request with method was made to a path containing path.
func (r *forbiddenRecorder) made(method, path string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for req := range r.requests {
		m, p, _ := strings.Cut(req, " ")
		if m == method && strings.Contains(p, path) {
			return true
		}
	}
	return false
}

func (r *forbiddenRecorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, s)
}

func (r *forbiddenRecorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// forbiddenRoundTripper is the innermost transport of every client the binary builds: it
// sees each request as sent, and each response.
type forbiddenRoundTripper struct {
	next http.RoundTripper
	rec  *forbiddenRecorder
}

func (f *forbiddenRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	f.rec.request(req)
	resp, err := f.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusForbidden {
		f.rec.add(req.Method + " " + req.URL.RequestURI())
	}
	return resp, err
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// freePort returns a free port (see internal/freeport for why not port 0).
func freePort(t *testing.T) int {
	t.Helper()
	p, err := freeport.Get()
	require.NoError(t, err)
	return p
}

func kubectl(t *testing.T, env *testenv.Env, args ...string) {
	t.Helper()
	cmd := env.Kubectl(args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), "kubectl %v:\n%s", args, out.String())
	t.Logf("kubectl %v\n%s", args, out.String())
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
