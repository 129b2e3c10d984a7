package simulation_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Restores: a deploy restores its savepoint through its Flink configuration, which names only
// HA once the job ran, and a job that may have run is never redeployed from the deploy's own
// restore point (that would rewind it).

// The initial --fromSavepoint stays in no long-lived template: a deploy from a savepoint
// restores it through its Flink configuration, which the controller empties once it saw the
// job run. A JobManager container restarted after the HA data was deleted behind the
// controller then finds no savepoint to rewind to (checked by the model on every main()).
func TestInitialSavepointLeavesTheConfigurationOnceTheJobRan(t *testing.T) {
	w := newWorldWith(t, 5, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, build: func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Job.FromSavepoint = ptr.To("file:///savepoints/initial")
	}})
	require.Equal(t, "", w.configuredSavepoint(), "nothing deployed yet")
	w.until(t, "deployed", 10, func(*v1beta1.FlinkCluster) bool { return w.workload() != nil })
	assert.Equal(t, "file:///savepoints/initial", w.fromOf[w.workload().jobID], "the first deploy restores the savepoint")
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	assert.Equal(t, "file:///savepoints/initial", fc.Status.Components.Job.FromSavepoint, "the status keeps what the deploy restored")
	assert.Equal(t, controller.ResumeFromHAOnly, w.configuredSavepoint(), "the Flink configuration names only a path that does not exist")

	w.deleteJobGraphs()
	w.haDeletedExternally = true
	pod := w.leader().pod
	w.stop(pod, false, 1, "kubelet restarted the container")
	w.until(t, "the restarted container leads", 20, func(*v1beta1.FlinkCluster) bool {
		pr := w.procs[pod]
		return pr.alive() && pr.restarts > 0 && pr.jm.Leads()
	})
	assert.Equal(t, controller.ResumeFromHAOnly, w.procs[pod].from(), "the restarted JobManager restores no savepoint of the deploy")
	assert.Equal(t, 1, w.truthOf(id).mains, "main() did not start the job again from empty state (the HA data is gone)")
	noViolations(t, w)
}

// The reconcile that first sees the job run may not rebuild the Flink configuration (here it
// handles a cancel request): the savepoint still leaves the configuration before the status
// records the run (found by the property test: a JobManager restarted during the cancel, with
// the HA data gone, restored the deploy's savepoint).
func TestSavepointLeavesTheConfigurationWhenACancelComesFirst(t *testing.T) {
	w := newWorldWith(t, 6, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, build: func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Job.FromSavepoint = ptr.To("file:///savepoints/initial")
	}})
	requested := false
	ran := func() bool {
		j := w.cluster().Status.Components.Job
		return j != nil && w.recordedRan(j.ID)
	}
	for range 30 {
		if ran() {
			break
		}
		w.clock.Step(2 * time.Second)
		w.kube()
		w.flink()
		if !requested && w.runningJob() != "" {
			w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.CancelRequested = ptr.To(true) })
			requested = true
		}
		w.reconcileAtOnce()
	}
	require.True(t, requested, "the job ran in Flink")
	require.True(t, ran(), "the status records the run\n%s", w.dump())
	assert.Equal(t, controller.ResumeFromHAOnly, w.configuredSavepoint(), "no savepoint left to restore once the status records the run")
	noViolations(t, w)
}

