package simulation_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// settle lets the model and the controller run n rounds, a few seconds apart.
func (w *world) settle(n int) {
	for range n {
		w.clock.Step(2 * time.Second)
		w.kube()
		w.flink()
		w.reconcile()
	}
}

// until settles until cond holds, failing after n rounds.
func (w *world) until(t *testing.T, what string, n int, cond func(fc *v1beta1.FlinkCluster) bool) *v1beta1.FlinkCluster {
	t.Helper()
	for range n {
		if fc := w.cluster(); fc != nil && cond(fc) {
			return fc
		}
		w.settle(1)
	}
	t.Fatalf("%s: not reached\n%s", what, w.dump())
	return nil
}

func jobIs(state string) func(fc *v1beta1.FlinkCluster) bool {
	return func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Components.Job != nil && fc.Status.Components.Job.State == state
	}
}

// finishTriggers completes every pending savepoint operation of the live JobManagers now,
// successfully or not.
func (w *world) finishTriggers(fail bool) {
	for _, pr := range w.procs {
		switch {
		case !pr.alive():
		case fail:
			pr.jm.FailSavepoints("")
		default:
			pr.jm.CompleteSavepoints()
		}
	}
	w.flink()
}

// leader is the container whose process leads, nil for none.
func (w *world) leader() *proc {
	for _, pr := range w.sortedProcs() {
		if pr.alive() && pr.jm.Leads() {
			return pr
		}
	}
	return nil
}

func noViolations(t *testing.T, w *world) {
	t.Helper()
	assert.Empty(t, w.violations, w.dump())
}

// Hole 2 of issue 8: the stop-with-savepoint of an update completed, but its result expired
// before the controller read it. The savepoint is recovered from the job's checkpoint
// statistics and the next deploy restores it — not an older one.
func TestHole2LostStopResultRecoveredFromCheckpoints(t *testing.T) {
	w := newWorldWith(t, 1, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	w.reconcile()
	w.finishTriggers(false)
	require.Len(t, w.savepoints, 1)
	w.expireSavepointResults() // rest.async.store-duration passed
	fc := w.until(t, "the next deploy", 30, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Components.Job.FromSavepoint != ""
	})
	assert.Equal(t, w.savepoints[0], fc.Status.Components.Job.FromSavepoint)
	assert.True(t, fc.Status.Components.Job.FinalSavepoint || fc.Status.Components.Job.FromSavepoint == w.savepoints[0])
	assert.Equal(t, w.savepoints[0], w.fromOf[w.workload().jobID], "the deploy's Flink configuration restored it")
	noViolations(t, w)
}

// Hole 2 of issue 8: the stop-with-savepoint's outcome cannot be learnt (result expired and
// the JobManager that took it restarted, so its checkpoint statistics are gone). The update
// stops — SavepointRequired, no new workload, the old savepoint not restored silently — until
// the user names what to restore.
func TestHole2NoConfirmedFinalSavepointStops(t *testing.T) {
	w := newWorldWith(t, 2, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, build: func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Job.Args = []string{"--v1"}
	}})
	w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	w.annotate(v1beta1.ControlAnnotation, v1beta1.ControlNameSavepoint)
	w.until(t, "an older savepoint", 30, func(fc *v1beta1.FlinkCluster) bool {
		w.finishTriggers(false)
		return fc.Status.Components.Job.SavepointLocation != ""
	})
	older := w.cluster().Status.Components.Job.SavepointLocation
	firstJob := w.cluster().Status.Components.Job.ID

	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	w.reconcile()
	w.finishTriggers(false)
	require.Len(t, w.savepoints, 2, "the stop took its savepoint: the job is FINISHED")
	// The result expires and the JobManager that took the savepoint restarts: the new one
	// finds the job's result (FINISHED) in the job result store, but no checkpoint statistics.
	w.expireSavepointResults()
	pod := w.leader().pod
	w.stop(pod, false, 1, "java.lang.OutOfMemoryError")
	fc := w.until(t, "SavepointRequired", 30, func(fc *v1beta1.FlinkCluster) bool {
		return meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired)
	})
	w.settle(10)
	fc = w.cluster()
	assert.Equal(t, firstJob, fc.Status.Components.Job.ID, "no new deploy")
	assert.Equal(t, firstJob, w.workload().jobID, "the old JobManager is kept")
	assert.Contains(t, meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionSavepointRequired).Message, controller.RestoreAnnotation)
	assert.True(t, slicesContains(w.rec.notes, "Warning SavepointRequired"), "a Warning Event says why")
	assert.NotEqual(t, older, w.fromOf[w.workload().jobID])

	// The user knows the newest savepoint (from Flink's logs) and names it.
	w.annotate(controller.RestoreAnnotation, w.savepoints[1])
	fc = w.until(t, "the next deploy", 30, func(fc *v1beta1.FlinkCluster) bool { return fc.Status.Components.Job.ID != firstJob })
	assert.Equal(t, w.savepoints[1], fc.Status.Components.Job.FromSavepoint)
	w.settle(3)
	_, kept := w.cluster().Annotations[controller.RestoreAnnotation]
	assert.False(t, kept, "the annotation is consumed")
	noViolations(t, w)
}

