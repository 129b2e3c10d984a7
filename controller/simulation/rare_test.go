package simulation_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
)

// Directed tests of two rare TestInvariants violations (about 1 in 6,000 sequences each).

// A Deployment-mode JobManager ran its job, and checkpointed, while Flink's REST API never
// answered the controller; its node was lost, and the replacement recovered the job, which
// then failed (Flink removed its job graph), and crash-looped. Flink never reported the job
// RUNNING, but the first pod, cut off on the lost node, still reports its container running
// since before the loss: the job may have run. Taking the crash loop for a failed deploy
// (DeployFailed) let the next update deploy from the deploy's own restore point (empty
// state) and rewind the job (seed 1796139225380832786); the job is Lost, and the next
// update asks for a savepoint instead.
func TestRareCrashLoopAfterAnUnreportedRunIsNotDeployFailed(t *testing.T) {
	w := newWorldWith(t, 61, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	w.apiDown = 1 // the controller never hears from Flink: settle does not count it down
	fc := w.until(t, "the job runs in Flink", 20, func(fc *v1beta1.FlinkCluster) bool {
		pr := w.leader()
		return pr != nil && fc.Status.Components.Job != nil && pr.jm.JobState(fc.Status.Components.Job.ID) == flinkclient.JobStateRunning
	})
	id := fc.Status.Components.Job.ID
	first := w.leader()
	w.clock.Step(firstCheckpoint)
	w.completeCheckpoint()
	require.True(t, w.persisted(id), "the job checkpointed")
	w.loseNode(first)

	// The pod is evicted from the unreachable node and replaced; the replacement recovers
	// the job from HA.
	w.until(t, "a replacement runs the job", 400, func(*v1beta1.FlinkCluster) bool {
		pr := w.leader()
		return pr != nil && pr != first && pr.jm.JobState(id) == flinkclient.JobStateRunning
	})
	second := w.leader()
	w.jobEvent(flinkclient.JobStateFailed)
	w.settle(1)
	require.Empty(t, w.haJobGraphs(), "Flink removed the failed job's graph")
	w.stop(second.pod, false, 1, "java.io.IOException: storage unavailable")
	second.crashing = 8

	fc = w.until(t, "the crash loop judged", 200, func(fc *v1beta1.FlinkCluster) bool {
		return meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionDeploymentFailed)
	})
	job := fc.Status.Components.Job
	assert.Equal(t, v1beta1.JobStateLost, job.State, "the job may have run: Lost, not DeployFailed")
	assert.Contains(t, job.FailureReasons[len(job.FailureReasons)-1], "JobManager pod "+first.pod+" has run for")

	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	fc = w.until(t, "SavepointRequired", 400, func(fc *v1beta1.FlinkCluster) bool {
		return meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired)
	})
	assert.Equal(t, id, fc.Status.Components.Job.ID, "no new deploy rewinds the job to empty state")
	noViolations(t, w)
}

// haJobGraphs lists the job IDs whose graphs the HA cluster ConfigMap holds.
func (w *world) haJobGraphs() []string {
	if cm := w.haConfigMap(); cm != nil {
		return flinkha.JobGraphs(cm)
	}
	return nil
}

// A scheduled savepoint (here one savepointGeneration asked for) was in flight when its
// JobManager's node was lost; it completed there, unread. The update's stop-with-savepoint
// replaced its record and failed on the replacement JobManager, which then crash-looped.
// Flink never adds a savepoint to the checkpoint store (the fake neither), so a last-state
// fallback would restore the store's chk-1, older than the savepoint that completed (seed
// 1796139225380835489). The replaced record's trigger time is kept
// (status.components.job.unknownSavepointTime) and the update asks for a savepoint instead.
func TestRareLastStateFallbackAfterAReplacedUnreadSavepointAsksForASavepoint(t *testing.T) {
	w := lastStateWorld(t, 62, nil)
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	w.completeCheckpoint()
	w.patchCluster(func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Job.SavepointGeneration = fc.Status.Components.Job.SavepointGeneration + 1
	})
	w.until(t, "the savepoint triggered", 10, func(fc *v1beta1.FlinkCluster) bool {
		sp := fc.Status.Savepoint
		return sp != nil && sp.JobID == id && sp.State == controller.SavepointStateInProgress
	})
	first := w.leader()
	first.jm.CompleteSavepoints()
	require.Len(t, w.savepoints, 1, "the savepoint completed in Flink")
	w.loseNode(first)

	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	w.until(t, "the update's stop triggered on the replacement", 400, func(fc *v1beta1.FlinkCluster) bool {
		sp := fc.Status.Savepoint
		return sp != nil && sp.JobID == id && sp.TriggerReason == controller.SavepointReasonUpdate && sp.State == controller.SavepointStateInProgress
	})
	assert.NotEmpty(t, w.cluster().Status.Components.Job.UnknownSavepointTime, "the replaced savepoint's trigger is kept")
	second := w.leader()
	require.NotNil(t, second)
	require.NotEqual(t, first, second)
	// The stop fails as the job fails over, and the JobManager then crash-loops: the job
	// runs nowhere, and cannot take a savepoint.
	second.jm.FailSavepoints("org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint Coordinator is suspending.")
	second.jm.SetJobState(id, flinkclient.JobStateRestarting)
	w.until(t, "the stop's failure read", 10, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Savepoint != nil && fc.Status.Savepoint.State == controller.SavepointStateFailed
	})
	w.stop(second.pod, false, 1, "java.io.IOException: storage unavailable")
	second.crashing = 8

	fc = w.until(t, "SavepointRequired", 400, func(fc *v1beta1.FlinkCluster) bool {
		return meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired)
	})
	assert.Equal(t, id, fc.Status.Components.Job.ID)
	assert.Len(t, w.executionsOf(id), 2, "no last-state redeploy started a third execution of the job")
	noViolations(t, w)
}
