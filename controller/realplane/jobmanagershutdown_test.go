package realplane_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// TestJobManagerShutDownByAnotherIsNoSuccess: Job mode on the real control plane. Someone
// else's DELETE /cluster ends the JobManager with exit 0 while its job runs: the kubelet
// (KWOK, through the Simulator) reports the pod Succeeded and the real Job controller marks
// the JobManager Job Complete. With no end of the job on record that says that the job
// ended, not how: it is Lost, ended unobserved, never Succeeded, and nothing is cleaned up.
func TestJobManagerShutDownByAnotherIsNoSuccess(t *testing.T) {
	t.Parallel()
	// KeepCluster for every end, so that a job taken for Succeeded keeps its Job to look at.
	keep := v1beta1.CleanupActionKeepCluster
	h := newHarness(t, jobMode, func(w *builder.FlinkClusterWrapper) { w.CleanupPolicy(keep, keep, keep) })
	pod, jm, id := h.runningJob()
	cl, err := flinkclient.New(jm.URL(), jm.HTTPClient())
	require.NoError(t, err)
	require.NoError(t, cl.ShutdownCluster(h.ctx), "someone else's DELETE /cluster")
	st, ok := jm.ExitStatus()
	require.True(t, ok)
	require.Equal(t, fakeflink.ExitSucceeded, st.Code)

	h.eventually("the JobManager pod Succeeded and its Job Complete", func() bool {
		p, ok := h.podNow(pod)
		j := &batchv1.Job{}
		if !ok || p.Status.Phase != corev1.PodSucceeded || !h.exists(j, resources.JobManagerName(h.name)) {
			return false
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
	h.eventually("the controller to take in the JobManager's end", func() bool { return h.jobState() != v1beta1.JobStateRunning })
	require.Equal(t, v1beta1.JobStateLost, h.jobState(), "a completed Job without the job's end on record is no success")
	fc := h.waitConditions("Lost=True/EndedUnobserved")
	assert.Equal(t, id, fc.Status.Components.Job.ID)
	assert.Contains(t, h.condition(controller.ConditionLost).Message, "DELETE /cluster")
	h.afterReconciles("the job Lost, not Succeeded, and the Job kept", func() bool {
		return h.jobState() == v1beta1.JobStateLost && h.exists(&batchv1.Job{}, resources.JobManagerName(h.name))
	})
	assert.NotEqual(t, v1beta1.ClusterStateStopped, h.get().Status.State, "no cleanup policy applies")
	for _, e := range h.events() {
		assert.NotEqual(t, controller.ReasonJobManagerShutdown, e.Reason, "the controller asked no shutdown: %s", e.Note)
	}
}
