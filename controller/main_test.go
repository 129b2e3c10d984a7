package controller_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/fakeflink"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

// Timers of the controller under test. The HA grace and Lost timeout run on fakeClock, which
// only the timer tests move; polling runs on real time and is short to keep the suite fast.
const (
	haGrace      = 5 * time.Minute
	lostTimeout  = 10 * time.Minute
	pollInterval = 100 * time.Millisecond
)

var (
	k8s client.Client
	// cached is the manager's client: it reads through the cache restricted by
	// controller.CacheOptions, as the controller does.
	cached    client.Client
	scheme    = runtime.NewScheme()
	fakeClock = clocktesting.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	// fakes maps "namespace/name" of a FlinkCluster to the fake Flink cluster standing in for
	// its JobManager processes.
	fakes sync.Map
)

func fakeClientFor(fc *v1beta1.FlinkCluster) (flinkclient.Client, error) {
	s, ok := fakes.Load(fc.Namespace + "/" + fc.Name)
	if !ok {
		return nil, fmt.Errorf("no fake Flink server for %s/%s", fc.Namespace, fc.Name)
	}
	// The JobManager Service: it reaches whichever JobManager process answers.
	return flinkclient.New(s.(*fakeflink.Cluster).URL(), nil)
}

// TestMain starts no API server: the pure tests of the package run without one, and the
// first test that needs one (requireEnv) starts it, once.
func TestMain(m *testing.M) {
	// Scenario tests mostly wait on polling; run several at once (an explicit -parallel on
	// the command line still wins).
	_ = flag.Set("test.parallel", "8")
	if os.Getenv("CONTROLLER_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	code := m.Run()
	if stopEnv != nil {
		stopEnv()
	}
	os.Exit(code)
}

var (
	envOnce sync.Once
	envErr  error
	stopEnv func()
)

// requireEnv starts kube-apiserver, etcd and the manager running the controller, on the
// first call; the test fails when they cannot start.
func requireEnv(t testing.TB) {
	t.Helper()
	envOnce.Do(func() { envErr = startEnv() })
	if envErr != nil {
		t.Fatal(envErr)
	}
}

func startEnv() error {
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1beta1.AddToScheme(scheme); err != nil {
		return err
	}
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  controller.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		_ = env.Stop()
		return err
	}
	if err := controller.Setup(mgr, controller.Options{
		Clock:           fakeClock,
		HARecoveryGrace: haGrace,
		LostTimeout:     lostTimeout,
		RequeueInterval: pollInterval,
		FlinkClientFor:  fakeClientFor,
	}); err != nil {
		_ = env.Stop()
		return err
	}
	cached = mgr.GetClient()
	if k8s, err = client.New(env.Config, client.Options{Scheme: scheme}); err != nil {
		_ = env.Stop()
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	// The tests' waits count from their first step: let the manager's caches fill first, so
	// that a loaded machine does not spend a test's bound on the manager's start.
	syncCtx, syncCancel := context.WithTimeout(ctx, 2*time.Minute)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		_ = env.Stop()
		return fmt.Errorf("the manager's cache did not sync within 2 minutes")
	}
	stopEnv = func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				fmt.Fprintln(os.Stderr, "manager:", err)
			}
		case <-time.After(30 * time.Second):
			fmt.Fprintln(os.Stderr, "manager did not stop")
		}
		_ = env.Stop()
	}
	return nil
}
