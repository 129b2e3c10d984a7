package realplane_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
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
	for _, v := range []string{"", "2.3"} {
		var build func(w *builder.FlinkClusterWrapper)
		name := "+ the job ends on its own, its JobManager restarts before the next poll (a clean job result): Lost=True/EndedUnobserved, no afterJobFails past the Lost timeout, nothing deleted"
		if v != "" {
			build = func(w *builder.FlinkClusterWrapper) { w.FlinkVersion(v) }
			name = "+ Flink 2.3: the application FINISHED without the job after the restart: Lost=True/EndedUnobserved, no afterJobFails past the Lost timeout, nothing deleted"
		}
		rows = append(rows, scenario{mode: depMode, serial: true, name: name, build: build, run: endedWhileTheJobManagerRestarted})
	}
	return rows
}

// endedWhileTheJobManagerRestarted: the job finishes on its own and its JobManager's
// container is restarted (a liveness probe's SIGTERM) before the controller reads FINISHED.
// The restarted JobManager finds the job's clean result in the job result store and lists no
// job; Flink removed the job's graph and checkpoint ConfigMap, the cluster ConfigMap is older
// than the restarted container. Past the HA grace (and on 2.3 at once) the job is Lost with
// EndedUnobserved, and past the Lost timeout the cleanup policies (DeleteCluster for every
// outcome here) have deleted nothing: the JobManager runs on, at 1 replica.
func endedWhileTheJobManagerRestarted(t *testing.T, h *harness) {
	pod, jm, id := h.runningJob()
	// The controller compares the cluster ConfigMap's creation with the restarted container's
	// start, both in whole seconds: the restart comes two seconds after the creation at least,
	// as it does after any job that ran longer than that.
	cm := &corev1.ConfigMap{}
	require.NoError(t, k8s.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: flinkha.ClusterConfigMapName(resources.HAClusterID(h.get()))}, cm))
	h.eventually("two seconds past the cluster ConfigMap's creation", func() bool {
		return time.Now().After(cm.CreationTimestamp.Add(2 * time.Second))
	})
	// The REST API stops answering first, so that no poll sees FINISHED in between.
	jm.SetUnavailable(true)
	jm.SetJobState(id, flinkclient.JobStateFinished)
	jm.Stop()
	var again *fakeflink.JobManager
	h.eventually("the restarted container's JobManager", func() bool {
		again = sim.Process(h.ns, pod.Name)
		return again != nil && again != jm && again.Alive()
	})
	h.eventually("the restarted JobManager leading", func() bool { h.flink.Leader(); return again.Leads() })
	require.Empty(t, again.JobIDs(), "a clean result: Flink lists no job")
	cur, ok := h.podNow(pod)
	require.True(t, ok)
	fakeClock.SetTime(state.StartTime(cur).Add(haGrace))
	h.waitConditions("Lost=True/EndedUnobserved")
	fc := h.get()
	assert.Equal(t, v1beta1.JobStateLost, fc.Status.Components.Job.State)
	assert.Contains(t, h.condition(controller.ConditionLost).Message, "how it ended is unknown")
	h.waitEvent(corev1.EventTypeWarning, controller.ReasonJobLost, "neither afterJobSucceeds nor afterJobFails applies")

	fakeClock.Step(lostTimeout + time.Minute)
	h.afterReconciles("kept as it is past the Lost timeout", func() bool {
		fc := h.get()
		d := h.jmDeployment()
		return fc.Status.Components.Job.State == v1beta1.JobStateLost && d != nil && d.DeletionTimestamp == nil &&
			d.Spec.Replicas != nil && *d.Spec.Replicas == 1 && h.taskManagerExists() && h.podExists(pod)
	})
	assert.Empty(t, missingConditions(h.get(), []string{"Lost=True/EndedUnobserved"}))
	for _, e := range h.events() {
		assert.NotContains(t, e.Note, "afterJobFails (DeleteCluster) applies")
	}
	runs := 0
	for _, e := range h.flink.Executions() {
		if e.JobID == id {
			runs++
		}
	}
	assert.Equal(t, 1, runs, "the job never ran again")
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