// Hole 7 of issue 8: a cancel whose savepoint fails falls back to a plain cancel, and the
// job is recorded Cancelled only once Flink reports it CANCELED.
func TestHole7CancelFallsBackToPlainCancel(t *testing.T) {
	for _, v23 := range []bool{false, true} {
		w := newWorldWith(t, 3, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, v23: v23})
		w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
		id := w.cluster().Status.Components.Job.ID
		w.annotate(v1beta1.ControlAnnotation, v1beta1.ControlNameJobCancel)
		w.reconcile()
		w.finishTriggers(true)
		// checkTerminal (after every reconcile) fails the test if Cancelled comes first.
		fc := w.until(t, "Cancelled", 30, jobIs(v1beta1.JobStateCancelled))
		assert.True(t, w.truthOf(id).ended)
		assert.Equal(t, flinkclient.JobStateCanceled, w.truthOf(id).endState, "a plain cancel, confirmed by Flink")
		assert.Equal(t, v1beta1.ControlStateSucceeded, fc.Status.Control.State)
		noViolations(t, w)
	}
}

// Hole 3 of issue 8 (seed 000, example 4), in the model: a JobManager Deployment that went
// missing with its HA data is not recreated from an old savepoint.
func TestHole3MissingHAFailsTheDeployment(t *testing.T) {
	w := newWorldWith(t, 4, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	w.deleteHA()
	w.haDeletedExternally = true
	w.deleteWorkload()
	fc := w.until(t, "failed", 20, jobIs(v1beta1.JobStateFailed))
	assert.True(t, meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired))
	c := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionDeploymentFailed)
	require.NotNil(t, c)
	assert.Equal(t, controller.ConditionReasonHAMetadataMissing, c.Reason)
	w.settle(5)
	assert.Nil(t, w.workload(), "nothing recreated")
	noViolations(t, w)
}

// Issue 8, "don't keep the initial --fromSavepoint in a long-lived template": a deploy from a
// savepoint restores it through its Flink configuration, which the controller empties once it
// saw the job run. A JobManager container restarted after the HA data was deleted behind the
// controller then finds no savepoint to rewind to (checked by the model on every main()).
func TestInitialSavepointLeavesTheConfigurationOnceTheJobRan(t *testing.T) {
	w := newWorldWith(t, 5, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, build: func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Job.FromSavepoint = ptr.To("file:///savepoints/initial")
	}})
	require.Equal(t, "", w.configuredSavepoint(), "nothing deployed yet")
	w.until(t, "deployed", 10, func(*v1beta1.FlinkCluster) bool { return w.workload() != nil })
	assert.Equal(t, "file:///savepoints/initial", w.fromOf[w.workload().jobID], "the first deploy restores the savepoint")
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	assert.Equal(t, "file:///savepoints/initial", fc.Status.Components.Job.FromSavepoint, "the status keeps what the deploy restored")
	assert.Equal(t, controller.ResumeFromHAOnly, w.configuredSavepoint(), "the Flink configuration names only a path that does not exist")

	w.deleteJobGraphs()
	w.haDeletedExternally = true
	pod := w.leader().pod
	w.stop(pod, false, 1, "kubelet restarted the container")
	w.until(t, "the restarted container leads", 20, func(*v1beta1.FlinkCluster) bool {
		pr := w.procs[pod]
		return pr.alive() && pr.restarts > 0 && pr.jm.Leads()
	})
	assert.Equal(t, controller.ResumeFromHAOnly, w.procs[pod].from(), "the restarted JobManager restores no savepoint of the deploy")
	assert.Equal(t, 1, w.truthOf(id).mains, "main() did not start the job again from empty state (the HA data is gone)")
	noViolations(t, w)
}

// The reconcile that first sees the job run may not rebuild the Flink configuration (here it
// handles a cancel request): the savepoint still leaves the configuration before the status
// records the run (found by the property test: a JobManager restarted during the cancel, with
// the HA data gone, restored the deploy's savepoint).
func TestSavepointLeavesTheConfigurationWhenACancelComesFirst(t *testing.T) {
	w := newWorldWith(t, 6, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, build: func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Job.FromSavepoint = ptr.To("file:///savepoints/initial")
	}})
	requested := false
	ran := func() bool {
		j := w.cluster().Status.Components.Job
		return j != nil && w.recordedRan(j.ID)
	}
	for range 30 {
		if ran() {
			break
		}
		w.clock.Step(2 * time.Second)
		w.kube()
		w.flink()
		if !requested && w.runningJob() != "" {
			w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.CancelRequested = ptr.To(true) })
			requested = true
		}
		w.reconcile()
	}
	require.True(t, requested, "the job ran in Flink")
	require.True(t, ran(), "the status records the run\n%s", w.dump())
	assert.Equal(t, controller.ResumeFromHAOnly, w.configuredSavepoint(), "no savepoint left to restore once the status records the run")
	noViolations(t, w)
}

