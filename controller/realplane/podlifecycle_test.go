package realplane_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// podLifecycleRows are pod lifecycles only the real control plane shows: a preStop cut short
// by the grace period, the Job controller's failure counting, a Job-mode JobManager on a lost
// node, and a Deployment scaled to 0 for a terminal job.
func podLifecycleRows() []scenario {
	// The spec cannot make preStop outlast the grace period (the CRD's rule): a delete's own
	// grace period can (kubectl delete --grace-period=5), and a node drain's too.
	longPreStop := func(w *builder.FlinkClusterWrapper) { w.Shutdown(60, 120) }
	keepOnFailure := func(w *builder.FlinkClusterWrapper) {
		w.CleanupPolicy(v1beta1.CleanupActionDeleteCluster, v1beta1.CleanupActionKeepCluster, v1beta1.CleanupActionDeleteCluster)
	}
	keepOnSuccess := func(w *builder.FlinkClusterWrapper) {
		w.CleanupPolicy(v1beta1.CleanupActionKeepCluster, v1beta1.CleanupActionDeleteCluster, v1beta1.CleanupActionDeleteCluster)
	}
	return []scenario{
		{mode: depMode, name: "+ preStop longer than the grace period: SIGKILL at the grace deadline, the lease left to expire, the ReplicaSet's replacement recovers the job under its ID", build: longPreStop, run: preStopBeyondGrace},
		{mode: jobMode, name: "+ preStop longer than the grace period: SIGKILL at the grace deadline, the Job controller counts the pod failed, the job Failed, no resubmission", build: longPreStop, run: preStopBeyondGrace},
		{mode: jobMode, name: "+ Job-mode pod failure counting: a crashed JobManager's Failed pod counted by the Job controller (tracking finalizer removed, backoffLimit 0, FailureTarget then Failed), the job Failed, nothing restarted", build: keepOnFailure, run: jobPodFailureCounted},
		{mode: jobMode, name: "+ Job-mode lost node: the pod is kept through its toleration (the default 300 s; shortened here by the user's), then evicted and Terminating forever; the Job's FailureTarget fails the job without waiting for the pod", build: shortLostNodeToleration, run: jobNodeLost, prepare: func(h *harness) { h.ownNodes(1) }},
		{mode: depMode, name: "+ scale to 0 for a terminal job: the ReplicaSet removes the pod after its preStop, no replacement, the job stays Succeeded", build: keepOnSuccess, run: scaledToZero},
	}
}

func preStopBeyondGrace(t *testing.T, h *harness) {
	pod, jm, id := h.runningJob()
	require.NotEmpty(t, jm.CompleteCheckpoint(id))
	require.NoError(t, k8s.Delete(h.ctx, pod, client.GracePeriodSeconds(5)))
	// The preStop hook (60 s) outlasts the delete's grace period (5 s): at the deletion deadline the
	// kubelet kills the container, SIGTERM never came, and the JobManager did not give up
	// its lease.
	h.eventually("the JobManager killed at the grace deadline", func() bool { return !jm.Alive() })
	status, _ := jm.ExitStatus()
	assert.Equal(t, fakeflink.ExitKilled, status.Code, "killed, not stopped by SIGTERM")
	h.eventually("the pod removed", func() bool { return !h.podExists(pod) })
	if h.deployment() {
		next := h.recoveredOn(id, pod.UID)
		h.noFailure()
		assert.Equal(t, "file:/checkpoints/"+id+"/chk-1", h.process(next).RestoredFrom(id), "recovered from its latest checkpoint")
		return
	}
	// Job mode: the deleted pod counts as a failure, and backoffLimit 0 fails the Job.
	fc := h.waitJob(v1beta1.JobStateFailed)
	assert.NotEmpty(t, fc.Status.Components.Job.FailureReasons)
	h.waitCluster(v1beta1.ClusterStateStopped)
	h.eventually("everything removed (afterJobFails DeleteCluster)", h.allGone)
	noResubmission(h, v1beta1.JobStateFailed, "")
}

