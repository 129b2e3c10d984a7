// Package realplane_test runs the controller on the real control plane: kube-apiserver and
// etcd, kube-controller-manager (Deployment, ReplicaSet, Job, garbage collector, node
// lifecycle, taint eviction, pod GC), kube-scheduler and three KWOK nodes
// (testenv.StartControlPlane), with simulated Flink attached to every running JobManager pod
// by internal/flinksim. Its rows are the ones that need the real parts: JobManager pods made
// by the real ReplicaSet and Job controllers, a lost node's taints, tolerationSeconds and
// eviction, a force-deleted pod whose process runs on, the Deployment deleted while its
// ReplicaSet lives.
//
// Time: the controller's and Flink's clock is fakeClock (the HA grace, the Lost timeout and
// Flink's leader leases move only when a row steps it); the control plane and KWOK run on
// real time, with short node lease and monitor periods.
package realplane_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/fakeflink"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/internal/flinksim"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

const (
	waitTimeout = 90 * time.Second
	// nodeMonitorGrace is how long a node's heartbeats may stop before it is unreachable.
	nodeMonitorGrace = 10 * time.Second
)

var (
	cp     *testenv.ControlPlane
	k8s    client.Client
	sim    *flinksim.Simulator
	scheme = runtime.NewScheme()
	// fakeClock starts at the real time: the controller compares it with timestamps the real
	// control plane writes (a pod's deletionTimestamp), which a clock a day behind would never
	// reach.
	fakeClock = clocktesting.NewFakeClock(time.Now().Truncate(time.Second))
	// fakes maps "namespace/name" of a FlinkCluster to its fake Flink.
	fakes sync.Map
	// stopped are the nodes whose KWOK a row stopped: their kubelet is down.
	stopped sync.Map
	nsSeq   atomic.Int64
)

func TestMain(m *testing.M) {
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

// start brings up the control plane, the manager running the controller and the Simulator.
func start() (func(), error) {
	ctrl.SetLogger(logr.Discard())
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1beta1.AddToScheme(scheme)
	var err error
	cp, err = testenv.StartControlPlane(testenv.ControlPlaneOptions{
		Nodes: 3, NodeLeaseDuration: 8 * time.Second, NodeMonitorGracePeriod: nodeMonitorGrace,
	})
	if err != nil {
		return nil, err
	}
	if k8s, err = client.New(cp.Config, client.Options{Scheme: scheme}); err != nil {
		_ = cp.Stop()
		return nil, err
	}
	mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
		Scheme: scheme, Cache: controller.CacheOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		_ = cp.Stop()
		return nil, err
	}
	if err := controller.Setup(mgr, controller.Options{
		Clock: fakeClock, HARecoveryGrace: 5 * time.Minute, LostTimeout: 10 * time.Minute,
		RequeueInterval: 100 * time.Millisecond,
		FlinkClientFor: func(fc *v1beta1.FlinkCluster) (flinkclient.Client, error) {
			f, ok := fakes.Load(fc.Namespace + "/" + fc.Name)
			if !ok {
				return nil, fmt.Errorf("no fake Flink for %s/%s", fc.Namespace, fc.Name)
			}
			return flinkclient.New(f.(*fakeflink.Cluster).URL(), nil)
		},
	}); err != nil {
		_ = cp.Stop()
		return nil, err
	}
	sim, err = flinksim.New(flinksim.Options{
		Config: cp.Config, Scheme: scheme, BackOff: time.Second, MaxBackOff: 4 * time.Second,
		Clusters: func(_ context.Context, fc *v1beta1.FlinkCluster) *fakeflink.Cluster {
			if f, ok := fakes.Load(fc.Namespace + "/" + fc.Name); ok {
				return f.(*fakeflink.Cluster)
			}
			return nil
		},
		NodeStopped: func(node string) bool { _, ok := stopped.Load(node); return ok },
	})
	if err != nil {
		_ = cp.Stop()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = mgr.Start(ctx) }()
	go func() { defer wg.Done(); _ = sim.Start(ctx) }()
	return func() {
		cancel()
		wg.Wait()
		_ = cp.Stop()
	}, nil
}