func slicesContains(notes []string, prefix string) bool {
	for _, n := range notes {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// Hole 2 of issue 8: a stop-with-savepoint that keeps failing while the job runs is retried
// within the wait bound, then the update stops (SavepointRequired) with the job still
// running on the old revision; reverting the spec ends the update, nothing was lost.
func TestHole2FailingStopThenRevert(t *testing.T) {
	w := newWorldWith(t, 5, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, build: func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Job.Args = []string{"--v1"}
	}})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	w.until(t, "SavepointRequired after the wait bound", 200, func(fc *v1beta1.FlinkCluster) bool {
		w.finishTriggers(true)
		w.clock.Step(10 * time.Second)
		return meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired)
	})
	assert.Equal(t, id, w.workload().jobID, "the old JobManager still runs the job")
	assert.Equal(t, id, w.runningJob())

	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v1"} })
	fc = w.until(t, "running again", 20, jobIs(v1beta1.JobStateRunning))
	assert.Equal(t, id, fc.Status.Components.Job.ID, "the same deploy")
	assert.False(t, meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired))
	assert.Equal(t, fc.Status.Revision.CurrentRevision, fc.Status.Revision.NextRevision)
	noViolations(t, w)
}

// A job that ran and ended while the Flink API never answered (found by the property test,
// seed 1796063887443789867 before the model changed): its Job-mode JobManager exited, Flink
// removed the job graph, and the controller took "JobManager gone, no job graph" for "never
// ran" — an update then redeployed from the deploy's own restore point, rewinding the job.
// A deploy whose JobManagers are gone, unobserved, is now taken as one whose job may have
// run: without a confirmed savepoint the update stops with SavepointRequired.
func TestUnobservedRunIsNotTakenForNeverRan(t *testing.T) {
	cases := []struct {
		name string
		mode v1beta1.JobManagerDeploymentType
		seed int64
		// gone takes the failed job's JobManagers away.
		gone func(t *testing.T, w *world)
	}{
		// The JobManager outlives its job (the controller's configuration turns
		// execution.shutdown-on-application-finish off) until the controller, which never
		// hears from Flink here, ends it: it dies on its own (killed: an OOM, a node problem).
		{"Job mode: the JobManager is killed", v1beta1.JobManagerDeploymentTypeJob, 8, func(t *testing.T, w *world) {
			w.stop(w.leader().pod, false, 137, "OOMKilled")
			w.until(t, "the JobManager gone", 20, func(*v1beta1.FlinkCluster) bool { return w.leader() == nil })
		}},
		// Seed 1796067998066026145: the pods gone with their workload, nothing left says the
		// job did not run.
		{"Deployment mode: the workload is deleted", v1beta1.JobManagerDeploymentTypeDeployment, 9, func(_ *testing.T, w *world) {
			w.deleteWorkload()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldWith(t, tc.seed, &setup{mode: tc.mode})
			w.apiDown = 1 // the controller never hears from Flink: settle does not count it down
			w.until(t, "the job runs in Flink", 20, func(fc *v1beta1.FlinkCluster) bool {
				pr := w.leader()
				return pr != nil && pr.jm.JobState(fc.Status.Components.Job.ID) == flinkclient.JobStateRunning
			})
			id := w.cluster().Status.Components.Job.ID
			w.leader().jm.SetJobState(id, flinkclient.JobStateFailed)
			tc.gone(t, w)
			require.True(t, w.truthOf(id).ran, "the job ran")

			w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
			fc := w.until(t, "SavepointRequired", 30, func(fc *v1beta1.FlinkCluster) bool {
				return meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired)
			})
			assert.Equal(t, id, fc.Status.Components.Job.ID, "no new deploy")
			noViolations(t, w)
		})
	}
}

// A spec update while a cancel's stop-with-savepoint is in flight (found by make
// soak-controller, 3 of 50,000 sequences): the update replaced the cancel's savepoint record,
// and the job's FINISHED after the cancel's stop was then taken for a success. The cancel the
// user asked for now finishes first: the job is Cancelled, never Succeeded.
func TestUpdateDuringCancelStopDoesNotTurnTheCancelIntoASuccess(t *testing.T) {
	w := newWorldWith(t, 10, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.CancelRequested = ptr.To(true) })
	w.until(t, "the cancel's stop-with-savepoint in flight", 10, func(fc *v1beta1.FlinkCluster) bool {
		sp := fc.Status.Savepoint
		return sp != nil && sp.JobID == id && sp.TriggerReason == controller.SavepointReasonJobCancel
	})
	args := fc.Spec.Job.Args
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	w.reconcile()
	w.finishTriggers(false) // the cancel's stop ends the job; a stop asked after it finds it ended
	w.settle(2)
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = args }) // reverted
	fc = w.until(t, "ended", 30, func(fc *v1beta1.FlinkCluster) bool {
		w.finishTriggers(false)
		return flinkcluster.Terminal(fc.Status.Components.Job.State)
	})
	assert.Equal(t, v1beta1.JobStateCancelled, fc.Status.Components.Job.State)
	assert.True(t, w.truthOf(id).stopped, "Flink ended the job by the cancel's stop-with-savepoint")
	noViolations(t, w)
}