// Deployment mode, Flink 2.2: a deploy restores a savepoint holding state of an operator the
// job no longer has. The entrypoint before 2.3 overwrites the file's ignore-unclaimed-state,
// so allowNonRestoredState works only through the command line's --fromSavepoint
// $(FLINK_ADMISSION_RESTORE_PATH) --allowNonRestoredState, the variable read from the
// ConfigMap at each container start. Once the job ran the controller rewrites it to
// ResumeFromHAOnly: a restarted container recovers from HA, never from the savepoint again,
// and with the HA data deleted it fails instead of rewinding.
func TestAllowNonRestoredStateInDeploymentMode(t *testing.T) {
	const sp = "file:///savepoints/with-removed-operator"
	for _, allow := range []bool{true, false} {
		t.Run(map[bool]string{true: "allowNonRestoredState: restored, then only from HA", false: "not allowed: the restore fails"}[allow], func(t *testing.T) {
			w := newWorldWith(t, 71, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, build: func(fc *v1beta1.FlinkCluster) {
				fc.Spec.Job.FromSavepoint = ptr.To(sp)
				fc.Spec.Job.AllowNonRestoredState = ptr.To(allow)
			}})
			w.fl.SetUnclaimedState(sp, "removed-map")
			if !allow {
				// Flink reports the job FAILED (JobInitializationException): it never ran.
				fc := w.until(t, "Failed", 30, jobIs(v1beta1.JobStateFailed))
				assert.False(t, w.truthOf(fc.Status.Components.Job.ID).ran, "the restore failed before the job ran")
				assert.Empty(t, fc.Status.Components.Job.StartTime)
				noViolations(t, w)
				return
			}
			fc := w.until(t, "running", 30, jobIs(v1beta1.JobStateRunning))
			id := fc.Status.Components.Job.ID
			leader := w.leader()
			require.NotNil(t, leader)
			assert.Equal(t, sp, leader.jm.Config().FromSavepoint, "the first container restores the savepoint from the command line")
			assert.True(t, leader.jm.Config().AllowNonRestoredState)
			pod := leader.pod

			w.until(t, "the restore path replaced", 20, func(*v1beta1.FlinkCluster) bool {
				return w.configuredSavepoint() == controller.ResumeFromHAOnly
			})
			w.stop(pod, false, 137, "OOMKilled")
			fc = w.until(t, "running again in a restarted container", 40, func(fc *v1beta1.FlinkCluster) bool {
				pr := w.procs[pod]
				return pr != nil && pr.alive() && pr.jm.JobState(id) == "RUNNING" && jobIs(v1beta1.JobStateRunning)(fc)
			})
			assert.Equal(t, id, fc.Status.Components.Job.ID)
			restarted := w.procs[pod].jm.Config()
			assert.Equal(t, controller.ResumeFromHAOnly, restarted.FromSavepoint,
				"the restarted container's %s is the ConfigMap's new value, the pod template unchanged", resources.EnvRestorePath)
			assert.Equal(t, 1, w.truthOf(id).mains, "recovered from HA, not started from the savepoint again")

			w.haDeletedExternally = true
			w.deleteHA()
			fc = w.until(t, "Failed with SavepointRequired", 40, func(fc *v1beta1.FlinkCluster) bool {
				return fc.Status.Components.Job.State == v1beta1.JobStateFailed &&
					conditionIs(controller.ConditionSavepointRequired, controller.ConditionReasonHAMetadataMissing)(fc)
			})
			assert.Equal(t, 1, w.truthOf(id).mains, "main() never rewound the job to the savepoint")
			noViolations(t, w)
		})
	}
}

// A job that ran and ended while the Flink API never answered (found by the property test,
// seed 1796063887443789867 before the model changed): its Job-mode JobManager exited, Flink
// removed the job graph, and the controller took "JobManager gone, no job graph" for "never
// ran" — an update then redeployed from the deploy's own restore point, rewinding the job.
// A deploy whose JobManagers are gone, unobserved, is now taken as one whose job may have
// run: without a confirmed savepoint the update stops with SavepointRequired.
func TestUnobservedRunIsNotTakenForNeverRan(t *testing.T) {
	cases := []struct {
		name string
		mode v1beta1.JobManagerDeploymentType
		seed int64
		// gone takes the failed job's JobManagers away.
		gone func(t *testing.T, w *world)
	}{
		// The JobManager outlives its job (the controller's configuration turns
		// execution.shutdown-on-application-finish off) until the controller, which never
		// hears from Flink here, ends it: it dies on its own (killed: an OOM, a node problem).
		{"Job mode: the JobManager is killed", v1beta1.JobManagerDeploymentTypeJob, 8, func(t *testing.T, w *world) {
			w.stop(w.leader().pod, false, 137, "OOMKilled")
			w.until(t, "the JobManager gone", 20, func(*v1beta1.FlinkCluster) bool { return w.leader() == nil })
		}},
		// Seed 1796067998066026145: the pods gone with their workload, nothing left says the
		// job did not run.
		{"Deployment mode: the workload is deleted", v1beta1.JobManagerDeploymentTypeDeployment, 9, func(_ *testing.T, w *world) {
			w.deleteWorkload()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldWith(t, tc.seed, &setup{mode: tc.mode})
			w.apiDown = 1 // the controller never hears from Flink: settle does not count it down
			w.until(t, "the job runs in Flink", 20, func(fc *v1beta1.FlinkCluster) bool {
				pr := w.leader()
				return pr != nil && pr.jm.JobState(fc.Status.Components.Job.ID) == flinkclient.JobStateRunning
			})
			id := w.cluster().Status.Components.Job.ID
			w.leader().jm.SetJobState(id, flinkclient.JobStateFailed)
			tc.gone(t, w)
			require.True(t, w.truthOf(id).ran, "the job ran")

			w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
			fc := w.until(t, "SavepointRequired", 30, func(fc *v1beta1.FlinkCluster) bool {
				return meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired)
			})
			assert.Equal(t, id, fc.Status.Components.Job.ID, "no new deploy")
			noViolations(t, w)
		})
	}
}

// A Job-mode JobManager ran its job for days without the Flink API ever answering the
// controller, then failed. Kubernetes recorded the container's start and finish: the job is
// Failed (it may have run), not DeployFailed, and the next update does not restore the
// deploy's original savepoint — it asks for a savepoint. A JobManager that failed as it
// started is still a failed deploy, whose next update restores the same savepoint.
func TestJobManagerRunDecidesWhetherTheJobRan(t *testing.T) {
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
