package simulation_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
)

// Updates: a new revision is a new deploy under a new job ID, restoring the savepoint its
// stop-with-savepoint took, and only one the controller can confirm; an update whose
// savepoint cannot be confirmed stops (SavepointRequired) instead of guessing.

// A new revision is a new deploy with a new job ID, written to status before its workload
// exists; the old job's FINISHED (its stop-with-savepoint) is never read as the new job's
// Succeeded, and the new job runs.
func TestNewRevisionGetsANewJobID(t *testing.T) {
	w := newWorldWith(t, 11, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	old, oldRevision := fc.Status.Components.Job.ID, w.workload().revision
	// What the stored status names as each JobManager workload is created.
	statusAtCreate := map[string]string{}
	w.cl.created = func(obj client.Object) {
		switch obj.(type) {
		case *appsv1.Deployment, *batchv1.Job:
		default:
			return
		}
		if wl := w.workload(); wl != nil {
			statusAtCreate[wl.jobID] = w.cluster().Status.Components.Job.ID
		}
	}
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	fc = w.until(t, "the next revision runs", 40, func(fc *v1beta1.FlinkCluster) bool {
		w.finishTriggers(false)
		assert.NotEqual(t, v1beta1.JobStateSucceeded, fc.Status.Components.Job.State, "the old job's FINISHED is not the new job's result")
		wl := w.workload()
		return wl != nil && wl.revision != oldRevision && fc.Status.Components.Job.State == v1beta1.JobStateRunning
	})
	id := fc.Status.Components.Job.ID
	assert.NotEqual(t, old, id, "a new job ID for the new revision")
	assert.Equal(t, map[string]string{id: id}, statusAtCreate, "the status named the new job ID before its workload was created")
	assert.Equal(t, id, w.workload().jobID)
	assert.True(t, w.truthOf(old).stopped, "the old job ended by its stop-with-savepoint")
	assert.True(t, w.truthOf(id).ran, "the new job ran in Flink")
	assert.Equal(t, id, w.runningJob())
	noViolations(t, w)
}

// updateSavepointTaken is a Deployment-mode world whose job runs, is updated, and whose
// stop-with-savepoint Flink completed, before the controller read the result.
func updateSavepointTaken(t *testing.T) *world {
	t.Helper()
	w := newWorldWith(t, 1, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	w.reconcileAtOnce()
	w.finishTriggers(false)
	require.Len(t, w.savepoints, 1)
	return w
}

// The stop-with-savepoint of an update completed, but its result expired before the controller
// read it. The savepoint is recovered from the job's checkpoint statistics and the next deploy
// restores it — not an older one.
func TestExpiredStopResultRecoveredFromCheckpointStatistics(t *testing.T) {
	w := updateSavepointTaken(t)
	w.expireSavepointResults() // rest.async.store-duration passed
	fc := w.until(t, "the next deploy", 30, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Components.Job.FromSavepoint != ""
	})
	assert.Equal(t, w.savepoints[0], fc.Status.Components.Job.FromSavepoint)
	assert.True(t, fc.Status.Components.Job.FinalSavepoint || fc.Status.Components.Job.FromSavepoint == w.savepoints[0])
	assert.Equal(t, w.savepoints[0], w.fromOf[w.workload().jobID], "the deploy's Flink configuration restored it")
	noViolations(t, w)
}

// The stop-with-savepoint's outcome cannot be learnt (result expired and the JobManager that
// took it restarted, so its checkpoint statistics are gone). The update stops —
// SavepointRequired, no new workload, the old savepoint not restored silently — until the user
// names what to restore.
func TestUpdateWithoutAConfirmedFinalSavepointStops(t *testing.T) {
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
	w.reconcileAtOnce()
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

// A stop-with-savepoint that keeps failing while the job runs is retried within the wait
// bound, then the update stops (SavepointRequired) with the job still running on the old
// revision; reverting the spec ends the update, nothing was lost.
func TestUpdateWhoseStopKeepsFailingStopsAndARevertEndsIt(t *testing.T) {
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

// The update's stop-with-savepoint took its savepoint, but the job did not end — Flink
// restarted it (the stop's operation failed after the savepoint) — and the controller was
// down past rest.async.store-duration, so it finds the trigger gone (404) and the stop's
// savepoint in the checkpoint statistics. Taking that savepoint for final would delete the
// JobManager under the running job; the controller sees the job run and stops it again.
func TestStopThatDidNotEndTheJobIsNotFinal(t *testing.T) {
	w := newWorldWith(t, 41, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	w.until(t, "the stop triggered", 10, func(fc *v1beta1.FlinkCluster) bool {
		sp := fc.Status.Savepoint
		return sp != nil && sp.JobID == id && sp.State == controller.SavepointStateInProgress
	})
	w.leader().jm.CompleteStopsThenRestart()
	require.Len(t, w.savepoints, 1, "the stop took its savepoint")
	w.clock.Step(storeDuration)
	w.expireSavepointResults()

	fc = w.until(t, "the next deploy", 40, func(fc *v1beta1.FlinkCluster) bool {
		w.finishTriggers(false)
		return fc.Status.Components.Job.ID != id
	})
	assert.Len(t, w.savepoints, 2, "the job was stopped again")
	assert.Equal(t, w.newestSavepoint(), fc.Status.Components.Job.FromSavepoint, "the next deploy restores the second stop's savepoint")
	assert.True(t, slicesContains(w.rec.notes, "Warning SavepointFailed: the stop-with-savepoint of job "+id), "a Warning Event says the stop did not end the job")
	noViolations(t, w)
}

// The update's stop failed with the job still running, and its result expired while the
// controller was down; the checkpoint statistics name a savepoint someone took through Flink's
// API minutes before the stop was triggered. That savepoint is not the stop's result: it is
// never recorded as the final savepoint, and the job is stopped again.
func TestSavepointTriggeredBeforeTheStopIsNotItsResult(t *testing.T) {
	w := newWorldWith(t, 42, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	w.triggerOutside(t, id)
	require.Len(t, w.savepoints, 1)
	outside := w.savepoints[0]
	w.clock.Step(2 * time.Minute)

	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	w.until(t, "the stop triggered", 10, func(fc *v1beta1.FlinkCluster) bool {
		sp := fc.Status.Savepoint
		return sp != nil && sp.JobID == id && sp.State == controller.SavepointStateInProgress
	})
	w.leader().jm.FailSavepoints("") // the job runs on
	w.clock.Step(storeDuration)
	w.expireSavepointResults()

	// The controller was down past the wait bound too: with the stop's outcome unknown it
	// asks the user, and deploys nothing.
	fc = w.until(t, "SavepointRequired", 40, func(fc *v1beta1.FlinkCluster) bool {
		if job := fc.Status.Components.Job; job.ID == id && job.FinalSavepoint {
			assert.NotEqual(t, outside, job.SavepointLocation, "the savepoint taken before the stop recorded as its final one")
		}
		return meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired)
	})
	assert.Equal(t, id, fc.Status.Components.Job.ID, "no new deploy")
	assert.Equal(t, id, w.workload().jobID, "the JobManager of the running job is kept")
	assert.True(t, slicesContains(w.rec.notes, "Warning SavepointFailed: the latest savepoint of job "+id+", "+outside+", was triggered at"),
		"a Warning Event says why the savepoint in the statistics is not the stop's")
	noViolations(t, w)
}

// The reconcile that read the stop-with-savepoint's success lost its status writes (an etcd
// timeout). The old JobManager, where the success can be read again, is scaled away only once
// the success is on record, so the next deploy restores that savepoint and nothing asks the
// user for one.
func TestStopSavepointOnRecordBeforeTheJobManagerGoes(t *testing.T) {
	w := updateSavepointTaken(t)
	none := 0
	w.loseStatusWrites = &none
	w.reconcileAtOnce()
	w.expireSavepointResults() // rest.async.store-duration passed: the JobManager's answer is gone too
	fc := w.until(t, "the next deploy", 30, func(fc *v1beta1.FlinkCluster) bool {
		require.False(t, meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired), "the savepoint taken is not asked for")
		return fc.Status.Components.Job.FromSavepoint != ""
	})
	assert.Equal(t, w.savepoints[0], fc.Status.Components.Job.FromSavepoint)
	noViolations(t, w)
}
