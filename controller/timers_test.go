package controller_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/fakeflink"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
)

// TestHAGraceAndLostTimeout moves the shared fake clock, so it runs alone: it is not
// parallel, and the parallel scenarios only start once the sequential tests are done.
func TestHAGraceAndLostTimeout(t *testing.T) {
	for _, mode := range []v1beta1.JobManagerDeploymentType{jobMode, depMode} {
		t.Run(string(mode)+"/+ HA grace and Lost timeout: state kept within grace, Lost after, tracked again when reported, cleanup after the timeout", func(t *testing.T) {
			h := newHarness(t, mode, nil)
			kept := v1beta1.JobStateDeploying
			if h.deployment() {
				// A running job's JobManager restarts (its container is restarted in place)
				// and has to recover the job from HA metadata.
				_, pod := h.runJob()
				// Forced: the restarted JobManager has not recovered the job yet.
				h.process(pod).SetJobs()
				h.setPodStatus(pod, func(p *corev1.Pod) {
					p.Status.ContainerStatuses[0].RestartCount = 1
					p.Status.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(fakeClock.Now())
				})
				kept = v1beta1.JobStateRunning
			} else {
				// A new JobManager has not submitted or recovered the job yet: main() has not
				// reached execute().
				h.flink.SetProgram(fakeflink.Program{JobName: "wordcount", BlockBeforeExecute: true})
				h.startPod(h.waitWorkload(""))
			}
			h.afterReconciles("state kept right after the JobManager started", func() bool { return h.jobState() == kept })
			fakeClock.Step(haGrace - time.Second)
			h.afterReconciles("state kept within the grace", func() bool { return h.jobState() == kept })

			h.waitConditions("Lost=False/JobTracked")
			fakeClock.Step(time.Second)
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
		})
	}
}
