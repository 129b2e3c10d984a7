package simulation_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// during settles until the clock has moved on by d, failing the test as soon as ok (checked
// before every round) does not hold.
func (w *world) during(t *testing.T, d time.Duration, what string, ok func(fc *v1beta1.FlinkCluster) bool) {
	t.Helper()
	for end := w.clock.Now().Add(d); w.clock.Now().Before(end); w.settle(1) {
		if fc := w.cluster(); fc == nil || !ok(fc) {
			t.Fatalf("%s: broken at %s\n%s", what, w.clock.Now().Format(time.TimeOnly), w.dump())
		}
	}
}

func conditionIs(typ, reason string) func(fc *v1beta1.FlinkCluster) bool {
	return func(fc *v1beta1.FlinkCluster) bool {
		c := meta.FindStatusCondition(fc.Status.Conditions, typ)
		return c != nil && c.Status == "True" && (reason == "" || c.Reason == reason)
	}
}

// Hole 1 of issue 8: a new revision is a new deploy with a new job ID, written to status
// before its workload exists; the old job's FINISHED (its stop-with-savepoint) is never read
// as the new job's Succeeded, and the new job runs.
func TestHole1NewRevisionGetsANewJobID(t *testing.T) {
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

// Hole 1 of issue 8 (FLINK-27569): a JobManager restarted after its job ended, before the
// controller scaled it down, finds the job's result in the job result store (kept: the
// controller sets delete-on-commit false) and does not run main() again. The result is
// clean, so Flink lists no job and says nothing of how it ended (issue 17, hole 6): the
// controller does not guess.
func TestHole1RestartAfterTheJobEndedFindsItsResult(t *testing.T) {
	w := newWorldWith(t, 12, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	pr := w.leader()
	require.NotNil(t, pr)
	pr.jm.SetJobState(id, flinkclient.JobStateFinished)
	// The JobManager dies before the controller saw the result; the kubelet restarts it, and
	// it takes the leadership once the dead process's lease ran out — all before the next
	// reconcile.
	w.stop(pr.pod, false, 1, "java.lang.OutOfMemoryError")
	for i := 0; i < 20 && !(pr.alive() && pr.jm.Leads()); i++ {
		w.clock.Step(2 * time.Second)
		w.kube()
		w.flink()
	}
	require.True(t, pr.alive() && pr.jm.Leads(), "the restarted container leads\n%s", w.dump())
	require.Equal(t, 1, pr.restarts)
	// The result is clean: Flink lists no job (issue 17, hole 6).
	assert.Empty(t, pr.jm.JobIDs(), "the restarted JobManager does not list the job")
	assert.Equal(t, 1, w.truthOf(id).mains, "main() ran once")
	assert.True(t, w.fl.HasResult(pr.jm.JobResultStorePath(), id), "the result stays in the job result store")
	// How the job ended is known to no one now: the controller does not guess Succeeded
	// (issue 17, hole 6): the job is Lost, and its timeout applies (docs/troubleshooting.md).
	w.until(t, "Lost, not Succeeded on a guess", 400, func(fc *v1beta1.FlinkCluster) bool {
		require.NotEqual(t, v1beta1.JobStateSucceeded, fc.Status.Components.Job.State)
		return fc.Status.Components.Job.State == v1beta1.JobStateLost
	})
	noViolations(t, w)
}

// Hole 4 of issue 8: the leading JobManager's node is lost and its pod stays Terminating; the
// Deployment's new pod takes the leadership. The stuck pod, which no longer leads, blocks
// nothing: the controller trusts the new leader, takes savepoints and sees the job fail.
func TestHole4StuckTerminatingPodThatDoesNotLeadBlocksNothing(t *testing.T) {
	w := newWorldWith(t, 13, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	lost := w.leader()
	w.loseNode(lost)
	// The node monitor grace (50 s) and the JobManager's toleration (30 s) first.
	w.until(t, "a new JobManager leads and runs the job", 80, func(*v1beta1.FlinkCluster) bool {
		l := w.leader()
		return l != nil && l != lost && l.jm.JobState(id) == flinkclient.JobStateRunning
	})
	w.annotate(v1beta1.ControlAnnotation, v1beta1.ControlNameSavepoint)
	fc = w.until(t, "a savepoint", 30, func(fc *v1beta1.FlinkCluster) bool {
		w.finishTriggers(false)
		return fc.Status.Components.Job.SavepointLocation != ""
	})
	assert.Equal(t, w.newestSavepoint(), fc.Status.Components.Job.SavepointLocation)
	w.jobEvent(flinkclient.JobStateFailed)
	w.until(t, "the failure is seen", 20, jobIs(v1beta1.JobStateFailed))
	assert.True(t, slicesHasPod(w.jmPods(), lost.pod), "the lost node's pod is still Terminating")
	noViolations(t, w)
}

// Hole 4 of issue 8, the bound: the only JobManager pod of a Job-mode deploy is on a lost node
// and stays Terminating; no JobManager leads and none will. The controller says what it
// waits for (Waiting) and, past the wait bound, that it waited too long (WaitExceeded).
func TestHole4WaitWithoutLeaderIsBounded(t *testing.T) {
	w := newWorldWith(t, 14, &setup{mode: v1beta1.JobManagerDeploymentTypeJob})
	w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	lost := w.leader()
	w.loseNode(lost)
	fc := w.until(t, "Waiting", 60, conditionIs(controller.ConditionWaiting, ""))
	since := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionWaiting).LastTransitionTime.Time
	fc = w.until(t, "WaitExceeded", 300, func(*v1beta1.FlinkCluster) bool {
		w.clock.Step(5 * time.Second)
		return slicesContains(w.rec.notes, "Warning "+controller.ReasonWaitExceeded)
	})
	c := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionWaiting)
	require.NotNil(t, c)
	assert.Equal(t, since, c.LastTransitionTime.Time, "one wait, from the pod's loss")
	assert.GreaterOrEqual(t, w.clock.Now().Sub(since), waitBound, "exceeded only past the bound")
	assert.Contains(t, c.Message, "longer than the wait bound", "the condition says the bound passed")
	assert.True(t, slicesHasPod(w.jmPods(), lost.pod), "the lost node's pod is still Terminating")
	noViolations(t, w)
}

// Hole 5 of issue 8: a crash loop of a JobManager whose job ran keeps the job non-terminal
// (Lost, with the DeploymentFailed condition) and the Deployment scaled up, until the job
// is reported again — here the storage outage passes and HA recovers the job.
func TestHole5CrashLoopOfARunningJobIsNotTerminal(t *testing.T) {
	w := newWorldWith(t, 15, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	pr := w.leader()
	w.stop(pr.pod, false, 1, "java.io.IOException: storage unavailable")
	pr.crashing = 1 << 20
	fc = w.until(t, "Lost", 20, jobIs(v1beta1.JobStateLost))
	assert.True(t, conditionIs(controller.ConditionDeploymentFailed, "")(fc), "the DeploymentFailed condition says why")
	w.during(t, 8*time.Minute, "non-terminal and scaled up while it crash-loops", func(fc *v1beta1.FlinkCluster) bool {
		wl := w.workload()
		return fc.Status.Components.Job.State == v1beta1.JobStateLost && wl != nil && wl.replicas == 1 && !wl.deleting
	})
	pr.crashing = 0 // the outage passes
	// The kubelet's next try comes at the end of its back-off, at most five minutes.
	fc = w.until(t, "tracked again", 180, jobIs(v1beta1.JobStateRunning))
	assert.Equal(t, id, fc.Status.Components.Job.ID, "the same job, recovered from HA")
	assert.Equal(t, 1, w.truthOf(id).mains, "recovered, not resubmitted")
	assert.False(t, conditionIs(controller.ConditionDeploymentFailed, "")(fc))
	noViolations(t, w)
}

// Hole 5 of issue 8, the bound: a crash loop that does not pass ends the job at
// --lost-job-timeout (the Lost condition's reason LostTimeout), not before — once nothing
// can resume it: its HA data is gone (with the HA data kept, hole 3 of issue 17, the job is
// kept: TestHole3CrashLoopPastTheLostTimeoutResumesFromHA).
func TestHole5CrashLoopEndsAtTheLostTimeout(t *testing.T) {
	w := newWorldWith(t, 19, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	pr := w.leader()
	w.stop(pr.pod, false, 1, "java.io.IOException: storage unavailable")
	pr.crashing = 1 << 20
	fc := w.until(t, "Lost", 20, jobIs(v1beta1.JobStateLost))
	w.haDeletedExternally = true
	w.deleteHA()
	lostAt := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionLost).LastTransitionTime.Time
	w.until(t, "the Lost timeout", 400, func(fc *v1beta1.FlinkCluster) bool {
		if conditionIs(controller.ConditionLost, controller.ConditionReasonLostTimeout)(fc) {
			return true
		}
		require.False(t, flinkcluster.Terminal(fc.Status.Components.Job.State), "terminal before the Lost timeout\n%s", w.dump())
		return false
	})
	assert.GreaterOrEqual(t, w.clock.Now().Sub(lostAt), 10*time.Minute, "the Lost timeout is --lost-job-timeout")
	noViolations(t, w)
}

// Hole 6 of issue 8, Flink 2.3: main() threw after it submitted the job, which Flink
// cancelled: the application FAILED, the job CANCELED. That is a failed deployment
// (DeployFailed, with main()'s exception as the reason), not a cancel.
func TestHole6ApplicationFailedWithJobCanceledIsNotCancelled(t *testing.T) {
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

// Hole 6 of issue 8, with execution.submit-failed-job-on-application-error (which the
// mutating webhook injects): main() threw before it submitted the job, and Flink lists a FAILED
// "(application driver)" job carrying the exception — before 2.3 under the deploy's fixed job
// ID, which must not be taken for the job; on 2.3 with the application FAILED. The deploy
// failed: DeployFailed (not Failed), with the exception as the reason and DeploymentFailed
// True (kind ApplicationFailed).
func TestHole6ApplicationDriverJobIsDeployFailed(t *testing.T) {
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

// Hole 6 of issue 8, Flink 2.3 (FLIP-560): a JobManager restarted under a running job recovers
// it only once main() reaches execute() again; meanwhile the application is RUNNING with no
// job. That is not Lost, however long past the HA recovery grace: the controller says it
// waits for the application, and tracks the job again once it runs.
func TestHole6RunningApplicationWithoutJobIsNotLost(t *testing.T) {
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

func slicesHasPod(pods []corev1.Pod, name string) bool {
	return slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Name == name })
}
