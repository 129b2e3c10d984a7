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
	"github.com/flink-admission/flink-admission/internal/testenv"
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
	// fakes maps "namespace/name" of a FlinkCluster to the fake Flink REST server standing in
	// for its JobManager.
	fakes sync.Map
)

func fakeClientFor(fc *v1beta1.FlinkCluster) (flinkclient.Client, error) {
	s, ok := fakes.Load(fc.Namespace + "/" + fc.Name)
	if !ok {
		return nil, fmt.Errorf("no fake Flink server for %s/%s", fc.Namespace, fc.Name)
	}
	return flinkclient.New(s.(*fakeflink.Server).URL(), nil)
}

func TestMain(m *testing.M) {
	// Scenario tests mostly wait on polling; run several at once (an explicit -parallel on
	// the command line still wins).
	_ = flag.Set("test.parallel", "8")
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("CONTROLLER_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := v1beta1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  controller.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := controller.Setup(mgr, controller.Options{
		Clock:           fakeClock,
		HARecoveryGrace: haGrace,
		LostTimeout:     lostTimeout,
		RequeueInterval: pollInterval,
		FlinkClientFor:  fakeClientFor,
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cached = mgr.GetClient()
	k8s, err = client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	code := m.Run()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	case <-time.After(30 * time.Second):
		fmt.Fprintln(os.Stderr, "manager did not stop")
	}
	return code
}
