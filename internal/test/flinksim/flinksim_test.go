package flinksim_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
	"github.com/flink-admission/flink-admission/internal/test/flinksim"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

var (
	cp     *testenv.ControlPlane
	k8s    client.Client
	scheme = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	code := func() int {
		var err error
		if cp, err = testenv.StartControlPlane(testenv.ControlPlaneOptions{Nodes: 2}); err != nil {
			fmt.Fprintln(os.Stderr, "control plane:", err)
			return 1
		}
		defer func() { _ = cp.Stop() }()
		_ = clientgoscheme.AddToScheme(scheme)
		_ = v1beta1.AddToScheme(scheme)
		if k8s, err = client.New(cp.Config, client.Options{Scheme: scheme}); err != nil {
			fmt.Fprintln(os.Stderr, "client:", err)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

// row is one FlinkCluster in its own namespace, with its own fake Flink and Simulator (whose
// preStop delays and back-off run on clock).
type row struct {
	t     *testing.T
	ctx   context.Context
	ns    string
	fc    *v1beta1.FlinkCluster
	flink *fakeflink.Cluster
	clock *clocktesting.FakeClock
	sim   *flinksim.Simulator
	jobID string
	// configMap is the cluster's Flink configuration.
	configMap *corev1.ConfigMap

	mu    sync.Mutex
	exits []fakeflink.ExitStatus
}

var nsSeq atomic.Int64

func newRow(t *testing.T, build func(w *builder.FlinkClusterWrapper), program fakeflink.Program) *row {
	t.Helper()
	return newRowWith(t, build, program, false)
}

// newRowWith is newRow; with configMapLater the row's Flink configuration is not created
// (row.configMap is, for the test to create when it chooses).
func newRowWith(t *testing.T, build func(w *builder.FlinkClusterWrapper), program fakeflink.Program, configMapLater bool) *row {
	t.Helper()
	r := &row{t: t, ctx: context.Background(), ns: fmt.Sprintf("sim%d", nsSeq.Add(1)), jobID: flinkclient.NewID(),
		clock: clocktesting.NewFakeClock(time.Now())}
	require.NoError(t, k8s.Create(r.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}}))
	w := builder.MakeAppCluster("wc").Namespace(r.ns).UID("")
	if build != nil {
		build(w)
	}
	r.fc = w.Obj()
	require.NoError(t, k8s.Create(r.ctx, r.fc))
	r.flink = fakeflink.NewCluster(fakeflink.Options{
		ClusterID: resources.HAClusterID(r.fc), Version: fakeflink.Version(r.fc.Spec.FlinkVersion),
		HA: &fakeflink.KubeHA{Client: k8s, Namespace: r.ns}, Program: program, InProcess: true,
	})
	d := resources.Deploy{Revision: "wc-r1", JobID: r.jobID}
	cm, err := resources.ConfigMap(r.fc, d)
	require.NoError(t, err)
	r.configMap = cm
	if !configMapLater {
		require.NoError(t, k8s.Create(r.ctx, cm))
	}
	r.sim, err = flinksim.New(flinksim.Options{
		Config: cp.Config, Scheme: scheme, Namespace: r.ns, Clock: r.clock, Log: testr.NewWithOptions(t, testr.Options{Verbosity: 1}),
		BackOff: 10 * time.Second, MaxBackOff: 40 * time.Second,
		Clusters: func(context.Context, *v1beta1.FlinkCluster) *fakeflink.Cluster { return r.flink },
		OnExit: func(_ *corev1.Pod, _ *fakeflink.JobManager, s fakeflink.ExitStatus) {
			r.mu.Lock()
			r.exits = append(r.exits, s)
			r.mu.Unlock()
		},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan error, 1)
	go func() { done <- r.sim.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
		r.flink.Close()
		if t.Failed() {
			t.Log(cp.Logs())
		}
	})
	if r.fc.Spec.JobManager.DeploymentType == v1beta1.JobManagerDeploymentTypeDeployment {
		require.NoError(t, k8s.Create(r.ctx, resources.JobManagerDeployment(r.fc, d, 1)))
	} else {
		require.NoError(t, k8s.Create(r.ctx, resources.JobManagerJob(r.fc, d)))
	}
	return r
}

func (r *row) eventually(what string, cond func() bool) {
	r.t.Helper()
	require.Eventually(r.t, cond, 60*time.Second, 20*time.Millisecond, what)
}

// pod waits for a JobManager pod other than not that satisfies cond.
func (r *row) pod(not types.UID, what string, cond func(p *corev1.Pod) bool) *corev1.Pod {
	r.t.Helper()
	var found *corev1.Pod
	r.eventually(what, func() bool {
		list := &corev1.PodList{}
		if err := k8s.List(r.ctx, list, client.InNamespace(r.ns)); err != nil {
			return false
		}
		for i := range list.Items {
			if p := &list.Items[i]; p.UID != not && cond(p) {
				found = p
				return true
			}
		}
		return false
	})
	return found
}

func (r *row) get(p *corev1.Pod) (*corev1.Pod, bool) {
	cur := &corev1.Pod{}
	err := k8s.Get(r.ctx, client.ObjectKeyFromObject(p), cur)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(r.t, err)
	return cur, true
}

func running(p *corev1.Pod) bool {
	return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil && p.DeletionTimestamp == nil
}

// process waits for the live process of pod.
func (r *row) process(p *corev1.Pod) *fakeflink.JobManager {
	r.t.Helper()
	var jm *fakeflink.JobManager
	r.eventually("a process for pod "+p.Name, func() bool {
		jm = r.sim.Process(r.ns, p.Name)
		return jm != nil && jm.Alive()
	})
	return jm
}

func (r *row) annotate(p *corev1.Pod, k, v string) {
	r.t.Helper()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, k, v)
	require.NoError(r.t, k8s.Patch(r.ctx, p, client.RawPatch(types.MergePatchType, patch)))
}