// harness is one FlinkCluster in its own namespace, with its fake Flink.
type harness struct {
	t     *testing.T
	ctx   context.Context
	ns    string
	name  string
	mode  v1beta1.JobManagerDeploymentType
	flink *fakeflink.Cluster
}

func newHarness(t *testing.T, mode v1beta1.JobManagerDeploymentType) *harness {
	t.Helper()
	h := &harness{t: t, ctx: context.Background(), name: "wc", mode: mode}
	h.ns = fmt.Sprintf("rp%d-%s", nsSeq.Add(1), strings.ToLower(string(mode)))
	require.NoError(t, k8s.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: h.ns}}))
	w := builder.MakeAppCluster(h.name).Namespace(h.ns).UID("")
	if mode == v1beta1.JobManagerDeploymentTypeDeployment {
		// A preStop delay the Simulator runs on its real clock: short, to keep rows fast.
		w.Deployment().Shutdown(1, 20)
	}
	fc := w.Obj()
	h.flink = fakeflink.NewCluster(fakeflink.Options{
		ClusterID: resources.HAClusterID(fc), Version: fakeflink.Version(fc.Spec.FlinkVersion),
		HA: &fakeflink.KubeHA{Client: k8s, Namespace: h.ns}, Clock: fakeClock,
		Program: fakeflink.Program{JobName: "wordcount"},
	})
	fakes.Store(h.ns+"/"+h.name, h.flink)
	t.Cleanup(func() {
		if t.Failed() {
			h.dump()
		}
		assert.Empty(t, h.flink.Violations(), "what Flink must never do to a job (rerun after its end, two runs at once)")
		h.retire()
		fakes.Delete(h.ns + "/" + h.name)
		h.flink.Close()
	})
	require.NoError(t, k8s.Create(h.ctx, fc))
	return h
}

func (h *harness) retire() {
	_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fc := &v1beta1.FlinkCluster{}
		if err := k8s.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: h.name}, fc); err != nil {
			return client.IgnoreNotFound(err)
		}
		fc.Finalizers = nil
		if err := k8s.Update(h.ctx, fc); err != nil {
			return err
		}
		return client.IgnoreNotFound(k8s.Delete(h.ctx, fc))
	})
}

func (h *harness) dump() {
	fc := &v1beta1.FlinkCluster{}
	if err := k8s.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: h.name}, fc); err == nil {
		h.t.Logf("status: %+v", fc.Status)
	}
	for _, p := range h.pods() {
		h.t.Logf("pod %s on %s: phase %s, deleting %t, statuses %+v", p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil, p.Status.ContainerStatuses)
	}
	for _, p := range h.flink.Processes() {
		h.t.Logf("flink process %s: alive %t, leads %t, jobs %v", p.Name(), p.Alive(), p.Leads(), p.JobIDs())
	}
	h.t.Log(cp.Logs())
}

func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (h *harness) get() *v1beta1.FlinkCluster {
	h.t.Helper()
	fc := &v1beta1.FlinkCluster{}
	require.NoError(h.t, k8s.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: h.name}, fc))
	return fc
}

func (h *harness) job() v1beta1.JobStatus {
	if j := h.get().Status.Components.Job; j != nil {
		return *j
	}
	return v1beta1.JobStatus{}
}

func (h *harness) waitJob(state string) {
	h.t.Helper()
	h.eventually("job state "+state, func() bool { return h.job().State == state })
}

func (h *harness) pods() []corev1.Pod {
	h.t.Helper()
	list := &corev1.PodList{}
	require.NoError(h.t, k8s.List(h.ctx, list, client.InNamespace(h.ns),
		client.MatchingLabels(resources.SelectorLabels(h.name, resources.ComponentJobManager))))
	return list.Items
}

// runningPod waits for a JobManager pod, other than those in not, whose container runs and
// whose simulated JobManager process is alive.
func (h *harness) runningPod(not ...types.UID) (*corev1.Pod, *fakeflink.JobManager) {
	h.t.Helper()
	var pod *corev1.Pod
	var jm *fakeflink.JobManager
	h.eventually("a running JobManager pod with its process", func() bool {
		for _, p := range h.pods() {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || slices.Contains(not, p.UID) {
				continue
			}
			if jm = sim.Process(h.ns, p.Name); jm != nil && jm.Alive() {
				pod = &p
				return true
			}
		}
		return false
	})
	return pod, jm
}

