package simulation_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// Applications: how main() failed (before or after it submitted the job) and a Flink 2.3
// application running without its job decide the job's state.

// Flink 2.3: main() threw after it submitted the job, which Flink cancelled: the application
// FAILED, the job CANCELED. That is a failed deployment (DeployFailed, with main()'s exception
// as the reason), not a cancel.
func TestApplicationFailedWithJobCanceledIsNotCancelled(t *testing.T) {
	w := newWorldWith(t, 16, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, v23: true})
	w.fl.SetProgram(fakeflink.Program{Throw: brokenMain, ThrowAfterSubmit: true})
	fc := w.until(t, "a terminal state", 30, func(fc *v1beta1.FlinkCluster) bool {
		j := fc.Status.Components.Job
		return j != nil && (j.State == v1beta1.JobStateDeployFailed || j.State == v1beta1.JobStateFailed || j.State == v1beta1.JobStateCancelled)
	})
	assert.Equal(t, v1beta1.JobStateDeployFailed, fc.Status.Components.Job.State, "the job never ran: main() failed")
	assert.Contains(t, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"), "broken", "the reason carries main()'s exception")
	noViolations(t, w)
}

// With execution.submit-failed-job-on-application-error (which the mutating webhook injects):
// main() threw before it submitted the job, and Flink lists a FAILED "(application driver)"
// job carrying the exception — before 2.3 under the deploy's fixed job ID, which must not be
// taken for the job; on 2.3 with the application FAILED. The deploy failed: DeployFailed (not
// Failed), with the exception as the reason and DeploymentFailed True (kind
// ApplicationFailed).
func TestApplicationDriverJobIsDeployFailed(t *testing.T) {
	for _, v23 := range []bool{false, true} {
		w := newWorldWith(t, 17, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, v23: v23, build: func(fc *v1beta1.FlinkCluster) {
			fc.Spec.FlinkProperties = map[string]string{fakeflink.PropSubmitFailedJob: "true"}
			fc.Spec.Job.Args = []string{"--broken"}
		}})
		fc := w.until(t, "a terminal state", 30, func(fc *v1beta1.FlinkCluster) bool {
			j := fc.Status.Components.Job
			return j != nil && (j.State == v1beta1.JobStateDeployFailed || j.State == v1beta1.JobStateFailed)
		})
		require.Equal(t, flinkclient.JobStateFailed, w.leader().jm.JobState(fc.Status.Components.Job.ID), "Flink lists the driver job FAILED (2.3: %v)", v23)
		assert.Equal(t, v1beta1.JobStateDeployFailed, fc.Status.Components.Job.State, "2.3: %v", v23)
		assert.Contains(t, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"), brokenMain, "the reason is main()'s exception")
		c := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionDeploymentFailed)
		require.NotNil(t, c, "DeploymentFailed is set")
		assert.Equal(t, metav1.ConditionTrue, c.Status, "2.3: %v", v23)
		assert.Equal(t, state.FailureApplication, c.Reason, "2.3: %v", v23)
		noViolations(t, w)
	}
}

// Flink 2.3 (FLIP-560): a JobManager restarted under a running job recovers
// it only once main() reaches execute() again; meanwhile the application is RUNNING with no
// job. That is not Lost, however long past the HA recovery grace: the controller says it
// waits for the application, and tracks the job again once it runs.
func TestRunningApplicationWithoutJobIsNotLost(t *testing.T) {
	w := newWorldWith(t, 18, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, v23: true})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	w.fl.SetProgram(fakeflink.Program{BlockBeforeExecute: true})
	pr := w.leader()
	w.stop(pr.pod, false, 1, "java.lang.OutOfMemoryError")
	w.until(t, "the application runs without its job", 20, func(*v1beta1.FlinkCluster) bool {
		l := w.leader()
		return l != nil && l.jm.ApplicationState() == flinkclient.ApplicationStateRunning && len(l.jm.JobIDs()) == 0
	})
	w.during(t, 4*time.Minute, "not Lost past the HA recovery grace", func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Components.Job.State == v1beta1.JobStateRunning
	})
	assert.True(t, conditionIs(controller.ConditionWaiting, controller.ConditionReasonWaitingForApplication)(w.cluster()))
	w.fl.ReleaseMain()
	fc = w.until(t, "the job runs again", 20, func(fc *v1beta1.FlinkCluster) bool {
		return jobIs(v1beta1.JobStateRunning)(fc) && w.runningJob() == id
	})
	assert.Equal(t, id, fc.Status.Components.Job.ID)
	assert.Equal(t, 1, w.truthOf(id).mains, "recovered from HA, main() not rerun from scratch")
	noViolations(t, w)
}
