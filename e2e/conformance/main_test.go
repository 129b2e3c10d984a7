//go:build conformance

// Package conformance_test runs the scenario table of the pull request behind
// deploymentType: Deployment against real Apache Flink: the controller on the real control
// plane (kube-apiserver, etcd, kube-controller-manager with the Deployment, ReplicaSet, Job
// and StatefulSet controllers, kube-scheduler, KWOK nodes), and one Flink JVM per running
// JobManager and TaskManager pod (internal/test/realflink), Flink's jars from Maven Central.
//
// Scenarios 1 to 12 are the pull request's; 13 to 18 are what it did not test and this
// project claims (claims_test.go).
//
// Each cell (a scenario × a Flink version × a deployment type) runs in a namespace of its own
// with a namespace-scoped service account and Role for Flink's Kubernetes HA, as
// deploy/samples tells users to. What a cell proves about a job's state it reads from the job
// itself: the test job (realflink.CountingJob) reports what each start restored and what each
// snapshot held.
//
// The scenarios delete JobManager pods with a short grace period, not with grace 0: after a
// force delete KWOK 0.8 gave the replacement pod the IP of a TaskManager pod still running on
// the same node (seen once; its JobManager could not bind and crash-looped).
//
// The suite builds with -tags conformance: make test runs the default cells after the other
// packages (so that its JVMs do not share the cores with them), make conformance all of them.
//
// CONFORMANCE_FLINK_VERSIONS (comma-separated; default realflink.Default) and
// CONFORMANCE_SCENARIOS (comma-separated scenario IDs, or "all"; default the subset make test
// runs) choose the cells; make conformance runs them all. The table is printed at the end in the
// pull request's form and written to .conformance/latest.json at the repository's root.
package conformance_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/internal/test/controllerenv"
	"github.com/flink-admission/flink-admission/internal/test/flinksim"
	"github.com/flink-admission/flink-admission/internal/test/realflink"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/scope"
)

// defaultScenarios are the cells make test runs on the first Flink version: scenarios 1, 7
// and 8 in Deployment mode and 1 and 7 in Job mode (8 is N/A there).
var defaultScenarios = []string{"1", "7", "8"}

var (
	cp        *testenv.ControlPlane
	scheme    *runtime.Scheme
	transport *realflink.ServiceTransport
	k8s       client.Client
	launcher  *realflink.Launcher
	sim       *flinksim.Simulator
	// versions and scenarios are the cells chosen (see the package documentation).
	versions  []string
	scenarios map[string]bool
	table     = &results{}
)

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("CONFORMANCE_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	versions = splitList(os.Getenv("CONFORMANCE_FLINK_VERSIONS"), []string{realflink.Default})
	scenarios = map[string]bool{}
	for _, s := range splitList(os.Getenv("CONFORMANCE_SCENARIOS"), defaultScenarios) {
		scenarios[s] = true
	}
	if scenarios["all"] {
		for _, s := range table1 {
			scenarios[s.id] = true
		}
	}
	os.Exit(func() int {
		stop, err := start()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		code := m.Run()
		stop()
		if table.len() > 0 {
			table.print(os.Stdout)
			if err := table.write(filepath.Join(testenv.RepoRoot(), ".conformance", "latest.json")); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return code
	}())
}

func splitList(v string, def []string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return def
	}
	return out
}

