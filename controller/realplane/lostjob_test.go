package realplane_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// A Job-mode job ended by the Lost timeout leaves no JobManager running for ever: its main()
// never reaches execute() (Flink 2.2 lists no job), the job is Lost past the HA grace and
// afterJobFails (DeleteTaskManager) applies past the Lost timeout. The controller shuts the
// JobManager down (DELETE /cluster), the real Job controller marks the Job Complete, its pod
// (and log) stays, the TaskManagers go, and the job stays Lost. It moves the shared clock by
// minutes, so it runs alone: not parallel, and the clock is set back to the real time when
// it ends.
func TestLostTimeoutEndsTheJobManagerJob(t *testing.T) {
	resetClock()
	t.Cleanup(resetClock)
	h := newHarness(t, jobMode, func(w *builder.FlinkClusterWrapper) {
		w.CleanupPolicy(v1beta1.CleanupActionDeleteCluster, v1beta1.CleanupActionDeleteTaskManager, v1beta1.CleanupActionDeleteCluster)
	}, func(h *harness) {
		h.flink.SetProgram(fakeflink.Program{JobName: "wordcount", BlockBeforeExecute: true})
	})
	pod, jm := h.runningPod()
	require.Empty(t, jm.JobIDs(), "main() has not submitted the job")
	fakeClock.SetTime(state.StartTime(pod).Add(haGrace))
	h.waitJob(v1beta1.JobStateLost)
	h.waitConditions("Lost=True/JobNotReported")
	h.eventually("the TaskManagers", h.taskManagerExists)

	fakeClock.Step(lostTimeout + time.Second)
	h.waitConditions("Lost=True/LostTimeout")
	h.waitEvent(corev1.EventTypeNormal, controller.ReasonJobManagerShutdown, "DELETE /cluster")
	h.eventually("the JobManager Job Complete", func() bool {
		j, ok := h.workload().(*batchv1.Job)
		if !ok || j == nil {
			return false
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
	assert.False(t, jm.Alive(), "the JobManager process ended")
	st, ok := jm.ExitStatus()
	require.True(t, ok)
	assert.Equal(t, fakeflink.ExitSucceeded, st.Code)
	h.eventually("afterJobFails DeleteTaskManager deleted the TaskManagers", func() bool { return !h.taskManagerExists() })
	cur, ok := h.podNow(pod)
	require.True(t, ok, "the ended JobManager's pod is kept, with its log")
	assert.Equal(t, corev1.PodSucceeded, cur.Status.Phase)

	h.afterReconciles("the job stays Lost, nothing waited for", func() bool {
		fc := h.get()
		return fc.Status.Components.Job.State == v1beta1.JobStateLost && !meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionWaiting)
	})
	assert.Nil(t, h.job().CompletionTime)
	assert.Equal(t, 1, h.countRequests("DELETE /cluster"))
	for _, e := range h.events() {
		assert.NotContains(t, e.Note, "-> "+v1beta1.JobStateSucceeded, "never recorded as a success")
	}
}
