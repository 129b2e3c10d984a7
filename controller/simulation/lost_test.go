package simulation_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Lost jobs: a JobManager that crash-loops or restarts after its job ended leaves the job
// Lost, not terminal, until Flink reports it again or the Lost timeout ends it.

// FLINK-27569: a JobManager restarted after its job ended, before the controller scaled it
// down, finds the job's result in the job result store (kept: the controller sets
// delete-on-commit false) and does not run main() again. The result is clean, so Flink lists
// no job and says nothing of how it ended: the controller does not guess.
func TestJobManagerRestartedAfterTheJobEndedFindsItsResult(t *testing.T) {
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
	// The result is clean: Flink lists no job.
	assert.Empty(t, pr.jm.JobIDs(), "the restarted JobManager does not list the job")
	assert.Equal(t, 1, w.truthOf(id).mains, "main() ran once")
	assert.True(t, w.fl.HasResult(pr.jm.JobResultStorePath(), id), "the result stays in the job result store")
	// How the job ended is known to no one now: the controller does not guess Succeeded:
	// the job is Lost, and its timeout applies (docs/troubleshooting.md).
	w.until(t, "Lost, not Succeeded on a guess", 400, func(fc *v1beta1.FlinkCluster) bool {
		require.NotEqual(t, v1beta1.JobStateSucceeded, fc.Status.Components.Job.State)
		return fc.Status.Components.Job.State == v1beta1.JobStateLost
	})
	noViolations(t, w)
}

// The job ends on its own (FINISHED or FAILED, not a stop the controller asked for) and its
// JobManager dies before the next reconcile; the kubelet restarts the container. The job's
// result is clean in the job result store: the restarted JobManager lists no job (2.3: the
// application FINISHED whatever the end was), and Flink removed the job's graph and checkpoint
// ConfigMap while the cluster ConfigMap, older than the restarted container, was kept. Nothing
// tells how the job ended: the controller records Lost=True/EndedUnobserved, neither Succeeded
// nor Failed, and cleans up nothing (not even the JobManager's scale-down: its previous
// container log says how the job ended), however long it waits — the cleanup policies here
// delete the cluster.
func TestJobThatEndedWhileItsJobManagerRestartedIsNotFailedByLost(t *testing.T) {
	for _, end := range []string{flinkclient.JobStateFinished, flinkclient.JobStateFailed} {
		for _, v23 := range []bool{false, true} {
			t.Run(end+"/"+map[bool]string{false: "2.2", true: "2.3"}[v23], func(t *testing.T) {
				w := newWorldWith(t, 25, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, v23: v23, build: func(fc *v1beta1.FlinkCluster) {
					fc.Spec.Job.CleanupPolicy = &v1beta1.CleanupPolicy{AfterJobSucceeds: v1beta1.CleanupActionDeleteCluster,
						AfterJobFails: v1beta1.CleanupActionDeleteCluster, AfterJobCancelled: v1beta1.CleanupActionDeleteCluster}
				}})
				fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
				id := fc.Status.Components.Job.ID
				pr := w.leader()
				require.NotNil(t, pr)
				pr.jm.SetJobState(id, end)
				// The JobManager dies before the next reconcile and its container restarts.
				w.stop(pr.pod, false, 137, "OOMKilled")
				for i := 0; i < 20 && !(pr.alive() && pr.jm.Leads()); i++ {
					w.clock.Step(2 * time.Second)
					w.kube()
					w.flink()
				}
				require.True(t, pr.alive() && pr.jm.Leads(), "the restarted container leads\n%s", w.dump())
				require.Empty(t, pr.jm.JobIDs(), "a clean result: Flink lists no job")

				// Past the HA recovery grace and the Lost timeout: never recorded as an end
				// Flink did not report, never cleaned up.
				w.during(t, 15*time.Minute, "no end recorded, nothing cleaned up", func(fc *v1beta1.FlinkCluster) bool {
					wl := w.workload()
					return !flinkcluster.Terminal(fc.Status.Components.Job.State) &&
						!conditionIs(controller.ConditionLost, controller.ConditionReasonLostTimeout)(fc) &&
						wl != nil && !wl.deleting && wl.replicas == 1
				})
				fc = w.cluster()
				assert.Equal(t, v1beta1.JobStateLost, fc.Status.Components.Job.State)
				require.True(t, conditionIs(controller.ConditionLost, controller.ConditionReasonEndedUnobserved)(fc), w.dump())
				assert.Contains(t, meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionLost).Message, "how it ended is unknown")
				tmKey := types.NamespacedName{Namespace: ns, Name: resources.TaskManagerName(name)}
				assert.True(t, w.cl.Get(bg, tmKey, &appsv1.StatefulSet{}) == nil || w.cl.Get(bg, tmKey, &appsv1.Deployment{}) == nil, "the TaskManagers are kept")
				assert.Equal(t, v1beta1.ClusterStatePartiallyStopped, w.cluster().Status.State)
				for _, n := range w.rec.notes {
					assert.NotContains(t, n, "afterJobFails (DeleteCluster) applies")
				}
				assert.Equal(t, 1, w.truthOf(id).mains)
				noViolations(t, w)
			})
		}
	}
}

// A crash loop of a JobManager whose job ran keeps the job non-terminal (Lost, with the
// DeploymentFailed condition) and the Deployment scaled up, until the job is reported again —
// here the storage outage passes and HA recovers the job.
func TestCrashLoopOfARunningJobIsNotTerminal(t *testing.T) {
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

// The bound: a crash loop that does not pass ends the job at --lost-job-timeout (the Lost
// condition's reason LostTimeout), not before — once nothing can resume it: its HA data is
// gone (with the HA data kept the job is kept: TestCrashLoopPastTheLostTimeoutResumesFromHA).
func TestCrashLoopWithoutHADataEndsAtTheLostTimeout(t *testing.T) {
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

// A Deployment-mode JobManager ran its job, and checkpointed, while Flink's REST API never
// answered the controller; its node was lost, and the replacement recovered the job, which
// then failed (Flink removed its job graph), and crash-looped. Flink never reported the job
// RUNNING, but the first pod, cut off on the lost node, still reports its container running
// since before the loss: the job may have run. Taking the crash loop for a failed deploy
// (DeployFailed) let the next update deploy from the deploy's own restore point (empty
// state) and rewind the job (seed 1796139225380832786); the job is Lost, and the next
// update asks for a savepoint instead.
func TestCrashLoopAfterAnUnreportedRunIsNotDeployFailed(t *testing.T) {
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