func jobPodFailureCounted(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	require.Contains(t, pod.Finalizers, batchv1.JobTrackingFinalizer, "the Job controller tracks its pod")
	// Job mode keeps the API server's default toleration of a lost node (see
	// resources.LostNodeTolerationSeconds): an evicted JobManager pod ends the job.
	var tolerated *int64
	for _, tol := range pod.Spec.Tolerations {
		if tol.Key == corev1.TaintNodeUnreachable {
			tolerated = tol.TolerationSeconds
		}
	}
	require.NotNil(t, tolerated, "a toleration of an unreachable node")
	assert.Equal(t, int64(300), *tolerated, "the API server's default")
	// The JobManager crashes (an OOM kill): restartPolicy Never, the pod is Failed.
	h.process(pod).Kill()
	fc := h.waitJob(v1beta1.JobStateFailed)
	assert.Regexp(t, failedPodOrJob, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"))
	h.waitConditions("DeploymentFailed=False/NoFailure", "Lost=False/JobTracked")
	var j *batchv1.Job
	h.eventually("the Job Failed", func() bool {
		j = &batchv1.Job{}
		require.NoError(t, k8s.Get(h.ctx, client.ObjectKeyFromObject(wl), j))
		return jobCondition(j, batchv1.JobFailed) != nil
	})
	target, failed := jobCondition(j, batchv1.JobFailureTarget), jobCondition(j, batchv1.JobFailed)
	require.NotNil(t, target, "the Job controller marks the failure target first")
	assert.Equal(t, "BackoffLimitExceeded", target.Reason)
	assert.False(t, failed.LastTransitionTime.Before(&target.LastTransitionTime), "FailureTarget (%s) before Failed (%s)", target.LastTransitionTime, failed.LastTransitionTime)
	assert.Equal(t, int32(1), j.Status.Failed, "one failed pod counted")
	p, ok := h.podNow(pod)
	require.True(t, ok, "afterJobFails KeepCluster keeps the Job and its pod")
	assert.Equal(t, corev1.PodFailed, p.Status.Phase)
	assert.NotContains(t, p.Finalizers, batchv1.JobTrackingFinalizer, "counted: the tracking finalizer removed")
	h.waitCluster(v1beta1.ClusterStatePartiallyStopped)
	noResubmission(h, v1beta1.JobStateFailed, string(wl.GetUID()))
}

// shortLostNodeToleration gives the JobManager pod the user's own toleration of a lost node,
// 20 s instead of the API server's 300 s default, to keep the row short; the eviction follows
// the same path.
func shortLostNodeToleration(w *builder.FlinkClusterWrapper) {
	w.JobManager(func(jm *v1beta1.JobManagerSpec) {
		for _, key := range []string{corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady} {
			jm.Tolerations = append(jm.Tolerations, corev1.Toleration{
				Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](20),
			})
		}
	})
}

func jobNodeLost(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	jm, id := h.process(pod), h.jobID()
	node := pod.Spec.NodeName
	// The node loses power: its kubelet and the JobManager process stop together.
	stopped.Store(node, true)
	require.NoError(t, cp.StopNode(node))
	jm.Kill()
	// The node is the row's own: it goes with the row (ownNodes).
	require.NoError(t, cp.WaitNodeReady(h.ctx, node, corev1.ConditionUnknown))
	// Within the toleration the pod stays bound to the node: nothing is decided yet.
	p, ok := h.podNow(pod)
	require.True(t, ok)
	require.Nil(t, p.DeletionTimestamp, "kept through its toleration")
	h.afterReconciles("the job not failed while the node may come back", func() bool {
		return h.jobState() != v1beta1.JobStateFailed
	})
	h.eventually("the pod evicted once its toleration ran out", func() bool {
		p, ok := h.podNow(pod)
		return ok && p.DeletionTimestamp != nil
	})
	// No kubelet confirms the pod's end: it stays Terminating, and the Job controller marks
	// the Job's failure target but holds Failed until its pods are terminal. The controller
	// takes the failure target for the Job's end.
	fc := h.waitJob(v1beta1.JobStateFailed)
	assert.Contains(t, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"), "BackoffLimitExceeded")
	j := &batchv1.Job{}
	if err := k8s.Get(h.ctx, client.ObjectKeyFromObject(wl), j); err == nil {
		assert.NotNil(t, jobCondition(j, batchv1.JobFailureTarget), "the Job controller's failure target")
	}
	_, ok = h.podNow(pod)
	assert.True(t, ok, "the evicted pod is still Terminating on the lost node")
	assert.Equal(t, id, h.jobID())
	for _, p := range h.jmPods() {
		assert.Equal(t, pod.UID, p.UID, "no resubmission: %s", p.Name)
	}
}

func scaledToZero(t *testing.T, h *harness) {
	pod, _, id := h.runningJob()
	h.process(pod).SetJobState(id, flinkclient.JobStateFinished)
	fc := h.waitJob(v1beta1.JobStateSucceeded)
	assert.NotNil(t, fc.Status.Components.Job.CompletionTime)
	h.eventually("the JobManager Deployment scaled to 0", func() bool {
		d := h.jmDeployment()
		return d != nil && ptr.Deref(d.Spec.Replicas, 1) == 0
	})
	h.eventually("the ReplicaSet removed the pod", func() bool { return len(h.jmPods()) == 0 })
	h.waitConditions("JobManagerReady=False/ScaledToZero")
	status, ok := h.flink.Process(pod.Name).ExitStatus()
	require.True(t, ok)
	assert.Equal(t, fakeflink.ExitTerminated, status.Code, "SIGTERM after the preStop delay")
	h.waitCluster(v1beta1.ClusterStatePartiallyStopped)
	d := h.jmDeployment()
	noResubmission(h, v1beta1.JobStateSucceeded, string(d.UID))
	assert.Empty(t, h.jmPods(), "no replacement")
	runs := 0
	for _, e := range h.flink.Executions() {
		if e.JobID == id {
			runs++
		}
	}
	assert.Equal(t, 1, runs, "the job ran once")
}

func jobCondition(j *batchv1.Job, typ batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		if c := &j.Status.Conditions[i]; c.Type == typ && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}
