package simulation_test

import (
	"slices"
	"testing"
	"time"

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
	if pr == nil || pr.nodeLost {
		// A leader cut off on a lost node is no JobManager the controller can see, nor one
		// whose container can restart in place: its pod is evicted, and the node's kubelet
		// ends the process if the node comes back after that.
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

// checkHALoss: a reconcile that saw a job RUNNING while its HA data was gone before and
// after it must not let the job run on as if nothing happened: it says HAMetadataMissing
// (and redeploys from a savepoint). A reconcile that did not get Flink's word on the job says
// so, in its Waiting condition: the REST API did not answer or was not trusted
// (WaitingForFlinkAPI, WaitingForLeader), the JobManager listed no job of the deploy yet
// (WaitingForJobReport), a Flink 2.3 application ran without the job (WaitingForApplication).
// That is the invariant's precondition, not an exemption: such a reconcile did not see the
// job RUNNING, and the wait it reports is bounded (checkWaits). Any other wait — a savepoint
// in flight, a JobManager being deleted — is no reason to miss the lost HA data. main()
// reruns after the HA data went are ExecutionStarted's.
func (w *world) checkHALoss(lost string, fc *v1beta1.FlinkCluster) {
	job := fc.Status.Components.Job
	if lost == "" || job == nil || job.ID != lost || job.State != v1beta1.JobStateRunning || w.haLostBehindRunningJob() != lost ||
		w.apiDown > 0 {
		return
	}
	if c := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionWaiting); c != nil && c.Status == metav1.ConditionTrue &&
		slices.Contains(noWordFromFlink, c.Reason) {
		return
	}
	if c := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionDeploymentFailed); c != nil &&
		c.Status == metav1.ConditionTrue && c.Reason == controller.ConditionReasonHAMetadataMissing {
		return
	}
	w.violate("job %s runs without its HA data and the controller, which saw it RUNNING, let it run on: a restart would rerun main() from empty state", lost)
}

// noWordFromFlink are the Waiting reasons of a reconcile that did not hear from Flink that
// the deploy's job runs.
var noWordFromFlink = []string{
	controller.ConditionReasonWaitingForFlinkAPI, controller.ConditionReasonWaitingForLeader,
	controller.ConditionReasonWaitingForJobReport, controller.ConditionReasonWaitingForApplication,
}

// The job graphs in the cluster's HA ConfigMap of a running Deployment-mode job are deleted
// behind its JobManager, which runs on; the job's own ConfigMap (its checkpoint ID counter)
// stays. The controller stops the job with a savepoint and deploys it again from there under a
// new job ID; main() never runs the old job again.
func TestHALostBehindRunningJobManagerRedeploysFromASavepoint(t *testing.T) {
	w := newWorldWith(t, 7, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	w.haDeletedExternally = true
	// Only the job graphs: with the leader's ConfigMap, the JobManager would exit
	// (TestHADeletedUnderTheLeaderFailsInsteadOfStartingEmpty).
	w.deleteExecutionPlans()
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

// The job's own HA ConfigMap is deleted with the job graphs behind a running Deployment-mode
// job. Flink never creates it again while the job runs, so every checkpoint and savepoint of
// the job fails (its checkpoint ID counter is gone), a stop's included: the stop the
// controller answers with fails and the job runs on. The controller must not make it worse:
// it says the HA metadata is missing, keeps the running job and its JobManager, deploys
// nothing (no main() from empty state, nothing rewound) and tries the stop again.
func TestJobConfigMapDeletedBehindRunningJobKeepsItRunning(t *testing.T) {
	w := newWorldWith(t, 7, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	w.haDeletedExternally = true
	w.deleteJobGraphs()
	w.until(t, "a stop-with-savepoint failed", 20, func(*v1beta1.FlinkCluster) bool {
		w.finishTriggers(false)
		return slicesContains(w.rec.notes, "Warning SavepointFailed: update savepoint of job "+id+" failed")
	})
	w.during(t, 2*time.Minute, "the job runs on under its JobManager", func(fc *v1beta1.FlinkCluster) bool {
		w.finishTriggers(false)
		wl, l := w.workload(), w.leader()
		return fc.Status.Components.Job.ID == id && wl != nil && wl.jobID == id &&
			l != nil && l.jm.JobState(id) == flinkclient.JobStateRunning
	})
	assert.Equal(t, 1, w.truthOf(id).mains, "main() ran the job once")
	assert.False(t, w.truthOf(id).stopped, "no stop ended the job")
	assert.True(t, slicesContains(w.rec.notes, "Warning HAMetadataMissing: the HA metadata of running job "+id+" is gone"))
	noViolations(t, w)
}
