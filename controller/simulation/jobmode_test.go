package simulation_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// Job-mode savepoint loss: with Flink's default execution.shutdown-on-application-
// finish the JobManager Job's process exited as soon as an update's stop-with-savepoint had
// finished the job, before the controller read where the savepoint went: the update waited
// forever with the savepoint state Unknown. The controller's configuration now keeps the
// JobManager up after its job ended, and the controller ends it itself.

// shutdownRequests counts the DELETE /cluster calls the JobManager processes received.
func (w *world) shutdownRequests() int {
	n := 0
	for _, pr := range w.procs {
		if pr.jm == nil {
			continue
		}
		for _, r := range pr.jm.Requests() {
			if r == "DELETE /cluster" {
				n++
			}
		}
	}
	return n
}

// jmJob is the JobManager Job, nil when there is none.
func (w *world) jmJob() *batchv1.Job {
	j := &batchv1.Job{}
	if w.cl.Get(bg, types.NamespacedName{Namespace: ns, Name: resources.JobManagerName(name)}, j) != nil {
		return nil
	}
	return j
}

func jobConditionTrue(j *batchv1.Job, typ batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func TestJobModeUpdateTakesTheFinalSavepointAndTheNextJobRestoresIt(t *testing.T) {
	w := newWorldWith(t, 61, &setup{mode: v1beta1.JobManagerDeploymentTypeJob})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	w.reconcileAtOnce()
	w.finishTriggers(false) // the stop-with-savepoint completes: Flink ends the job FINISHED
	require.Len(t, w.savepoints, 1)
	old := w.procs[w.jmPods()[0].Name]
	require.Equal(t, flinkclient.JobStateFinished, old.jm.JobState(id))
	w.settle(1)
	assert.True(t, old.alive(), "the JobManager outlives the job its stop ended")

	fc = w.until(t, "the next deploy", 30, func(fc *v1beta1.FlinkCluster) bool { return fc.Status.Components.Job.ID != id })
	assert.Equal(t, w.savepoints[0], fc.Status.Components.Job.FromSavepoint, "the next deploy restores the update's savepoint")
	assert.Equal(t, controller.SavepointStateSucceeded, fc.Status.Savepoint.State)
	fc = w.until(t, "running again", 30, jobIs(v1beta1.JobStateRunning))
	assert.Equal(t, w.savepoints[0], w.fromOf[fc.Status.Components.Job.ID], "the new JobManager's configuration restored it")
	noViolations(t, w)
}

func TestJobModeJobManagerEndedByTheControllerOnceTheEndIsRecorded(t *testing.T) {
	cases := []struct {
		name string
		end  string
		want string
	}{
		{name: "FINISHED: Succeeded, the Job Complete", end: flinkclient.JobStateFinished, want: v1beta1.JobStateSucceeded},
		// DELETE /cluster ends the cluster as SUCCEEDED: the Job says Complete, the status
		// says how the job ended.
		{name: "FAILED: Failed, the Job Complete all the same", end: flinkclient.JobStateFailed, want: v1beta1.JobStateFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldWith(t, 62, &setup{mode: v1beta1.JobManagerDeploymentTypeJob, build: keepEndedCluster})
			fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
			id := fc.Status.Components.Job.ID
			pr := w.leader()
			pr.jm.SetJobState(id, tc.end)
			w.reconcile() // records the end; the shutdown is asked on the next reconcile
			assert.True(t, pr.alive(), "the JobManager outlives its job")
			fc = w.until(t, "the JobManager ended", 10, func(*v1beta1.FlinkCluster) bool { return !pr.alive() })
			assert.Equal(t, tc.want, fc.Status.Components.Job.State, "the end was on record before the shutdown")
			assert.Equal(t, 1, w.shutdownRequests())
			st, ok := pr.jm.ExitStatus()
			require.True(t, ok)
			assert.Equal(t, fakeflink.ExitSucceeded, st.Code, "Flink's shutDownCluster() exits 0")

			fc = w.until(t, "the Job Complete", 10, func(*v1beta1.FlinkCluster) bool {
				j := w.jmJob()
				return j != nil && jobConditionTrue(j, batchv1.JobComplete)
			})
			w.settle(3)
			fc = w.cluster()
			assert.Equal(t, tc.want, fc.Status.Components.Job.State, "the Job's Complete changes nothing")
			assert.Equal(t, v1beta1.ClusterStatePartiallyStopped, fc.Status.State, "KeepCluster keeps the ended Job")
			assert.False(t, meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionWaiting))
			assert.Equal(t, 1, eventsWith(w, controller.ReasonJobManagerShutdown))
			noViolations(t, w)
		})
	}
}

