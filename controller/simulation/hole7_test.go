package simulation_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/resources"
)

// Issue 17 hole 7 in Deployment mode, Flink 2.2: a deploy restores a savepoint holding state
// of an operator the job no longer has. The entrypoint before 2.3 overwrites the file's
// ignore-unclaimed-state, so allowNonRestoredState works only through the command line's
// --fromSavepoint $(FLINK_ADMISSION_RESTORE_PATH) --allowNonRestoredState, the variable read
// from the ConfigMap at each container start. Once the job ran the controller rewrites it to
// ResumeFromHAOnly: a restarted container recovers from HA, never from the savepoint again,
// and with the HA data deleted it fails instead of rewinding.
func TestHole17AllowNonRestoredStateInDeploymentMode(t *testing.T) {
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
