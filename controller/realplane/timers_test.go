package realplane_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/fakeflink"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/state"
)

// timerRows move the shared fake clock by minutes, so they are serial: they run alone, before
// the parallel rows.
func timerRows() []scenario {
	var rows []scenario
	for _, mode := range []v1beta1.JobManagerDeploymentType{jobMode, depMode} {
		rows = append(rows, scenario{mode: mode, serial: true,
			name: "+ HA grace and Lost timeout: state kept within grace, Lost after, tracked again when reported, cleanup after the timeout",
			prepare: func(h *harness) {
				if mode == jobMode {
					// A new JobManager has not submitted or recovered the job yet: main() has
					// not reached execute().
					h.flink.SetProgram(fakeflink.Program{JobName: "wordcount", BlockBeforeExecute: true})
				}
			},
			run: haGraceAndLostTimeout,
		})
	}
	return rows
}

// haGraceAndLostTimeout: the HA grace counts from the JobManager's start (the container's
// startedAt, which the real control plane writes in real time), the Lost timeout from the
// Lost condition; both on the controller's clock, which the row sets to their edges.
func haGraceAndLostTimeout(t *testing.T, h *harness) {
	kept := v1beta1.JobStateDeploying
	var pod *corev1.Pod
	if h.deployment() {
		// A running job's JobManager container crashes and the kubelet restarts it in place:
		// the restarted JobManager has to recover the job from HA.
		_, first := h.runJob()
		old := h.process(first)
		old.Kill()
		var jm *fakeflink.JobManager
		h.eventually("the restarted container's JobManager", func() bool {
			jm = sim.Process(h.ns, first.Name)
			return jm != nil && jm != old && jm.Alive()
		})
		// It leads once the dead one's lease expired; forced: it has not recovered the job yet.
		h.flink.Advance(16 * time.Second)
		h.eventually("the restarted JobManager leading", func() bool { h.flink.Leader(); return jm.Leads() })
		jm.SetJobs()
		pod, _ = h.podNow(first)
		kept = v1beta1.JobStateRunning
	} else {
		pod, _ = h.runningPod()
	}
	require.NotNil(t, pod)
	graceEnd := state.StartTime(pod).Add(haGrace)
	require.True(t, fakeClock.Now().Before(graceEnd.Add(-time.Second)), "the clock (%s) is within the grace that ends at %s", fakeClock.Now(), graceEnd)
	h.afterReconciles("state kept right after the JobManager started", func() bool { return h.jobState() == kept })
	fakeClock.SetTime(graceEnd.Add(-time.Second))
	h.afterReconciles("state kept within the grace", func() bool { return h.jobState() == kept })

	h.waitConditions("Lost=False/JobTracked")
	fakeClock.SetTime(graceEnd)
	lostAt := fakeClock.Now()
	fc := h.waitJob(v1beta1.JobStateLost)
	assert.Contains(t, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"), "has not reported the job within 5m0s")
	assert.Empty(t, missingConditions(fc, []string{"Lost=True/JobNotReported"}))
	lost := h.condition(controller.ConditionLost)
	assert.True(t, lostAt.Equal(lost.LastTransitionTime.Time), "Lost since %s, condition says %s", lostAt, lost.LastTransitionTime)
	assert.Contains(t, lost.Message, "has not reported the job within 5m0s")
	assert.Nil(t, fc.Status.Components.Job.CompletionTime, "a Lost job has not completed")
	assert.Equal(t, v1beta1.ClusterStateReconciling, h.waitCluster(v1beta1.ClusterStateReconciling).Status.State)
	h.waitEvent(corev1.EventTypeWarning, controller.ReasonJobLost, "Lost")

	fakeClock.Step(time.Minute)
	h.leader().SetJobs(flinkclient.Job{ID: h.jobID(), State: flinkclient.JobStateRunning})
	fc = h.waitJob(v1beta1.JobStateRunning)
	assert.Nil(t, fc.Status.Components.Job.CompletionTime, "tracked again")
	h.waitEvent(corev1.EventTypeNormal, controller.ReasonJobStateChanged, "is reported again")
	h.waitConditions("Lost=False/JobTracked")
	// A reconcile that read the clock before the step may be the one that saw the job.
	tracked := h.condition(controller.ConditionLost).LastTransitionTime.Time
	assert.True(t, !tracked.Before(lostAt) && !tracked.After(fakeClock.Now()), "tracked again at %s", tracked)

	// The job disappears again; the JobManager started long ago, so it is Lost at once,
	// and the Lost time is now, not the first one.
	first := lostAt
	lostAt = fakeClock.Now()
	h.leader().SetJobs()
	h.waitJob(v1beta1.JobStateLost)
	h.waitConditions("Lost=True/JobNotReported")
	lost = h.condition(controller.ConditionLost)
	assert.True(t, lostAt.Equal(lost.LastTransitionTime.Time), "Lost again since %s, condition says %s", lostAt, lost.LastTransitionTime)
	assert.False(t, first.Equal(lost.LastTransitionTime.Time), "the Lost timer starts again")
	fakeClock.Step(lostTimeout - time.Second)
	h.afterReconciles("Lost within the timeout, no cleanup", func() bool {
		fc := h.get()
		return fc.Status.Components.Job.State == v1beta1.JobStateLost && fc.Status.State == v1beta1.ClusterStateReconciling && h.workload() != nil
	})
	fakeClock.Step(time.Second)
	fc = h.waitCluster(v1beta1.ClusterStateStopped)
	assert.Equal(t, v1beta1.JobStateLost, fc.Status.Components.Job.State)
	assert.Contains(t, fc.Status.Components.Job.FailureReasons, "job lost: not reported again within 10m0s")
	assert.Empty(t, missingConditions(fc, []string{"Lost=True/LostTimeout"}))
	lost = h.condition(controller.ConditionLost)
	assert.True(t, lostAt.Equal(lost.LastTransitionTime.Time), "the timeout counted from the Lost condition (%s), which it keeps: %s", lostAt, lost.LastTransitionTime)
	assert.Contains(t, lost.Message, "afterJobFails (DeleteCluster) applies")
	h.waitEvent(corev1.EventTypeWarning, controller.ReasonJobLost, "job lost: not reported again within 10m0s: afterJobFails (DeleteCluster) applies")
	h.eventually("afterJobFails DeleteCluster removed everything", h.allGone)
	noResubmission(h, v1beta1.JobStateLost, "")
}