func (h *harness) podNow(pod *corev1.Pod) (*corev1.Pod, bool) {
	p := &corev1.Pod{}
	err := k8s.Get(h.ctx, client.ObjectKeyFromObject(pod), p)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(h.t, err)
	return p, true
}

func (h *harness) deployment() *appsv1.Deployment {
	d := &appsv1.Deployment{}
	if err := k8s.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: resources.JobManagerName(h.name)}, d); err != nil {
		return nil
	}
	return d
}

// runJob waits until the job runs on the first JobManager pod.
func (h *harness) runJob() (*corev1.Pod, *fakeflink.JobManager, string) {
	h.t.Helper()
	pod, jm := h.runningPod()
	h.waitJob(v1beta1.JobStateRunning)
	id := h.job().ID
	require.Equal(h.t, flinkclient.JobStateRunning, jm.JobState(id))
	return pod, jm, id
}

// recoveredOn checks that the job runs again under id, recovered from HA by the JobManager of
// a pod other than those in not.
func (h *harness) recoveredOn(id string, not ...types.UID) *corev1.Pod {
	h.t.Helper()
	pod, jm := h.runningPod(not...)
	h.eventually("the new JobManager leading", func() bool {
		// A dead leader's lease runs out on Flink's clock only: move it past the lease.
		if !jm.Leads() {
			h.flink.Advance(16 * time.Second)
		}
		return jm.Leads()
	})
	h.eventually("the job Running again with its job ID", func() bool {
		j := h.job()
		return j.State == v1beta1.JobStateRunning && j.ID == id && jm.JobState(id) == flinkclient.JobStateRunning
	})
	return pod
}

// noFailure checks that the job carries no failure reason.
func (h *harness) noFailure() {
	h.t.Helper()
	assert.Empty(h.t, h.job().FailureReasons, "no failure recorded")
}

func TestRealControlPlane(t *testing.T) {
	dep, job := v1beta1.JobManagerDeploymentTypeDeployment, v1beta1.JobManagerDeploymentTypeJob
	// Rows that stop or delete a node run first, one at a time: every pod on that node would
	// be lost with it, other rows' too. The others then run in parallel.
	for _, tc := range []struct {
		mode   v1beta1.JobManagerDeploymentType
		name   string
		run    func(t *testing.T, h *harness)
		serial bool
	}{
		{dep, "the ReplicaSet's pod on a KWOK node runs the job; a deleted pod runs preStop, is replaced by the ReplicaSet, the job recovered under its ID", deletePodRecovers, false},
		{dep, "a force-deleted pod's JobManager runs on: the replacement waits for its lease, the job stays one execution", forceDeletedPodRunsOn, false},
		{dep, "a node lost (heartbeats stop): tainted, the pod evicted after the JobManager's 30 s toleration and Terminating forever, the job recovered on another node; an update then waits for the stuck pod only until LeaseGrace past its deletion deadline", nodeLost, true},
		{dep, "a deleted node: pod garbage collection removes its pod, the ReplicaSet replaces it elsewhere, the job recovered", nodeDeleted, true},
		{dep, "the JobManager Deployment deleted while its ReplicaSet lives: recreated, one JobManager, the job recovered under its ID", deploymentDeleted, false},
		{dep, "a crash loop with real restart counts: CrashLoopBackOff reported, recovered when the container runs again", crashLoop, false},
		{job, "the JobManager pod deleted: the real Job controller fails the Job (tracking finalizer removed), the job Failed, no resubmission", jobPodDeleted, false},
	} {
		t.Run(string(tc.mode)+"/"+tc.name, func(t *testing.T) {
			if !tc.serial {
				t.Parallel()
			}
			tc.run(t, newHarness(t, tc.mode))
		})
	}
}