func TestJobModeJobManagerThatDoesNotAnswerTheShutdownHasItsJobDeleted(t *testing.T) {
	w := newWorldWith(t, 63, &setup{mode: v1beta1.JobManagerDeploymentTypeJob, build: keepEndedCluster})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	pr := w.leader()
	pr.jm.SetJobState(id, flinkclient.JobStateFailed)
	w.reconcile() // records Failed; the shutdown is asked on the next reconcile
	require.Equal(t, v1beta1.JobStateFailed, w.cluster().Status.Components.Job.State)
	w.apiDown = 1 // from now on the REST API times out

	fc = w.until(t, "waiting for the shutdown", 5, func(fc *v1beta1.FlinkCluster) bool {
		c := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionWaiting)
		return c != nil && c.Status == "True" && c.Reason == controller.ConditionReasonWaitingForJobManagerShutdown &&
			strings.Contains(c.Message, "does not answer")
	})
	assert.NotNil(t, w.jmJob(), "within the wait bound the Job is kept")
	assert.Zero(t, eventsWith(w, controller.ReasonJobManagerShutdownUnanswered))

	w.advance(waitBound+time.Minute, 20*time.Second)
	w.settle(5)
	fc = w.cluster()
	assert.Nil(t, w.jmJob(), "past the wait bound the JobManager Job is deleted")
	assert.False(t, pr.alive())
	assert.Equal(t, v1beta1.JobStateFailed, fc.Status.Components.Job.State)
	assert.Equal(t, 1, eventsWith(w, controller.ReasonJobManagerShutdownUnanswered))
	assert.Zero(t, w.shutdownRequests(), "no shutdown reached the JobManager")
	for _, note := range w.rec.notes {
		if strings.Contains(note, controller.ReasonJobManagerShutdownUnanswered) {
			assert.Contains(t, note, "did not take the shutdown")
		}
	}
	assert.False(t, meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionWaiting), "nothing left to wait for")
	noViolations(t, w)
}

// Found on real Flink 2.2.1: a JobManager may accept the shutdown, close its REST API and
// never exit. It gets what a SIGTERM would, its pod's termination grace period from the
// acceptance, not the wait bound from the job's end.
func TestJobModeJobManagerThatAcceptsTheShutdownButNeverExitsHasItsJobDeletedAfterItsGracePeriod(t *testing.T) {
	w := newWorldWith(t, 64, &setup{mode: v1beta1.JobManagerDeploymentTypeJob, build: keepEndedCluster})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	pr := w.leader()
	pr.jm.SetShutdownHangs(true)
	pr.jm.SetJobState(id, flinkclient.JobStateFailed)
	fc = w.until(t, "the shutdown accepted", 10, conditionIs(controller.ConditionWaiting, controller.ConditionReasonWaitingForJobManagerExit))
	require.Equal(t, 1, w.shutdownRequests())
	require.True(t, pr.alive(), "the JobManager hangs")
	require.NotNil(t, w.jmJob(), "within the grace period the Job is kept")

	grace := 30 * time.Second
	if pod := w.jmPods(); len(pod) == 1 && pod[0].Spec.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*pod[0].Spec.TerminationGracePeriodSeconds) * time.Second
	}
	require.Less(t, grace+time.Minute, waitBound, "the test tells the grace period from the wait bound")
	w.advance(grace+time.Minute, 10*time.Second)
	w.settle(5)
	fc = w.cluster()
	assert.Nil(t, w.jmJob(), "past the grace period the JobManager Job is deleted, long before the wait bound")
	assert.False(t, pr.alive())
	assert.Equal(t, v1beta1.JobStateFailed, fc.Status.Components.Job.State)
	assert.Equal(t, 1, eventsWith(w, controller.ReasonJobManagerShutdownUnanswered))
	assert.Equal(t, 1, w.shutdownRequests(), "the accepted shutdown is not asked again")
	for _, note := range w.rec.notes {
		if strings.Contains(note, controller.ReasonJobManagerShutdownUnanswered) {
			assert.Contains(t, note, "accepted the shutdown")
		}
	}
	noViolations(t, w)
}

// keepEndedCluster keeps every object of a cluster whose job ended, however it ended, so
// that the test sees the JobManager Job's own end.
func keepEndedCluster(fc *v1beta1.FlinkCluster) {
	keep := v1beta1.CleanupActionKeepCluster
	*fc = *builder.Wrap(fc).CleanupPolicy(keep, keep, keep).Obj()
}

// Found by TestInvariants (seed 1796543295381143632): an update's stop-with-savepoint was
// sent, the status write that recorded its trigger ID lost, and the Job-mode JobManager then
// failed. Its Job ended and no JobManager would ever answer, yet the update waited "to
// trigger the update savepoint" for ever. A JobManager Job that ended settles the trigger
// now: its outcome is unknown (Flink may have taken it), so the update asks the user.
func TestUpdateStopWhoseJobManagerJobFailedEnds(t *testing.T) {
	w := newWorldWith(t, 31, &setup{mode: v1beta1.JobManagerDeploymentTypeJob})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	// The trigger ID is recorded before the call, by a reconcile of its own; the write
	// recording the call's answer is lost.
	w.reconcile()
	lose := 0
	w.loseStatusWrites = &lose
	w.reconcile()
	sp := w.cluster().Status.Savepoint
	require.NotNil(t, sp, "the update's stop requested\n%s", w.dump())
	require.Equal(t, controller.SavepointStateRequested, sp.State, "the answer's write lost\n%s", w.dump())
	require.NotEmpty(t, sp.TriggerTime, "the trigger recorded before the call")
	pr := w.leader()
	require.NotNil(t, pr)
	w.stop(pr.pod, false, 1, "java.io.IOException: storage unavailable")
	fc = w.until(t, "the update asks the user", 60, conditionIs(controller.ConditionSavepointRequired, ""))
	assert.Equal(t, controller.SavepointStateUnknown, fc.Status.Savepoint.State, "Flink may have taken the savepoint")
	assert.Equal(t, id, fc.Status.Components.Job.ID, "nothing deployed without the job's state")
	noViolations(t, w)
}
