package simulation_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Cancels: a job-cancel control or cancelRequested ends the job Cancelled only once Flink
// confirms it, never turns into a success, and never records a failure over.

// A cancel whose savepoint fails falls back to a plain cancel, and the job is recorded
// Cancelled only once Flink reports it CANCELED.
func TestCancelWhoseSavepointFailsFallsBackToPlainCancel(t *testing.T) {
	for _, v23 := range []bool{false, true} {
		w := newWorldWith(t, 3, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, v23: v23})
		w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
		id := w.cluster().Status.Components.Job.ID
		w.annotate(v1beta1.ControlAnnotation, v1beta1.ControlNameJobCancel)
		w.reconcileAtOnce()
		w.finishTriggers(true)
		// checkTerminal (after every reconcile) fails the test if Cancelled comes first.
		fc := w.until(t, "Cancelled", 30, jobIs(v1beta1.JobStateCancelled))
		assert.True(t, w.truthOf(id).ended)
		assert.Equal(t, flinkclient.JobStateCanceled, w.truthOf(id).endState, "a plain cancel, confirmed by Flink")
		assert.Equal(t, v1beta1.ControlStateSucceeded, fc.Status.Control.State)
		noViolations(t, w)
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
	w.reconcileAtOnce()
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

// Found by TestInvariants (seed 1796133628212248833: the HA ConfigMaps deleted while a
// job-cancel control waited for the leader; the restarted JobManager's main() failed on
// ResumeFromHAOnly): a job that fails on its own while a job-cancel control is in flight stays
// Failed, and the control fails, instead of the failure being recorded over as Cancelled
// ("cancelled without a savepoint").
func TestJobFailedDuringACancelStaysFailed(t *testing.T) {
	w := newWorldWith(t, 24, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	w.annotate(v1beta1.ControlAnnotation, v1beta1.ControlNameJobCancel)
	w.reconcileAtOnce()
	w.jobEvent(flinkclient.JobStateFailed)
	w.finishTriggers(true)
	fc := w.until(t, "the control ends", 30, func(fc *v1beta1.FlinkCluster) bool {
		require.NotEqual(t, v1beta1.JobStateCancelled, fc.Status.Components.Job.State, "the failure is not recorded over")
		return fc.Status.Control != nil && fc.Status.Control.State == v1beta1.ControlStateFailed
	})
	assert.Equal(t, v1beta1.JobStateFailed, fc.Status.Components.Job.State)
	assert.Contains(t, fc.Status.Control.Message, "before the cancel took effect")
	noViolations(t, w)
}

// A cancel's stop-with-savepoint ends the job, and its JobManager restarts before the
// controller saw FINISHED. The job's result is clean in the job result store: the new
// JobManager lists no job (2.3: the application FINISHED) and holds no job graph for it. The
// cancel flow owns the job while its stop is in flight: the job is never Lost, and
// afterJobFails never applies.
func TestCancelledJobWithACleanResultIsNotLost(t *testing.T) {
	for _, v23 := range []bool{false, true} {
		t.Run(map[bool]string{false: "2.2", true: "2.3"}[v23], func(t *testing.T) {
			w := newWorldWith(t, 23, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, v23: v23})
			fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
			id := fc.Status.Components.Job.ID
			w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.CancelRequested = ptr.To(true) })
			w.until(t, "the stop triggered", 20, func(fc *v1beta1.FlinkCluster) bool {
				return fc.Status.Savepoint != nil && fc.Status.Savepoint.JobID == id
			})
			pr := w.leader()
			require.NotNil(t, pr)
			w.finishTriggers(false)
			require.Equal(t, flinkclient.JobStateFinished, pr.jm.JobState(id), "the stop ended the job")
			// The JobManager dies before the next reconcile and its container restarts.
			w.stop(pr.pod, false, 137, "OOMKilled")
			for i := 0; i < 20 && !(pr.alive() && pr.jm.Leads()); i++ {
				w.clock.Step(2 * time.Second)
				w.kube()
				w.flink()
			}
			require.True(t, pr.alive() && pr.jm.Leads(), "the restarted container leads\n%s", w.dump())
			assert.Empty(t, pr.jm.JobIDs(), "a clean result: Flink lists no job")
			if v23 {
				assert.Equal(t, flinkclient.ApplicationStateFinished, pr.jm.ApplicationState())
			}
			w.during(t, 10*time.Minute, "never Lost", func(fc *v1beta1.FlinkCluster) bool {
				return fc.Status.Components.Job.State != v1beta1.JobStateLost
			})
			assert.NotEqual(t, v1beta1.JobStateRunning, w.cluster().Status.Components.Job.State, "the cancel took effect")
			assert.False(t, slicesContains(w.rec.notes, "Warning "+controller.ReasonJobLost))
			assert.Equal(t, 1, w.truthOf(id).mains)
			noViolations(t, w)
		})
	}
}

// A cancel whose stop-with-savepoint Flink reported COMPLETED, while the job overview went
// unanswered, ends Cancelled although no JobManager lists the job afterwards: Flink completes
// a stop's operation only once the job ended (seed 1796173894529746024: the cancel waited
// for a FINISHED no restarted JobManager would report, the job went Lost, and every update
// after it stalled).
func TestCancelWhoseStopFlinkReportedCompletedEndsWithoutTheJobListed(t *testing.T) {
	for _, v23 := range []bool{false, true} {
		t.Run(map[bool]string{false: "2.2", true: "2.3"}[v23], func(t *testing.T) {
			w := newWorldWith(t, 31, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, v23: v23})
			fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
			id := fc.Status.Components.Job.ID
			w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.CancelRequested = ptr.To(true) })
			w.until(t, "the stop triggered", 20, func(fc *v1beta1.FlinkCluster) bool {
				sp := fc.Status.Savepoint
				return sp != nil && sp.JobID == id && sp.TriggerID != ""
			})
			pr := w.leader()
			require.NotNil(t, pr)
			// Only the savepoint operation's status gets through: the controller learns that the
			// stop COMPLETED, and never sees the job FINISHED.
			w.unanswered = func(r *http.Request) bool { return !strings.Contains(r.URL.Path, "/savepoints/") }
			w.finishTriggers(false)
			w.until(t, "the stop's outcome read", 10, func(fc *v1beta1.FlinkCluster) bool {
				sp := fc.Status.Savepoint
				return sp != nil && sp.JobID == id && sp.State == controller.SavepointStateSucceeded
			})
			// The JobManager restarts: its clean job result makes it list no job.
			w.stop(pr.pod, false, 137, "OOMKilled")
			w.unanswered = nil
			fc = w.until(t, "Cancelled", 60, jobIs(v1beta1.JobStateCancelled))
			assert.Equal(t, w.newestSavepoint(), fc.Status.Components.Job.SavepointLocation, "the stop's savepoint is on record")
			assert.True(t, w.truthOf(id).stopped, "Flink ended the job by the cancel's stop-with-savepoint")
			assert.False(t, slicesContains(w.rec.notes, "Warning "+controller.ReasonJobLost), "never Lost")
			assert.Equal(t, 1, w.truthOf(id).mains)
			noViolations(t, w)
		})
	}
}
