package simulation_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// How an update carries the job's state (flinkcluster.PlanUpgrade), played against the
// simulated Flink: the cases where deciding once, on the first look, stalls or loses state.

// savepointRequired reports whether the cluster stopped for want of a savepoint.
func savepointRequired(fc *v1beta1.FlinkCluster) bool {
	return meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired)
}

// An update that starts while Flink reports the job RESTARTING (a TaskManager failover) waits
// for the job to run, then stops it with a savepoint and deploys the next revision from it: it
// neither fails its stop at once nor stops for want of a savepoint while the job runs again.
func TestUpdateDuringARestartTakesTheSavepointOnceTheJobRuns(t *testing.T) {
	for _, mode := range []v1beta1.JobManagerDeploymentType{v1beta1.JobManagerDeploymentTypeJob, v1beta1.JobManagerDeploymentTypeDeployment} {
		t.Run(string(mode), func(t *testing.T) {
			w := newWorldWith(t, 71, &setup{mode: mode})
			fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
			id, rev1 := fc.Status.Components.Job.ID, fc.Status.Revision.CurrentRevision
			leader := w.fl.Leader()
			require.NotNil(t, leader)
			leader.SetJobState(id, flinkclient.JobStateRestarting)
			w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
			fc = w.until(t, "the update waits for the restarting job", 10,
				conditionIs(controller.ConditionUpdating, controller.ConditionReasonWaitingForUpgradableState))
			assert.False(t, savepointRequired(fc), "a restarting job is no reason to stop for want of a savepoint")
			w.settle(5)
			require.False(t, savepointRequired(w.cluster()))

			leader.SetJobState(id, flinkclient.JobStateRunning)
			w.until(t, "stopping with a savepoint once the job runs", 20,
				conditionIs(controller.ConditionUpdating, controller.ConditionReasonStoppingWithSavepoint))
			fc = w.until(t, "running the next revision", 60, func(fc *v1beta1.FlinkCluster) bool {
				w.finishTriggers(false)
				return jobIs(v1beta1.JobStateRunning)(fc) && fc.Status.Revision.CurrentRevision != rev1 &&
					fc.Status.Revision.CurrentRevision == fc.Status.Revision.NextRevision
			})
			require.NotEmpty(t, w.savepoints)
			assert.NotEqual(t, id, fc.Status.Components.Job.ID)
			assert.Equal(t, w.newestSavepoint(), fc.Status.Components.Job.FromSavepoint, "the next deploy restores the stop's savepoint")
			assert.False(t, savepointRequired(fc))
			noViolations(t, w)
		})
	}
}

// A stop-with-savepoint requested while the job ran, whose trigger finds the job RESTARTING,
// waits for it to run again instead of failing: the update still ends with the stop's
// savepoint.
func TestStopRequestedBeforeARestartIsTriggeredOnceTheJobRuns(t *testing.T) {
	w := newWorldWith(t, 72, &setup{mode: v1beta1.JobManagerDeploymentTypeJob})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id, rev1 := fc.Status.Components.Job.ID, fc.Status.Revision.CurrentRevision
	leader := w.fl.Leader()
	require.NotNil(t, leader)
	// The reconcile that starts the update records the stop while the REST API does not
	// answer; the job restarts before the trigger reaches Flink.
	leader.SetUnavailable(true)
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	w.reconcileAtOnce()
	fc = w.cluster()
	require.NotNil(t, fc.Status.Savepoint)
	require.Equal(t, controller.SavepointStateRequested, fc.Status.Savepoint.State)
	leader.SetJobState(id, flinkclient.JobStateRestarting)
	leader.SetUnavailable(false)
	w.settle(5)
	fc = w.cluster()
	assert.NotEqual(t, controller.SavepointStateFailed, fc.Status.Savepoint.State, "a restarting job's stop waits")
	assert.False(t, savepointRequired(fc))
	leader.SetJobState(id, flinkclient.JobStateRunning)
	fc = w.until(t, "running the next revision", 60, func(fc *v1beta1.FlinkCluster) bool {
		w.finishTriggers(false)
		return jobIs(v1beta1.JobStateRunning)(fc) && fc.Status.Revision.CurrentRevision != rev1 &&
			fc.Status.Revision.CurrentRevision == fc.Status.Revision.NextRevision
	})
	assert.Equal(t, w.newestSavepoint(), fc.Status.Components.Job.FromSavepoint)
	noViolations(t, w)
}