// start brings up the control plane, resolves Flink's jars and the test jobs, and starts the
// controller with the real Flink launcher.
func start() (func(), error) {
	arts := &realflink.Artifacts{}
	for _, v := range versions {
		if _, err := arts.Lib(v); err != nil {
			return nil, err
		}
		if to := upgradeTarget(v); scenarios["14"] && to != "" {
			if _, err := arts.Lib(to); err != nil {
				return nil, err
			}
		}
	}
	if _, err := arts.JobsJar(); err != nil {
		return nil, err
	}
	var err error
	if scheme, err = controllerenv.NewScheme(); err != nil {
		return nil, err
	}
	cp, err = testenv.StartControlPlane(testenv.ControlPlaneOptions{Nodes: 3, NodeLeaseDuration: 8 * time.Second, NodeMonitorGracePeriod: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (func(), error) { _ = cp.Stop(); return nil, err }
	if k8s, err = client.New(cp.Config, client.Options{Scheme: scheme}); err != nil {
		return fail(err)
	}
	dir, err := os.MkdirTemp("", "flink-admission-conformance-")
	if err != nil {
		return fail(err)
	}
	launcher, err = realflink.New(realflink.Options{Config: cp.Config, Artifacts: arts, Dir: dir, Log: ctrl.Log.WithName("realflink")})
	if err != nil {
		return fail(err)
	}
	// The controller reaches each JobManager Service through the stand-in for kube-proxy,
	// which reads Services and pods from a cache of its own.
	svcCache, err := cache.New(cp.Config, cache.Options{Scheme: scheme})
	if err != nil {
		return fail(err)
	}
	// The clusters of a cell that runs a controller of its own (ownController) are outside
	// the shared one's scope.
	shared, err := scope.Parse("", "!"+ownControllerLabel)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = svcCache.Start(ctx) }()
	transport = &realflink.ServiceTransport{Reader: svcCache}
	opts := controllerOptions()
	opts.Scope = shared
	env, err := controllerenv.Start(controllerenv.Options{
		Config: cp.Config, Scheme: scheme, Cache: controller.ScopedCacheOptions(shared),
		Controller: opts,
		Simulator:  flinksim.Options{Config: cp.Config, Launcher: launcher, TaskManagers: true, BackOff: time.Second, MaxBackOff: 10 * time.Second, Log: ctrl.Log.WithName("kubelet")},
	})
	if err != nil {
		cancel()
		launcher.Close()
		return fail(err)
	}
	sim = env.Simulator
	return func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		launcher.Close()
		cancel()
		_ = cp.Stop()
		if os.Getenv("CONFORMANCE_KEEP") == "" {
			_ = os.RemoveAll(dir)
		} else {
			fmt.Fprintln(os.Stderr, "conformance: JVM logs kept in", launcher.LogDir())
		}
	}, nil
}

// controllerOptions are the controller's options in the suite: short timers.
func controllerOptions() controller.Options {
	return controller.Options{
		RequeueInterval: time.Second, SteadyPollInterval: 2 * time.Second, ResyncInterval: 10 * time.Second,
		// Shorter than the default 5 minutes, long enough for a TaskManager to come back on a
		// busy machine (scenario 15: the update waits for the job's tasks to run again).
		WaitBound: 3 * time.Minute,
		// Long enough for a JobManager JVM to start and list its job on a busy machine.
		HARecoveryGrace: 90 * time.Second,
		FlinkClientFor: func(fc *v1beta1.FlinkCluster) (flinkclient.Client, error) {
			return transport.FlinkClient(fc)
		},
	}
}

// ownControllerLabel marks the clusters of a cell that runs a controller of its own, with
// the cell's namespace as its value.
const ownControllerLabel = "conformance.flink-admission.dev/own-controller"

// ownController starts a controller of the cell's own, for its clusters labelled
// ownControllerLabel (a manager without a simulator: the shared one runs the pods); stop
// stops it and waits until it has.
func (c *cell) ownController() (stop func()) {
	c.t.Helper()
	s, err := scope.Parse(c.ns, ownControllerLabel+"="+c.ns)
	if err != nil {
		c.fatalf("scope: %v", err)
	}
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme: scheme, Cache: controller.ScopedCacheOptions(s),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		c.fatalf("manager: %v", err)
	}
	opts := controllerOptions()
	opts.Scope = s
	if err := controller.Setup(mgr, opts); err != nil {
		c.fatalf("controller: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				c.t.Logf("the cell's controller: %v", err)
			}
		})
	}
}
