package realplane_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// realPlaneRows are the rows that need the real parts in particular. Those that stop or
// delete a node do it to nodes of their own (ownNodes): every pod on a lost node is lost with
// it, and no other row's pod runs there.
func realPlaneRows() []scenario {
	return []scenario{
		{mode: depMode, name: "the ReplicaSet's pod on a KWOK node runs the job; a deleted pod runs preStop, is replaced by the ReplicaSet, the job recovered under its ID", run: deletePodRecovers},
		{mode: depMode, name: "a force-deleted pod's JobManager runs on: the replacement waits for its lease, the job stays one execution", run: forceDeletedPodRunsOn},
		{mode: depMode, name: "a node lost (heartbeats stop): tainted, the pod evicted after the JobManager's 30 s toleration and Terminating forever, the job recovered on another node; an update then waits for the stuck pod only until LeaseGrace past its deletion deadline", run: nodeLost, prepare: func(h *harness) { h.ownNodes(2) }, build: func(w *builder.FlinkClusterWrapper) { w.Grace(20) },
			// It steps the shared clock by LeaseGrace: run beside others, it expired their leaders' leases and the
			// grace of their Terminating pods (an update went on while its old leader was still held in preStop).
			serial: true},
		{mode: depMode, name: "a deleted node: pod garbage collection removes its pod, the ReplicaSet replaces it elsewhere, the job recovered", run: nodeDeleted, prepare: func(h *harness) { h.ownNodes(2) }},
		{mode: depMode, name: "the JobManager Deployment deleted while its ReplicaSet lives: recreated, one JobManager, the job recovered under its ID", run: deploymentDeleted},
		{mode: depMode, name: "a crash loop with real restart counts: CrashLoopBackOff reported, recovered when the container runs again", run: crashLoop},
		{mode: jobMode, name: "the JobManager pod deleted: the real Job controller fails the Job (tracking finalizer removed), the job Failed, no resubmission", run: jobPodDeleted},
	}
}

func deletePodRecovers(t *testing.T, h *harness) {
	pod, jm, id := h.runningJob()
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
	pod, jm, id := h.runningJob()
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
	pod, jm, id := h.runningJob()
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
	// The node is the row's own: it goes with the row (ownNodes).
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
	// The replacement, scaled down by the update, ends on real time within its grace; the
	// step below moves only the controller's and Flink's clock. Were the replacement deleted
	// within a second of the lost pod's eviction, the step would also take it past its
	// deadline and LeaseGrace while its process still ran (and led): no such JobManager
	// exists on a real cluster, where the kubelet kills it at its deadline.
	h.eventually("the replacement's pod gone", func() bool { return !h.podExists(next) })
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
	pod, jm, id := h.runningJob()
	node := pod.Spec.NodeName
	stopped.Store(node, true)
	require.NoError(t, cp.DeleteNode(h.ctx, node))
	// The node is the row's own: nothing to restore.
	h.eventually("pod garbage collection removes the deleted node's pod", func() bool { _, ok := h.podNow(pod); return !ok })
	h.eventually("the machine gone, its JobManager with it", func() bool { return !jm.Alive() })
	next := h.recoveredOn(id, pod.UID)
	h.noFailure()
	assert.NotEqual(t, node, next.Spec.NodeName)
}

func deploymentDeleted(t *testing.T, h *harness) {
	pod, _, id := h.runningJob()
	d := h.jmDeployment()
	require.NotNil(t, d)
	require.NoError(t, k8s.Delete(h.ctx, d, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	h.eventually("the Deployment recreated", func() bool { cur := h.jmDeployment(); return cur != nil && cur.UID != d.UID })
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
	pod, _, id := h.runningJob()
	// The container keeps crashing before Flink's REST API is up.
	stopCrashing := h.keepCrashing(pod)
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
	stopCrashing()
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
	pod, _, _ := h.runningJob()
	require.Equal(t, "Job", pod.OwnerReferences[0].Kind, "made by the real Job controller")
	assert.Contains(t, pod.Finalizers, batchv1.JobTrackingFinalizer, "the Job controller tracks its pod with a finalizer")
	require.NoError(t, k8s.Delete(h.ctx, pod))
	h.waitJob(v1beta1.JobStateFailed)
	h.eventually("the pod gone once the Job controller counted it and removed its finalizer", func() bool { _, ok := h.podNow(pod); return !ok })
	j := h.job()
	assert.NotEmpty(t, j.FailureReasons)
	for _, p := range h.jmPods() {
		assert.NotEqual(t, corev1.PodRunning, p.Status.Phase, "no resubmission: %s", p.Name)
	}
}
