// Package realplane_test runs the controller on the real control plane: kube-apiserver and
// etcd, kube-controller-manager (Deployment, ReplicaSet, Job, garbage collector, node
// lifecycle, taint eviction, pod GC), kube-scheduler and three KWOK nodes
// (testenv.StartControlPlane), with simulated Flink attached to every running JobManager pod
// by internal/test/flinksim. It holds the controller's scenario table (TestScenarios, both
// deployment types) and the rows that need the real parts in particular: JobManager pods made
// by the real ReplicaSet and Job controllers, a lost node's taints, tolerationSeconds and
// eviction, a force-deleted pod whose process runs on, the Deployment deleted while its
// ReplicaSet lives.
//
// Nothing here plays the kubelet or a workload controller: pods are created, scheduled,
// started and removed by the real parts; the Simulator writes a container's own exit exactly
// as the kubelet does (KWOK cannot express one). The harness only steers what a real cluster
// leaves to chance: it holds a deleted pod in its preStop hook (flinksim HoldTermination) and
// fails a container's start with a message (StartupFailure). A JobManager's end after its
// job needs no holding: the controller's configuration keeps it up until the controller ends
// it.
//
// One control plane serves every row, each in a namespace of its own. Rows run in parallel,
// except those that move the shared clock far (the timer rows: they run first, one at a
// time). A row that stops, deletes or cordons a node does it to KWOK nodes of its own
// (ownNodes), which no other row's JobManager uses.
//
// Time: the controller's and Flink's clock is fakeClock (the HA grace, the Lost timeout and
// Flink's leader leases move only when a row steps it). It starts at the real time, unlike
// the envtest harness's clock a day behind: the controller compares it with timestamps the
// real control plane writes (a pod's deletionTimestamp). The control plane, KWOK and the
// Simulator's preStop delays and restart back-off run on real time, with short node lease and
// monitor periods.
package realplane_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/internal/test/controllerenv"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
	"github.com/flink-admission/flink-admission/internal/test/flinksim"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/scope"
)

// Timers of the controller under test. The HA grace and Lost timeout run on fakeClock, which
// only the serial rows move far; polling runs on real time and is short to keep rows fast.
const (
	haGrace      = 5 * time.Minute
	lostTimeout  = 10 * time.Minute
	pollInterval = 100 * time.Millisecond
	// resyncInterval stands in for the time that passes while a steady job runs: rows step
	// fakeClock by minutes (a savepoint schedule, an HA grace) and expect what is then due
	// to be done, and nothing but a resync reconciles a steady job whose Flink reading does
	// not change (the HA ConfigMaps deleted behind it, a timer on fakeClock).
	resyncInterval = 10 * pollInterval
	// nodeMonitorGrace is how long a node's heartbeats may stop before it is unreachable.
	nodeMonitorGrace = 10 * time.Second
)

var (
	cp  *testenv.ControlPlane
	k8s client.Client
	// cached is the manager's client: it reads through the cache restricted by
	// controller.CacheOptions, as the controller does.
	cached client.Client
	sim    *flinksim.Simulator
	scheme *runtime.Scheme
	// fakeClock starts at the real time: see the package documentation.
	fakeClock = clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	// fakes maps "namespace/name" of a FlinkCluster to its fake Flink.
	fakes sync.Map
	// stopped are the nodes whose KWOK a row stopped: their kubelet is down.
	stopped sync.Map
	// held are the UIDs of deleted pods whose containers a row keeps in their preStop hook.
	held sync.Map
	// configurations maps a pod ("namespace/name") to the Flink configuration its container starts with
	// instead of its ConfigMap's.
	configurations sync.Map
	// startupFailures maps a namespace to the exit its JobManager containers' starts fail with.
	startupFailures sync.Map
)

func TestMain(m *testing.M) {
	// Rows mostly wait on the control plane; run many at once (an explicit -parallel on the
	// command line still wins).
	_ = flag.Set("test.parallel", "12")
	if os.Getenv("CONTROLLER_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	os.Exit(func() int {
		stop, err := start()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer stop()
		return m.Run()
	}())
}

// flinkClientFor reaches the cluster's fake Flink through its JobManager Service (whichever
// JobManager process answers), over httpClient (nil: the default).
func flinkClientFor(fc *v1beta1.FlinkCluster, httpClient *http.Client) (flinkclient.Client, error) {
	f := fakeFor(fc.Namespace, fc.Name)
	if f == nil {
		return nil, fmt.Errorf("no fake Flink for %s/%s", fc.Namespace, fc.Name)
	}
	return flinkclient.New(f.URL(), httpClient)
}

func must[T any](v *T, err error) T {
	if err != nil {
		panic(err)
	}
	return *v
}

func fakeFor(namespace, name string) *fakeflink.Cluster {
	if f, ok := fakes.Load(namespace + "/" + name); ok {
		return f.(*fakeflink.Cluster)
	}
	return nil
}

// start brings up the control plane, the manager running the controller and the Simulator,
// and returns once the manager's cache is filled.
func start() (func(), error) {
	var err error
	if scheme, err = controllerenv.NewScheme(); err != nil {
		return nil, err
	}
	cp, err = testenv.StartControlPlane(testenv.ControlPlaneOptions{
		Nodes: 3, NodeLeaseDuration: 8 * time.Second, NodeMonitorGracePeriod: nodeMonitorGrace,
	})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (func(), error) { _ = cp.Stop(); return nil, err }
	if k8s, err = client.New(cp.Config, client.Options{Scheme: scheme}); err != nil {
		return fail(err)
	}
	// The clusters of the shared-fleet row are its replicas', not this controller's.
	own := scope.Scope{Selector: labels.NewSelector().Add(must(labels.NewRequirement(sharedFleetLabel, selection.DoesNotExist, nil)))}
	env, err := controllerenv.Start(controllerenv.Options{
		Config: cp.Config, Scheme: scheme, Cache: controller.ScopedCacheOptions(own),
		Controller: controller.Options{
			Clock: fakeClock, HARecoveryGrace: haGrace, LostTimeout: lostTimeout, RequeueInterval: pollInterval, SteadyPollInterval: 3 * pollInterval, ResyncInterval: resyncInterval,
			FlinkClientFor: func(fc *v1beta1.FlinkCluster) (flinkclient.Client, error) { return flinkClientFor(fc, nil) },
			Scope:          own,
		},
		Simulator: flinksim.Options{
			Config: cp.Config, BackOff: time.Second, MaxBackOff: 4 * time.Second,
			Clusters: func(_ context.Context, fc *v1beta1.FlinkCluster) *fakeflink.Cluster {
				return fakeFor(fc.Namespace, fc.Name)
			},
			NodeStopped:     func(node string) bool { _, ok := stopped.Load(node); return ok },
			HoldTermination: func(pod *corev1.Pod) bool { _, ok := held.Load(pod.UID); return ok },
			Configuration: func(pod *corev1.Pod, props map[string]string) {
				if c, ok := configurations.Load(pod.Namespace + "/" + pod.Name); ok {
					clear(props)
					maps.Copy(props, c.(map[string]string))
				}
			},
			StartupFailure: func(pod *corev1.Pod) *fakeflink.ExitStatus {
				if s, ok := startupFailures.Load(pod.Namespace); ok {
					return s.(*fakeflink.ExitStatus)
				}
				return nil
			},
		},
	})
	if err != nil {
		return fail(err)
	}
	cached, sim = env.Client, env.Simulator
	return func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		_ = cp.Stop()
	}, nil
}
