package simulation_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
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

// Directed tests of issue 17's holes 4 and 5 (the savepoint recovered after a 404, Job-mode
// rewinds). Each fails on 61c15d7 (hack/simulation-on.sh 61c15d7, the table in doc.go).

// storeDuration is past Flink's rest.async.store-duration (default 5 min): the controller was
// down longer, so every savepoint result it had not read is gone.
const storeDuration = 6 * time.Minute

// triggerOutside takes a savepoint of the leader's job through its REST API, as a user with
// the Flink UI or a script would: the controller never hears of its trigger.
func (w *world) triggerOutside(t *testing.T, jobID string) {
	t.Helper()
	l := w.leader()
	require.NotNil(t, l, "a leader")
	rec := httptest.NewRecorder()
	l.jm.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/jobs/"+jobID+"/savepoints", strings.NewReader(`{"cancel-job":false}`)))
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	l.jm.CompleteSavepoints()
}

// Hole 4: the update's stop-with-savepoint took its savepoint, but the job did not end — Flink
// restarted it (the stop's operation failed after the savepoint) — and the controller was
// down past rest.async.store-duration, so it finds the trigger gone (404) and the stop's
// savepoint in the checkpoint statistics. Taking that savepoint for final would delete the
// JobManager under the running job; the controller sees the job run and stops it again.
//
// The fake's stop always ends the job, so the test restarts it by hand after the stop's
// savepoint completed (what Flink's restart strategy does when the stop fails to finish).
func TestIssue17Hole4StopThatDidNotEndTheJobIsNotFinal(t *testing.T) {
	w := newWorldWith(t, 41, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	w.until(t, "the stop triggered", 10, func(fc *v1beta1.FlinkCluster) bool {
		sp := fc.Status.Savepoint
		return sp != nil && sp.JobID == id && sp.State == controller.SavepointStateInProgress
	})
	l := w.leader()
	l.jm.CompleteSavepoints()
	require.Len(t, w.savepoints, 1, "the stop took its savepoint")
	l.jm.SetJobState(id, flinkclient.JobStateRunning) // ... and the job restarted
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

// Hole 4: the update's stop failed with the job still running, and its result expired while
// the controller was down; the checkpoint statistics name a savepoint someone took through
// Flink's API minutes before the stop was triggered. That savepoint is not the stop's result:
// it is never recorded as the final savepoint, and the job is stopped again.
func TestIssue17Hole4SavepointTriggeredBeforeTheStopIsNotItsResult(t *testing.T) {
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

// Hole 5: a Job-mode JobManager ran its job for days without the Flink API ever answering
// the controller, then failed. Kubernetes recorded the container's start and finish: the job
// is Failed (it may have run), not DeployFailed, and the next update does not restore the
// deploy's original savepoint — it asks for a savepoint. A JobManager that failed as it
// started is still a failed deploy, whose next update restores the same savepoint.
func TestIssue17Hole5JobManagerRunDecidesWhetherTheJobRan(t *testing.T) {
	const original = "file:///savepoints/original"
	cases := []struct {
		name string
		// ran lets the JobManager run before it fails.
		ran       time.Duration
		broken    bool
		wantState string
	}{
		{name: "ran for three days: Failed, the next update asks for a savepoint", ran: 72 * time.Hour, wantState: v1beta1.JobStateFailed},
		{name: "main() threw at start: DeployFailed, the next update restores the same savepoint", broken: true, wantState: v1beta1.JobStateDeployFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldWith(t, 51, &setup{mode: v1beta1.JobManagerDeploymentTypeJob, build: func(fc *v1beta1.FlinkCluster) {
				fc.Spec.Job.FromSavepoint = ptrTo(original)
				if tc.broken {
					fc.Spec.Job.Args = []string{"--broken"}
				}
			}})
			w.apiDown = 1 // the controller never hears from Flink: settle does not count it down
			if !tc.broken {
				w.until(t, "the job runs in Flink", 20, func(fc *v1beta1.FlinkCluster) bool {
					pr := w.leader()
					return pr != nil && pr.jm.JobState(fc.Status.Components.Job.ID) == flinkclient.JobStateRunning
				})
				w.clock.Step(tc.ran)
				w.stop(w.leader().pod, false, 1, "java.lang.OutOfMemoryError")
			}
			fc := w.until(t, "ended", 20, func(fc *v1beta1.FlinkCluster) bool {
				return fc.Status.Components.Job != nil && flinkcluster.Terminal(fc.Status.Components.Job.State)
			})
			assert.Equal(t, tc.wantState, fc.Status.Components.Job.State)
			id := fc.Status.Components.Job.ID

			w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
			if tc.wantState == v1beta1.JobStateFailed {
				fc = w.until(t, "SavepointRequired", 30, func(fc *v1beta1.FlinkCluster) bool {
					return meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired)
				})
				assert.Equal(t, id, fc.Status.Components.Job.ID, "no new deploy rewinds the job to %s", original)
			} else {
				fc = w.until(t, "the next deploy", 30, func(fc *v1beta1.FlinkCluster) bool { return fc.Status.Components.Job.ID != id })
				assert.Equal(t, original, fc.Status.Components.Job.FromSavepoint)
			}
			noViolations(t, w)
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