func deletePodRecovers(t *testing.T, h *harness) {
	pod, jm, id := h.runJob()
	require.Equal(t, "ReplicaSet", pod.OwnerReferences[0].Kind, "made by the real ReplicaSet controller")
	assert.True(t, strings.HasPrefix(pod.Spec.NodeName, "kwok-node-"), "scheduled onto a KWOK node")
	require.NotEmpty(t, jm.CompleteCheckpoint(id), "a checkpoint the recovery restores")
	require.NoError(t, k8s.Delete(h.ctx, pod))
	cur, ok := h.podNow(pod)
	require.True(t, ok, "Terminating through its preStop delay")
	assert.NotNil(t, cur.DeletionTimestamp)
	next := h.recoveredOn(id, pod.UID)
	h.noFailure()
	assert.NotEqual(t, pod.UID, next.UID)
	assert.False(t, jm.Alive(), "SIGTERM after preStop ended the old JobManager")
}

func forceDeletedPodRunsOn(t *testing.T, h *harness) {
	pod, jm, id := h.runJob()
	require.NoError(t, k8s.Delete(h.ctx, pod, client.GracePeriodSeconds(0)))
	_, njm := h.runningPod(pod.UID)
	h.eventually("the Simulator saw the pod go", func() bool { return sim.Process(h.ns, pod.Name) == nil })
	assert.True(t, jm.Alive(), "the force-deleted pod's container still runs")
	assert.True(t, jm.Leads(), "and still leads: its lease is renewed")
	assert.False(t, njm.Leads(), "the replacement stands by")
	assert.Equal(t, v1beta1.JobStateRunning, h.job().State, "the job runs, on the old JobManager")
	executions := 0
	for _, e := range h.flink.Executions() {
		if e.JobID == id && e.End.IsZero() {
			executions++
		}
	}
	assert.Equal(t, 1, executions, "one execution of the job at a time")
	// The container finally stops (the kubelet notices the pod gone): the replacement takes over.
	jm.Stop()
	h.eventually("the replacement leading", njm.Leads)
	h.eventually("the job Running under its ID on the replacement", func() bool { return njm.JobState(id) == flinkclient.JobStateRunning })
}

func nodeLost(t *testing.T, h *harness) {
	pod, jm, id := h.runJob()
	var tolerated int64
	for _, tol := range pod.Spec.Tolerations {
		if tol.Key == corev1.TaintNodeUnreachable && tol.TolerationSeconds != nil {
			tolerated = *tol.TolerationSeconds
		}
	}
	assert.Equal(t, resources.LostNodeTolerationSeconds, tolerated, "the JobManager's own toleration, not the API server's 300 s")
	node := pod.Spec.NodeName
	// The node loses power: its kubelet and the JobManager process stop together.
	stopped.Store(node, true)
	require.NoError(t, cp.StopNode(node))
	jm.Kill()
	t.Cleanup(func() { stopped.Delete(node); _ = cp.StartNode(node) })
	require.NoError(t, cp.WaitNodeReady(h.ctx, node, corev1.ConditionUnknown))
	h.eventually("the pod evicted once its toleration ran out", func() bool {
		p, ok := h.podNow(pod)
		return ok && p.DeletionTimestamp != nil
	})
	next := h.recoveredOn(id, pod.UID)
	h.noFailure()
	assert.NotEqual(t, node, next.Spec.NodeName, "the replacement runs on another node")
	p, ok := h.podNow(pod)
	require.True(t, ok, "the evicted pod stays Terminating: no kubelet confirms its end")
	assert.NotNil(t, p.DeletionTimestamp)

	// An update now: the pod stuck Terminating on the lost node does not lead (HA names the
	// replacement), so it must not block the next revision.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fc := h.get()
		fc.Spec.FlinkProperties["pipeline.name"] = "wordcount-v2"
		return k8s.Update(h.ctx, fc)
	}))
	// The update's savepoint ends the job and the HA data goes with it: no leader information
	// names the stuck pod any more, so the controller waits for it until LeaseGrace past its
	// deletion deadline (a JobManager cut off that long has lost its lease), then goes on.
	h.eventually("the update waiting for the lost node's pod", func() bool {
		for _, c := range h.get().Status.Conditions {
			if c.Type == "Waiting" && c.Reason == controller.ConditionReasonWaitingForJobManagerPods && strings.Contains(c.Message, pod.Name) {
				return true
			}
		}
		return false
	})
	if d := p.DeletionTimestamp.Add(state.LeaseGrace + time.Second).Sub(fakeClock.Now()); d > 0 {
		fakeClock.Step(d)
	}
	h.eventually("the next revision's job Running under a new job ID", func() bool {
		j := h.job()
		return j.State == v1beta1.JobStateRunning && j.ID != id && j.ID != ""
	})
	j := h.job()
	assert.NotEmpty(t, j.FromSavepoint, "the next deploy restores the update's savepoint")
	_, ok = h.podNow(pod)
	assert.True(t, ok, "the lost node's pod is still Terminating: it blocked nothing")
}

