package servetest_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/cmd/flink-admission/server"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/freeport"
	"github.com/flink-admission/flink-admission/internal/testenv"
)

// TestServeAsServiceAccount installs the self-signed overlay on a real API server (RBAC
// enforced) and runs `flink-admission serve` with the overlay's arguments, as the overlay's
// service account (impersonated): the certificate source creates its CA Secret and injects
// the CA bundle, the leader takes the Lease, and the controller reconciles a FlinkCluster —
// with no more rights than the overlay grants. Any Forbidden answer fails the test, so a
// permission missing from deploy/base/rbac.yaml shows here rather than in a cluster.
func TestServeAsServiceAccount(t *testing.T) {
	ctrllog.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))
	env, err := testenv.Start(testenv.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })

	kubectl(t, env, "apply", "-k", overlayDir("self-signed"))
	// A FlinkCluster in the webhook's own namespace, which the webhooks leave alone: nothing
	// serves them at the Service's address here, only this process on a local port.
	kubectl(t, env, "apply", "-n", namespace, "-f", filepath.Join("..", "samples", "deployment-mode.yaml"))

	o := overlayOptions(t, "self-signed")
	rec := &forbiddenRecorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + serviceAccount}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &forbiddenRoundTripper{next: rt, rec: rec} })
	o.Config = cfg
	o.WebhookPort = freePort(t)
	o.MetricsBindAddress = "0"
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
	checks := []struct {
		what string
		done func(context.Context) (bool, error)
	}{
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
			return err == nil && len(c.Webhooks) == 1 && len(c.Webhooks[0].ClientConfig.CABundle) > 0, err
		}},
		{"Lease " + server.LeaderElectionID + " held", func(ctx context.Context) (bool, error) {
			l, err := admin.CoordinationV1().Leases(namespace).Get(ctx, server.LeaderElectionID, metav1.GetOptions{})
			return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", ignoreNotFound(err)
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
	// Refusals show up only once a request is made, so rather than waiting some time, wait
	// until the requests that run after start-up have been made at least once: the watches
	// of the certificate source and of the controller's caches, and a renewal of the Lease.
	for _, want := range []struct{ what, method, path string }{
		{"watch of the CA Secret", "WATCH", "/namespaces/" + namespace + "/secrets"},
		{"watch of the MutatingWebhookConfiguration", "WATCH", "/mutatingwebhookconfigurations"},
		{"watch of the ValidatingWebhookConfiguration", "WATCH", "/validatingwebhookconfigurations"},
		{"watch of FlinkClusters", "WATCH", "/flinkclusters"},
		{"watch of Deployments", "WATCH", "/deployments"},
		{"watch of Pods", "WATCH", "/pods"},
		{"renewal of the Lease", "PUT", "/leases/" + server.LeaderElectionID},
	} {
		for !rec.made(want.method, want.path) {
			require.Empty(t, rec.list(), "requests the service account's RBAC refused, waiting for: %s", want.what)
			require.True(t, time.Now().Before(deadline), "timed out waiting for a %s", want.what)
			time.Sleep(250 * time.Millisecond)
		}
		t.Logf("made: %s", want.what)
	}
	assert.Empty(t, rec.list(), "requests the service account's RBAC refused")
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
