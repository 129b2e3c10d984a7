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