func nodeDeleted(t *testing.T, h *harness) {
	pod, jm, id := h.runJob()
	node := pod.Spec.NodeName
	stopped.Store(node, true)
	require.NoError(t, cp.DeleteNode(h.ctx, node))
	t.Cleanup(func() { stopped.Delete(node); _ = cp.AddNode(context.Background(), node) })
	h.eventually("pod garbage collection removes the deleted node's pod", func() bool { _, ok := h.podNow(pod); return !ok })
	h.eventually("the machine gone, its JobManager with it", func() bool { return !jm.Alive() })
	next := h.recoveredOn(id, pod.UID)
	h.noFailure()
	assert.NotEqual(t, node, next.Spec.NodeName)
}

func deploymentDeleted(t *testing.T, h *harness) {
	pod, _, id := h.runJob()
	d := h.deployment()
	require.NotNil(t, d)
	require.NoError(t, k8s.Delete(h.ctx, d, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	h.eventually("the Deployment recreated", func() bool { cur := h.deployment(); return cur != nil && cur.UID != d.UID })
	next := h.recoveredOn(id, pod.UID)
	h.noFailure()
	live := 0
	for _, p := range h.flink.Processes() {
		if p.Alive() {
			live++
		}
	}
	assert.Equal(t, 1, live, "one JobManager process: no pod of the old ReplicaSet left running beside %s", next.Name)
}

func crashLoop(t *testing.T, h *harness) {
	pod, _, id := h.runJob()
	// The container keeps crashing before Flink's REST API is up: the harness kills each new
	// process as soon as the Simulator starts it, as the kubelet would see it exit.
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if p := sim.Process(h.ns, pod.Name); p != nil && p.Alive() {
				p.Kill()
			}
		}
	}()
	h.eventually("CrashLoopBackOff after three restarts", func() bool {
		p, ok := h.podNow(pod)
		if !ok || len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		cs := p.Status.ContainerStatuses[0]
		return cs.RestartCount >= 3 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	h.eventually("the crash loop reported", func() bool {
		for _, c := range h.get().Status.Conditions {
			if c.Type == controller.ConditionDeploymentFailed && c.Status == metav1.ConditionTrue && c.Reason == "CrashLoopBackOff" {
				return true
			}
		}
		return false
	})
	assert.NotEqual(t, v1beta1.JobStateFailed, h.job().State, "a crash loop of a running job is not its end")
	close(done)
	h.recoveredOn(id)
	h.eventually("DeploymentFailed cleared", func() bool {
		for _, c := range h.get().Status.Conditions {
			if c.Type == controller.ConditionDeploymentFailed {
				return c.Status == metav1.ConditionFalse
			}
		}
		return false
	})
}

func jobPodDeleted(t *testing.T, h *harness) {
	pod, _, _ := h.runJob()
	require.Equal(t, "Job", pod.OwnerReferences[0].Kind, "made by the real Job controller")
	assert.Contains(t, pod.Finalizers, batchv1.JobTrackingFinalizer, "the Job controller tracks its pod with a finalizer")
	require.NoError(t, k8s.Delete(h.ctx, pod))
	h.waitJob(v1beta1.JobStateFailed)
	h.eventually("the pod gone once the Job controller counted it and removed its finalizer", func() bool { _, ok := h.podNow(pod); return !ok })
	j := h.job()
	assert.NotEmpty(t, j.FailureReasons)
	for _, p := range h.pods() {
		assert.NotEqual(t, corev1.PodRunning, p.Status.Phase, "no resubmission: %s", p.Name)
	}
}
