package builder

import (
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// MakeAppCluster returns the cluster the controller's tests start from: an Application-mode
// job cluster in namespace "default" with the Job deployment type, Kubernetes HA, Flink 2.2, a
// jar, a savepointsDir, one JobManager and two TaskManagers, and a cleanup policy that deletes
// the cluster whatever the job's end. Unlike MakeFlinkCluster it sets a UID, so that owner
// references built from it are valid without an API server.
func MakeAppCluster(name string) *FlinkClusterWrapper {
	return MakeFlinkCluster(name, "default").UID("uid-" + name).
		Spec(func(s *v1beta1.FlinkClusterSpec) {
			*s = v1beta1.FlinkClusterSpec{
				FlinkVersion: "2.2",
				Image:        v1beta1.ImageSpec{Name: Image, PullPolicy: "IfNotPresent"},
				JobManager:   &v1beta1.JobManagerSpec{Replicas: ptr.To[int32](1)},
				TaskManager:  &v1beta1.TaskManagerSpec{Replicas: ptr.To[int32](2)},
				FlinkProperties: map[string]string{
					"high-availability.type":       "kubernetes",
					"high-availability.storageDir": "file:///flink-ha",
				},
				Job: &v1beta1.JobSpec{
					JarFile:       ptr.To("local:///opt/flink/usrlib/job.jar"),
					ClassName:     ptr.To("org.example.Job"),
					SavepointsDir: ptr.To("file:///savepoints"),
					Mode:          ptr.To(v1beta1.JobModeApplication),
					CleanupPolicy: &v1beta1.CleanupPolicy{
						AfterJobSucceeds:  v1beta1.CleanupActionDeleteCluster,
						AfterJobFails:     v1beta1.CleanupActionDeleteCluster,
						AfterJobCancelled: v1beta1.CleanupActionDeleteCluster,
					},
				},
			}
		})
}

// Namespace sets metadata.namespace.
func (w *FlinkClusterWrapper) Namespace(ns string) *FlinkClusterWrapper {
	w.obj.Namespace = ns
	return w
}

// UID sets metadata.uid.
func (w *FlinkClusterWrapper) UID(uid string) *FlinkClusterWrapper {
	w.obj.UID = types.UID(uid)
	return w
}

// Deployment runs the JobManager as a Deployment, with the shutdown setting that requires.
func (w *FlinkClusterWrapper) Deployment() *FlinkClusterWrapper {
	return w.FlinkProperty("execution.shutdown-on-application-finish", "false").
		DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment)
}

// Shutdown sets the JobManager's preStop delay and termination grace period.
func (w *FlinkClusterWrapper) Shutdown(preStopSeconds int32, graceSeconds int64) *FlinkClusterWrapper {
	return w.PreStop(preStopSeconds).Grace(graceSeconds)
}

// RestartFromSavepoint sets restartPolicy FromSavepointOnFailure with a state age limit.
func (w *FlinkClusterWrapper) RestartFromSavepoint(maxAgeSeconds int32) *FlinkClusterWrapper {
	return w.RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).MaxStateAge(maxAgeSeconds)
}

// Args sets spec.job.args.
func (w *FlinkClusterWrapper) Args(args ...string) *FlinkClusterWrapper {
	w.job().Args = args
	return w
}