func (r *row) exitStatuses() []fakeflink.ExitStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]fakeflink.ExitStatus(nil), r.exits...)
}

func TestSimulator(t *testing.T) {
	dep := func(w *builder.FlinkClusterWrapper) { w.Deployment() }
	rows := []struct {
		name    string
		build   func(w *builder.FlinkClusterWrapper)
		program fakeflink.Program
		run     func(t *testing.T, r *row)
	}{
		{"Deployment: the ReplicaSet's running pod gets a JobManager that runs the pod's job ID at the pod's IP, and the user's annotations drive it", dep, fakeflink.Program{}, annotationsDriveTheJob},
		{"Deployment: a JobManager that exits restarts at once, then in CrashLoopBackOff with the kubelet's doubling back-off", dep, fakeflink.Program{}, crashLoopRestarts},
		{"Deployment: a graceful delete runs the preStop delay, then SIGTERM gives up the leadership and KWOK removes the pod", func(w *builder.FlinkClusterWrapper) { w.Deployment().Shutdown(30, 120) }, fakeflink.Program{}, gracefulDelete},
		{"Deployment: a force-deleted pod's JobManager runs on", dep, fakeflink.Program{}, forceDeleteKeepsProcess},
		{"Job: the application ending FINISHED leaves the JobManager up (the controller's shutdown-on-application-finish false); DELETE /cluster exits it 0, the pod Succeeded and the real Job controller completes the Job", nil, fakeflink.Program{}, jobApplicationFinishes},
		{"Job: main() throwing on Flink 2.2 exits 2 (a fatal error) with the cause as termination message, the pod Failed and the Job Failed", nil, fakeflink.Program{Throw: "java.lang.NumberFormatException: For input string: \"x\""}, jobMainThrows},
		{"Deployment: job=RESTARTING plays a failover: the stop-with-savepoint fails at once, an unknown value changes nothing, RUNNING again lets the stop through", dep, fakeflink.Program{}, failoverThenRunning},
		{"Deployment: savepoints=hold keeps a savepoint IN_PROGRESS until the annotation says ok", func(w *builder.FlinkClusterWrapper) {
			w.Deployment().JobManagerPodAnnotation(flinksim.SavepointsAnnotation, "hold")
		}, fakeflink.Program{}, savepointsHeld},
		{"Deployment: startup=fail in the pod template crash-loops the container from its first start with the entrypoint's error, no Flink attached; removed, the next start runs Flink", func(w *builder.FlinkClusterWrapper) {
			w.Deployment().JobManagerPodAnnotation(flinksim.StartupAnnotation, "fail")
		}, fakeflink.Program{}, startupFails},
		{"Deployment: the job checkpoints every execution.checkpointing.interval of the cluster's configuration into the HA ConfigMap, and a restarted container restores the newest", func(w *builder.FlinkClusterWrapper) {
			w.Deployment().FlinkProperty(fakeflink.PropCheckpointInterval, "10 s")
		}, fakeflink.Program{}, checkpointsEveryInterval},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newRow(t, tc.build, tc.program))
		})
	}
}

