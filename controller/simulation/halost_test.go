package simulation_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
)

// haLostBehindRunningJob is the job a live leading JobManager runs RUNNING in Deployment mode
// while its job graph is gone from HA (deleted behind the controller), "" for none: the next
// restart of that JobManager would run main() again from empty state.
func (w *world) haLostBehindRunningJob() string {
	if w.mode != v1beta1.JobManagerDeploymentTypeDeployment || !w.haDeletedExternally {
		return ""
	}
	pr := w.leader()
	if pr == nil {
		return ""
	}
	id := pr.jobID()
	if pr.jm.JobState(id) != flinkclient.JobStateRunning {
		return ""
	}
	if cm := w.haConfigMap(); cm != nil && slices.Contains(flinkha.JobGraphs(cm), id) {
		return ""
	}
	return id
}

// checkHALoss: a reconcile that saw a job RUNNING (it waits on nothing: it trusted the
// JobManager's answer) while its HA data was gone before and after it must not let the job
// run on as if nothing happened. main() reruns from empty state that the controller could not
// see coming (the JobManager was down when the HA data went) stay exempt (ExecutionStarted).
func (w *world) checkHALoss(lost string, fc *v1beta1.FlinkCluster) {
	job := fc.Status.Components.Job
	if lost == "" || job == nil || job.ID != lost || job.State != v1beta1.JobStateRunning || w.haLostBehindRunningJob() != lost ||
		w.apiDown > 0 || meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionWaiting) {
		return
	}
	if c := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionDeploymentFailed); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == controller.ConditionReasonHAMetadataMissing {
		return
	}
	w.violate("job %s runs without its HA data and the controller, which saw it RUNNING, let it run on: a restart would rerun main() from empty state", lost)
}

// Issue 8, left item 5, in the model: the job graphs in the HA ConfigMaps of a running
// Deployment-mode job are deleted behind its JobManager, which runs on. The controller stops the job with a savepoint and deploys it
// again from there under a new job ID; main() never runs the old job again.
func TestHALostBehindRunningJobManagerRedeploysFromASavepoint(t *testing.T) {
	w := newWorldWith(t, 7, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	w.haDeletedExternally = true
	// Only the job graphs: with the leader's ConfigMap, the JobManager would exit
	// (TestHole17HADeletedUnderTheLeaderFailsInsteadOfStartingEmpty).
	w.deleteJobGraphs()
	fc = w.until(t, "redeployed and running", 40, func(fc *v1beta1.FlinkCluster) bool {
		w.finishTriggers(false) // the stop-with-savepoint the controller answers with
		return fc.Status.Components.Job.ID != id && fc.Status.Components.Job.State == v1beta1.JobStateRunning
	})
	require.True(t, w.truthOf(id).stopped, "the old job was stopped with a savepoint")
	assert.Equal(t, 1, w.truthOf(id).mains, "main() ran the old job once")
	assert.NotEmpty(t, fc.Status.Components.Job.FromSavepoint, "the new deploy restores the stop's savepoint")
	assert.Equal(t, fc.Status.Components.Job.FromSavepoint, w.newestSavepoint())
	noViolations(t, w)
}