// A last-state update that changes flinkVersion takes a savepoint of the running job: the new
// Flink version does not read the old one's HA checkpoint handles.
func TestLastStateUpdateAcrossAFlinkVersionChangeTakesASavepoint(t *testing.T) {
	w := lastStateWorld(t, 73, nil)
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id, rev1 := fc.Status.Components.Job.ID, fc.Status.Revision.CurrentRevision
	require.NotEmpty(t, fc.Status.Components.Job.FlinkVersion, "the deploy records its Flink version")
	w.completeCheckpoint()
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.FlinkVersion = "2.1.1" })
	w.until(t, "stopping with a savepoint", 20, conditionIs(controller.ConditionUpdating, controller.ConditionReasonStoppingWithSavepoint))
	fc = w.until(t, "running the next revision", 60, func(fc *v1beta1.FlinkCluster) bool {
		w.finishTriggers(false)
		return jobIs(v1beta1.JobStateRunning)(fc) && fc.Status.Revision.CurrentRevision != rev1 &&
			fc.Status.Revision.CurrentRevision == fc.Status.Revision.NextRevision
	})
	assert.NotEqual(t, id, fc.Status.Components.Job.ID, "a savepoint deploy: a new job ID")
	assert.Equal(t, w.newestSavepoint(), fc.Status.Components.Job.FromSavepoint)
	assert.Equal(t, "2.1.1", fc.Status.Components.Job.FlinkVersion)
	noViolations(t, w)
}

// The last-state max checkpoint age is measured from the checkpoint's trigger, as the Flink
// Kubernetes operator measures it: a checkpoint that completed a moment ago but was triggered
// longer ago than the bound is too old, and the update takes a savepoint.
func TestLastStateCheckpointAgeIsMeasuredFromItsTrigger(t *testing.T) {
	w := lastStateWorld(t, 74, func(fc *v1beta1.FlinkCluster) {
		fc.Spec.FlinkProperties[flinkcluster.PropertyLastStateMaxCheckpointAge] = "10 min"
	})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id, rev1 := fc.Status.Components.Job.ID, fc.Status.Revision.CurrentRevision
	w.clock.Step(30 * time.Minute)
	leader := w.fl.Leader()
	require.NotNil(t, leader)
	require.NotEmpty(t, leader.CompleteCheckpointTaking(id, 11*time.Minute))
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	w.until(t, "stopping with a savepoint", 20, conditionIs(controller.ConditionUpdating, controller.ConditionReasonStoppingWithSavepoint))
	assert.True(t, w.noted(controller.ReasonLastStateRefused))
	fc = w.until(t, "running the next revision", 60, func(fc *v1beta1.FlinkCluster) bool {
		w.finishTriggers(false)
		return jobIs(v1beta1.JobStateRunning)(fc) && fc.Status.Revision.CurrentRevision != rev1 &&
			fc.Status.Revision.CurrentRevision == fc.Status.Revision.NextRevision
	})
	assert.NotEqual(t, id, fc.Status.Components.Job.ID, "a savepoint deploy: a new job ID")
	noViolations(t, w)
}

// A savepoint whose result arrives in the reconcile that starts an update (it was in flight)
// gets its own checkpoint ID, not the previous savepoint's: the update's stop records the
// status before it calls Flink, and the last-state fallback compares that ID with Flink's
// stored checkpoints (a stale ID made a last-state redeploy restore an older checkpoint than
// the savepoint, TestInvariants seed 1796172326151802095).
func TestSavepointFinishedAsAnUpdateBeginsGetsItsOwnCheckpointID(t *testing.T) {
	w := newWorldWith(t, 75, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	w.manualSavepoints = true
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	w.completeCheckpoint()
	w.annotate(v1beta1.ControlAnnotation, v1beta1.ControlNameSavepoint)
	w.until(t, "savepoint triggered", 20, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Savepoint != nil && fc.Status.Savepoint.State == controller.SavepointStateInProgress
	})
	w.finishTriggers(false)
	fc = w.until(t, "the first savepoint recorded with its checkpoint ID", 20, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Components.Job.SavepointCheckpointID != 0
	})
	first, firstID := fc.Status.Components.Job.SavepointLocation, fc.Status.Components.Job.SavepointCheckpointID
	w.annotate(v1beta1.ControlAnnotation, v1beta1.ControlNameSavepoint)
	w.until(t, "a second savepoint in progress", 20, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Savepoint != nil && fc.Status.Savepoint.State == controller.SavepointStateInProgress &&
			fc.Status.Components.Job.SavepointLocation == first
	})
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	w.finishTriggers(false) // its result comes with the update's first look
	w.reconcileAtOnce()
	fc = w.cluster()
	require.NotEqual(t, first, fc.Status.Components.Job.SavepointLocation, "the second savepoint recorded")
	assert.NotEqual(t, firstID, fc.Status.Components.Job.SavepointCheckpointID, "the first savepoint's checkpoint ID is not the second's")
	noViolations(t, w)
}