func annotationsDriveTheJob(t *testing.T, r *row) {
	pod := r.pod("", "a running JobManager pod", running)
	require.Len(t, pod.OwnerReferences, 1)
	assert.Equal(t, "ReplicaSet", pod.OwnerReferences[0].Kind)
	jm := r.process(pod)
	assert.Equal(t, "http://"+pod.Status.PodIP+":8081", jm.Address())
	r.eventually("the job RUNNING under the pod's job ID", func() bool { return jm.Leads() && jm.JobState(r.jobID) == flinkclient.JobStateRunning })

	r.annotate(pod, flinksim.SavepointsAnnotation, "fail")
	r.annotate(pod, flinksim.JobAnnotation, "FAILED")
	r.eventually("the job FAILED", func() bool { return jm.JobState(r.jobID) == flinkclient.JobStateFailed })
	assert.True(t, jm.Alive(), "a Deployment's JobManager stays up after its job ended (shutdown-on-application-finish false)")
	assert.Equal(t, flinkclient.JobStateFailed, r.flink.Executions()[0].State)
}

func crashLoopRestarts(t *testing.T, r *row) {
	pod := r.pod("", "a running JobManager pod", running)
	first := r.process(pod)
	first.Kill()
	var cur *corev1.Pod
	r.eventually("restart count 1 and a new process at once", func() bool {
		cur, _ = r.get(pod)
		jm := r.sim.Process(r.ns, pod.Name)
		return cur != nil && cur.Status.ContainerStatuses[0].RestartCount == 1 && running(cur) && jm != nil && jm != first && jm.Alive()
	})
	last := cur.Status.ContainerStatuses[0].LastTerminationState.Terminated
	require.NotNil(t, last)
	assert.Equal(t, fakeflink.ExitKilled, last.ExitCode)

	second := r.process(pod)
	second.Kill()
	r.eventually("CrashLoopBackOff after the second exit", func() bool {
		cur, _ = r.get(pod)
		cs := cur.Status.ContainerStatuses[0]
		return cs.RestartCount == 2 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	assert.Contains(t, cur.Status.ContainerStatuses[0].State.Waiting.Message, "back-off 10s")
	assert.Equal(t, corev1.PodRunning, cur.Status.Phase, "a restarting container's pod stays Running")
	r.clock.Step(9 * time.Second)
	require.NoError(t, r.sim.Settle(r.ctx))
	cur, _ = r.get(pod)
	require.NotNil(t, cur.Status.ContainerStatuses[0].State.Waiting, "still backing off before 10 s")
	r.clock.Step(time.Second)
	r.eventually("running again after the back-off", func() bool {
		cur, _ = r.get(pod)
		return running(cur) && r.sim.Process(r.ns, pod.Name) != second && r.sim.Process(r.ns, pod.Name).Alive()
	})
	r.process(pod).Kill()
	r.eventually("the next back-off doubles", func() bool {
		cur, _ = r.get(pod)
		w := cur.Status.ContainerStatuses[0].State.Waiting
		return w != nil && cur.Status.ContainerStatuses[0].RestartCount == 3
	})
	assert.Contains(t, cur.Status.ContainerStatuses[0].State.Waiting.Message, "back-off 20s")
}

func gracefulDelete(t *testing.T, r *row) {
	pod := r.pod("", "a running JobManager pod", running)
	jm := r.process(pod)
	r.eventually("the process leads", jm.Leads)
	require.NoError(t, k8s.Delete(r.ctx, pod))
	require.NoError(t, r.sim.Settle(r.ctx))
	cur, ok := r.get(pod)
	require.True(t, ok, "Terminating in its preStop delay")
	assert.NotNil(t, cur.DeletionTimestamp)
	assert.True(t, jm.Alive(), "the JobManager runs through its preStop delay")
	r.clock.Step(30 * time.Second)
	r.eventually("the pod removed once its container stopped", func() bool { _, ok := r.get(pod); return !ok })
	assert.False(t, jm.Alive())
	assert.Equal(t, []fakeflink.ExitStatus{{Code: fakeflink.ExitTerminated}}, r.exitStatuses(), "SIGTERM after preStop")
	next := r.pod(pod.UID, "the ReplicaSet's replacement running", running)
	r.eventually("the replacement leads at once: the stopped leader gave up its lease", r.process(next).Leads)
}

func forceDeleteKeepsProcess(t *testing.T, r *row) {
	pod := r.pod("", "a running JobManager pod", running)
	jm := r.process(pod)
	require.NoError(t, k8s.Delete(r.ctx, pod, client.GracePeriodSeconds(0)))
	next := r.pod(pod.UID, "the ReplicaSet's replacement running", running)
	r.process(next)
	r.eventually("the Simulator saw the pod go", func() bool { return r.sim.Process(r.ns, pod.Name) == nil })
	assert.True(t, jm.Alive(), "nothing stopped the force-deleted pod's container")
	assert.Empty(t, r.exitStatuses())
}

func jobApplicationFinishes(t *testing.T, r *row) {
	pod := r.pod("", "a running JobManager pod", running)
	require.Equal(t, "Job", pod.OwnerReferences[0].Kind)
	jm := r.process(pod)
	r.eventually("the job RUNNING", func() bool { return jm.Leads() && jm.JobState(r.jobID) == flinkclient.JobStateRunning })
	r.annotate(pod, flinksim.JobAnnotation, "FINISHED")
	r.eventually("the job FINISHED", func() bool { return jm.JobState(r.jobID) == flinkclient.JobStateFinished })
	// Rounds of the Simulator pass (its period is 20 ms): the process outlives its job.
	time.Sleep(200 * time.Millisecond)
	require.True(t, jm.Alive(), "the JobManager stays up after its job ended, for the controller to read its end")
	cur, _ := r.get(pod)
	require.Equal(t, corev1.PodRunning, cur.Status.Phase)

	// What the controller does once it recorded the end.
	cl, err := flinkclient.New(r.flink.URL(), r.flink.HTTPClient())
	require.NoError(t, err)
	require.NoError(t, cl.ShutdownCluster(r.ctx))
	r.eventually("the pod Succeeded", func() bool { cur, ok := r.get(pod); return ok && cur.Status.Phase == corev1.PodSucceeded })
	cur, _ = r.get(pod)
	assert.Equal(t, int32(0), cur.Status.ContainerStatuses[0].State.Terminated.ExitCode)
	r.eventually("the Job Complete", func() bool { return jobCondition(r, batchv1.JobComplete) })
}

func jobMainThrows(t *testing.T, r *row) {
	pod := r.pod("", "a JobManager pod whose container ended", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	term := pod.Status.ContainerStatuses[0].State.Terminated
	require.NotNil(t, term)
	assert.Equal(t, fakeflink.ExitRuntimeFailure, term.ExitCode)
	assert.Contains(t, term.Message, `java.lang.NumberFormatException: For input string: "x"`)
	r.eventually("the Job Failed", func() bool { return jobCondition(r, batchv1.JobFailed) })
}

func jobCondition(r *row, typ batchv1.JobConditionType) bool {
	j := &batchv1.Job{}
	if err := k8s.Get(r.ctx, types.NamespacedName{Namespace: r.ns, Name: resources.JobManagerName("wc")}, j); err != nil {
		return false
	}
	for _, c := range j.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// restClient reaches the row's simulated Flink as the controller does, through its Service.
func (r *row) restClient() *flinkclient.HTTPClient {
	r.t.Helper()
	cl, err := flinkclient.New(r.flink.URL(), r.flink.HTTPClient())
	require.NoError(r.t, err)
	return cl
}

func failoverThenRunning(t *testing.T, r *row) {
	pod := r.pod("", "a running JobManager pod", running)
	jm := r.process(pod)
	r.eventually("the job RUNNING", func() bool { return jm.Leads() && jm.JobState(r.jobID) == flinkclient.JobStateRunning })
	r.annotate(pod, flinksim.JobAnnotation, "RESTARTING")
	r.eventually("the job RESTARTING", func() bool { return jm.JobState(r.jobID) == flinkclient.JobStateRestarting })
	cl := r.restClient()
	ex, err := cl.GetExceptions(r.ctx, r.jobID)
	require.NoError(t, err)
	require.NotEmpty(t, ex)
	assert.Contains(t, ex[0].StackTrace, "Heartbeat of TaskManager", "the failover is in the exception history")
	tid, err := cl.StopWithSavepoint(r.ctx, r.jobID, flinkclient.SavepointRequest{TriggerID: flinkclient.NewID()})
	require.NoError(t, err)
	st, err := cl.SavepointStatus(r.ctx, r.jobID, tid)
	require.NoError(t, err)
	assert.True(t, st.Completed())
	assert.Contains(t, st.FailureCause, "not running (RESTARTING)")

	r.annotate(pod, flinksim.JobAnnotation, "BOGUS")
	require.NoError(t, r.sim.Settle(r.ctx))
	assert.Equal(t, flinkclient.JobStateRestarting, jm.JobState(r.jobID), "an unknown value is ignored")
	assert.True(t, jm.Alive())

	r.annotate(pod, flinksim.JobAnnotation, "running")
	r.eventually("the job RUNNING again", func() bool { return jm.JobState(r.jobID) == flinkclient.JobStateRunning })
	tid, err = cl.StopWithSavepoint(r.ctx, r.jobID, flinkclient.SavepointRequest{TriggerID: flinkclient.NewID()})
	require.NoError(t, err)
	st, err = cl.SavepointStatus(r.ctx, r.jobID, tid)
	require.NoError(t, err)
	assert.True(t, st.Succeeded())
	assert.Equal(t, flinkclient.JobStateFinished, jm.JobState(r.jobID))
}

func savepointsHeld(t *testing.T, r *row) {
	pod := r.pod("", "a running JobManager pod", running)
	jm := r.process(pod)
	r.eventually("the job RUNNING", func() bool { return jm.Leads() && jm.JobState(r.jobID) == flinkclient.JobStateRunning })
	// Two rounds: the new process has taken in its pod's annotations.
	require.NoError(t, r.sim.Settle(r.ctx))
	cl := r.restClient()
	tid, err := cl.TriggerSavepoint(r.ctx, r.jobID, flinkclient.SavepointRequest{TriggerID: flinkclient.NewID()})
	require.NoError(t, err)
	r.flink.Advance(time.Hour)
	for range 3 {
		st, err := cl.SavepointStatus(r.ctx, r.jobID, tid)
		require.NoError(t, err)
		require.Equal(t, flinkclient.OperationInProgress, st.State, "held however long and often it is polled")
	}
	r.annotate(pod, flinksim.SavepointsAnnotation, "ok")
	var st *flinkclient.SavepointStatus
	r.eventually("the held savepoint completes", func() bool {
		st, err = cl.SavepointStatus(r.ctx, r.jobID, tid)
		return err == nil && st.Completed()
	})
	assert.True(t, st.Succeeded())
}

func startupFails(t *testing.T, r *row) {
	var cur *corev1.Pod
	pod := r.pod("", "the container failing at its starts into CrashLoopBackOff", func(p *corev1.Pod) bool {
		if len(p.Status.ContainerStatuses) != 1 {
			return false
		}
		cs := p.Status.ContainerStatuses[0]
		cur = p
		return cs.RestartCount >= 2 && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	last := cur.Status.ContainerStatuses[0].LastTerminationState.Terminated
	require.NotNil(t, last)
	assert.Equal(t, fakeflink.ExitStartupFailure, last.ExitCode)
	assert.Contains(t, last.Message, "ClusterEntrypointException")
	assert.Contains(t, last.Message, flinksim.StartupAnnotation+"=fail")
	assert.Nil(t, r.sim.Process(r.ns, pod.Name), "no simulated JobManager attached")
	assert.Empty(t, r.flink.Processes(), "no Flink process ever ran")

	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null}}}`, flinksim.StartupAnnotation)
	require.NoError(t, k8s.Patch(r.ctx, pod, client.RawPatch(types.MergePatchType, patch)))
	require.NoError(t, r.sim.Settle(r.ctx))
	r.clock.Step(40 * time.Second) // past any back-off
	jm := r.process(pod)
	r.eventually("the job RUNNING", func() bool { return jm.Leads() && jm.JobState(r.jobID) == flinkclient.JobStateRunning })
}

// TestSimulatorRetriesWhatItCouldNotRead guards the Simulator's own reads: a running pod
// whose configuration it could not read (here not there yet; under load, an API server that
// timed out) gets its JobManager once the read succeeds, rather than never.
func TestSimulatorRetriesWhatItCouldNotRead(t *testing.T) {
	t.Parallel()
	r := newRowWith(t, func(w *builder.FlinkClusterWrapper) { w.Deployment() }, fakeflink.Program{}, true)
	pod := r.pod("", "a running JobManager pod", running)
	require.NoError(t, r.sim.Settle(r.ctx))
	assert.Nil(t, r.sim.Process(r.ns, pod.Name), "no JobManager without its configuration")

	require.NoError(t, k8s.Create(r.ctx, r.configMap))
	jm := r.process(pod)
	r.eventually("the job RUNNING", func() bool { return jm.Leads() && jm.JobState(r.jobID) == flinkclient.JobStateRunning })
}

func checkpointsEveryInterval(t *testing.T, r *row) {
	pod := r.pod("", "a running JobManager pod", running)
	jm := r.process(pod)
	r.eventually("the job RUNNING", func() bool { return jm.Leads() && jm.JobState(r.jobID) == flinkclient.JobStateRunning })
	r.flink.Advance(25 * time.Second)
	cps, err := r.restClient().GetCheckpoints(r.ctx, r.jobID)
	require.NoError(t, err)
	assert.Equal(t, int64(2), cps.Counts.Completed, "at 10 s and 20 s")
	require.NotNil(t, cps.Latest.Completed)
	newest := cps.Latest.Completed.ExternalPath
	cm := &corev1.ConfigMap{}
	require.NoError(t, k8s.Get(r.ctx, types.NamespacedName{Namespace: r.ns, Name: flinkha.JobConfigMapName(resources.HAClusterID(r.fc), r.jobID)}, cm))
	assert.Equal(t, []int64{2}, flinkha.CheckpointIDs(cm), "the newest in the HA ConfigMap")

	jm.Kill()
	r.flink.Advance(time.Minute) // the dead leader's lease expires
	next := r.pod("", "the container restarted", func(p *corev1.Pod) bool {
		return running(p) && p.Status.ContainerStatuses[0].RestartCount == 1
	})
	nextJM := r.process(next)
	r.eventually("the restarted JobManager leads", nextJM.Leads)
	assert.Equal(t, newest, nextJM.RestoredFrom(r.jobID))
}
