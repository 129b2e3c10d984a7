package controllerenv_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/controllerenv"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
	"github.com/flink-admission/flink-admission/internal/test/flinksim"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/policy"
)

// api is kube-apiserver and etcd: enough for a manager and the Simulator to start (no pod
// ever runs here, so no Flink is needed).
var api *testenv.Env

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(func() int {
		var err error
		if api, err = testenv.Start(testenv.Options{}); err != nil {
			fmt.Fprintln(os.Stderr, "kube-apiserver:", err)
			return 1
		}
		defer func() { _ = api.Stop() }()
		return m.Run()
	}())
}

func options(t *testing.T, cfg *rest.Config) controllerenv.Options {
	t.Helper()
	scheme, err := controllerenv.NewScheme()
	require.NoError(t, err)
	noFlink := func(fc *v1beta1.FlinkCluster) (flinkclient.Client, error) {
		return nil, fmt.Errorf("no Flink for %s", fc.Name)
	}
	return controllerenv.Options{
		Config: cfg, Scheme: scheme, Cache: controller.CacheOptions(),
		Controller: controller.Options{FlinkClientFor: noFlink},
		Simulator: flinksim.Options{Config: api.Config, Clusters: func(context.Context, *v1beta1.FlinkCluster) *fakeflink.Cluster {
			return nil
		}},
		SyncTimeout: 20 * time.Second,
	}
}

func TestStartRunsTheControllerUntilStop(t *testing.T) {
	ctx := context.Background()
	opts := options(t, api.Config)
	env, err := controllerenv.Start(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })

	k8s, err := client.New(api.Config, client.Options{Scheme: opts.Scheme})
	require.NoError(t, err)
	fc := builder.MakeFlinkCluster("started", "default").Obj()
	policy.Default(fc)
	require.NoError(t, k8s.Create(ctx, fc))
	t.Cleanup(func() {
		// The controller's finalizer would outlive the manager: remove it with the cluster.
		cur := &v1beta1.FlinkCluster{}
		if k8s.Get(ctx, client.ObjectKeyFromObject(fc), cur) == nil {
			cur.Finalizers = nil
			_ = k8s.Update(ctx, cur)
			_ = k8s.Delete(ctx, cur)
		}
	})
	require.Eventually(t, func() bool {
		cur := &v1beta1.FlinkCluster{}
		return env.Client.Get(ctx, client.ObjectKeyFromObject(fc), cur) == nil && slices.Contains(cur.Finalizers, controller.Finalizer)
	}, time.Minute, 50*time.Millisecond, "the controller reconciles the cluster, seen through the manager's cache")

	require.NoError(t, env.Stop(), "a manager and a Simulator cancelled end without an error")
	assert.NoError(t, env.Stop(), "stopping again answers the same")
}

func TestStartFailsNamedWhenTheCacheCannotSync(t *testing.T) {
	cfg := rest.CopyConfig(api.Config)
	// A user no Role names: every list and watch of the manager's cache is forbidden.
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "nobody"}
	opts := options(t, cfg)
	opts.SyncTimeout = 2 * time.Second
	env, err := controllerenv.Start(opts)
	assert.Nil(t, env)
	assert.ErrorContains(t, err, "did not sync")
	assert.ErrorContains(t, err, "as nobody", "the identity whose Roles to look at")
}

func TestStartNeedsConfigAndScheme(t *testing.T) {
	for name, opts := range map[string]controllerenv.Options{
		"no config": {Scheme: options(t, api.Config).Scheme},
		"no scheme": {Config: api.Config},
	} {
		_, err := controllerenv.Start(opts)
		assert.ErrorContains(t, err, "required", name)
	}
}
