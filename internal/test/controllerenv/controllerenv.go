// Package controllerenv runs the controller as the tests on a real control plane need it: a
// manager with the controller set up, and the Simulator (internal/test/flinksim) that attaches a
// simulated Flink JobManager to its JobManager pods, started together, stopped together.
//
// The real-plane scenario rows (controller/realplane) and the scope tests (e2e/scopetest)
// start the controller this way; what differs between them (the identity the manager runs
// as, its cache's scope, the controller's options, the Simulator's hooks) is in Options.
package controllerenv

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/internal/test/flinksim"
)

// DefaultSyncTimeout bounds the wait for the manager's caches when Options.SyncTimeout is 0:
// generous, since a loaded 2-core machine starts the whole control plane beside it.
const DefaultSyncTimeout = 2 * time.Minute

// NewScheme returns a scheme with client-go's types and FlinkCluster: what the manager, the
// Simulator and the tests' clients all read.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1beta1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Options tune Start.
type Options struct {
	// Config is the identity the manager runs as; required. A test of the controller's RBAC
	// passes an impersonating copy of the admin's.
	Config *rest.Config
	// Scheme is the manager's scheme (NewScheme); required. The Simulator uses it too unless
	// Simulator.Scheme is set.
	Scheme *runtime.Scheme
	// Cache are the manager's cache options (controller.CacheOptions or
	// controller.ScopedCacheOptions).
	Cache cache.Options
	// Controller are the options controller.Setup gets.
	Controller controller.Options
	// Simulator are the Simulator's options; Simulator.Config (a cluster admin's, to read
	// every JobManager pod) and Simulator.Clusters are required.
	Simulator flinksim.Options
	// SyncTimeout bounds the wait for the manager's caches; DefaultSyncTimeout when 0.
	SyncTimeout time.Duration
}

// Env is a running manager with the controller and the Simulator.
type Env struct {
	// Client is the manager's client: it reads through the cache that Options.Cache
	// restricts, as the controller does.
	Client client.Client
	// Simulator attaches simulated Flink to the JobManager pods.
	Simulator *flinksim.Simulator

	cancel     context.CancelFunc
	mgrDone    chan error
	simDone    chan error
	stopped    bool
	stopResult error
}

// Start sets the controller up on a new manager, starts the manager and the Simulator, and
// returns once the manager's caches of the kinds the controller watches are filled: the
// tests' waits count from their first step, and a cache that cannot sync (a Role without a
// list or watch) fails here, named, before a manager runs.
func Start(opts Options) (*Env, error) {
	if opts.Config == nil || opts.Scheme == nil {
		return nil, errors.New("controllerenv: Options.Config and Options.Scheme are required")
	}
	timeout := opts.SyncTimeout
	if timeout == 0 {
		timeout = DefaultSyncTimeout
	}
	// A manager whose cache cannot sync cannot be stopped either: cancelled, controller-runtime's
	// runnable group keeps waiting for the cache's readiness (kubernetes-sigs/controller-runtime
	// pull 3440). So the identity's lists and watches are tried on a cache of its own first,
	// which stops when cancelled.
	if err := trySync(opts, timeout); err != nil {
		return nil, err
	}
	mgr, err := ctrl.NewManager(opts.Config, ctrl.Options{
		Scheme:                 opts.Scheme,
		Cache:                  opts.Cache,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// A test binary may set the controller up on more than one manager.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("controllerenv: manager: %w", err)
	}
	if err := controller.Setup(mgr, opts.Controller); err != nil {
		return nil, fmt.Errorf("controllerenv: controller: %w", err)
	}
	simOpts := opts.Simulator
	if simOpts.Scheme == nil {
		simOpts.Scheme = opts.Scheme
	}
	sim, err := flinksim.New(simOpts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	// The controller's watches ask for their informers only once its controllers start, after
	// the cache has: an informer asked for now is one WaitForCacheSync waits for.
	if err := addInformers(ctx, mgr.GetCache(), opts.Cache); err != nil {
		cancel()
		return nil, err
	}
	e := &Env{Client: mgr.GetClient(), Simulator: sim, cancel: cancel, mgrDone: make(chan error, 1), simDone: make(chan error, 1)}
	go func() { e.mgrDone <- mgr.Start(ctx) }()
	go func() { e.simDone <- sim.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, timeout)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		// The identity's lists and watches passed trySync: the API server went away. The
		// manager is cancelled but not waited for (see above).
		cancel()
		return nil, fmt.Errorf("controllerenv: the manager's cache did not sync within %s", timeout)
	}
	return e, nil
}

// trySync fills a cache of the manager's options as the manager's identity, for the kinds
// the controller watches, and stops it: an error names the identity whose Roles lack a list
// or watch.
func trySync(opts Options, timeout time.Duration) error {
	copts := opts.Cache
	copts.Scheme = opts.Scheme
	c, err := cache.New(opts.Config, copts)
	if err != nil {
		return fmt.Errorf("controllerenv: cache: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := addInformers(ctx, c, opts.Cache); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	synced := c.WaitForCacheSync(ctx)
	cancel()
	<-done
	if !synced {
		return fmt.Errorf("controllerenv: the manager's cache did not sync within %s%s: do its Roles allow the lists and watches?", timeout, identity(opts.Config))
	}
	return nil
}

// addInformers asks c for the informers of FlinkCluster and of the kinds cache options name
// (the controller's cache options name every other kind it watches).
func addInformers(ctx context.Context, c cache.Cache, opts cache.Options) error {
	objs := []client.Object{&v1beta1.FlinkCluster{}}
	for obj := range opts.ByObject {
		if _, ok := obj.(*v1beta1.FlinkCluster); !ok {
			objs = append(objs, obj)
		}
	}
	for _, obj := range objs {
		if _, err := c.GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("controllerenv: informer of %T: %w", obj, err)
		}
	}
	return nil
}

// Stop stops the manager and the Simulator and returns what either ended with. Calling it
// again returns the same.
func (e *Env) Stop() error {
	if e.stopped {
		return e.stopResult
	}
	e.stopped = true
	e.cancel()
	var errs []error
	if err := <-e.mgrDone; err != nil {
		errs = append(errs, fmt.Errorf("manager: %w", err))
	}
	if err := <-e.simDone; err != nil {
		errs = append(errs, fmt.Errorf("flinksim: %w", err))
	}
	e.stopResult = errors.Join(errs...)
	return e.stopResult
}

// identity names the user cfg impersonates, for the error of a cache that did not sync: a
// scoped identity's Roles are the usual reason.
func identity(cfg *rest.Config) string {
	if u := cfg.Impersonate.UserName; u != "" {
		return " as " + u
	}
	return ""
}
