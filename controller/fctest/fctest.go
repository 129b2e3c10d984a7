// Package fctest builds FlinkCluster objects for tests: MakeCluster("name").Deployment().Obj().
package fctest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// Wrapper wraps a FlinkCluster under construction.
type Wrapper struct{ fc v1beta1.FlinkCluster }

// MakeCluster returns an application-mode cluster with Job deployment type, Kubernetes HA,
// Flink 2.2 and a jar, in namespace "default".
func MakeCluster(name string) *Wrapper {
	return &Wrapper{fc: v1beta1.FlinkCluster{
		TypeMeta: metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: v1beta1.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: "default",
			UID:       types.UID("uid-" + name),
		},
		Spec: v1beta1.FlinkClusterSpec{
			FlinkVersion: "2.2",
			Image:        v1beta1.ImageSpec{Name: "flink:2.2.1", PullPolicy: "IfNotPresent"},
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
		},
	}}
}

// Obj returns a copy of the cluster.
func (w *Wrapper) Obj() *v1beta1.FlinkCluster { return w.fc.DeepCopy() }

// Namespace sets the namespace.
func (w *Wrapper) Namespace(ns string) *Wrapper { w.fc.Namespace = ns; return w }

// UID sets the UID.
func (w *Wrapper) UID(uid string) *Wrapper { w.fc.UID = types.UID(uid); return w }

// DeploymentType sets spec.jobManager.deploymentType.
func (w *Wrapper) DeploymentType(t v1beta1.JobManagerDeploymentType) *Wrapper {
	w.fc.Spec.JobManager.DeploymentType = t
	return w
}

// Deployment runs the JobManager as a Deployment (with the shutdown setting it requires).
func (w *Wrapper) Deployment() *Wrapper {
	w.fc.Spec.FlinkProperties["execution.shutdown-on-application-finish"] = "false"
	return w.DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment)
}

// FlinkVersion sets spec.flinkVersion.
func (w *Wrapper) FlinkVersion(v string) *Wrapper { w.fc.Spec.FlinkVersion = v; return w }

// Property sets a flinkProperties entry.
func (w *Wrapper) Property(k, v string) *Wrapper { w.fc.Spec.FlinkProperties[k] = v; return w }

// Mode sets spec.job.mode.
func (w *Wrapper) Mode(m v1beta1.JobMode) *Wrapper { w.fc.Spec.Job.Mode = ptr.To(m); return w }

// Cleanup sets the cleanup policy.
func (w *Wrapper) Cleanup(succeeds, fails, cancelled v1beta1.CleanupAction) *Wrapper {
	w.fc.Spec.Job.CleanupPolicy = &v1beta1.CleanupPolicy{AfterJobSucceeds: succeeds, AfterJobFails: fails, AfterJobCancelled: cancelled}
	return w
}

// RestartFromSavepoint sets restartPolicy FromSavepointOnFailure with a state age limit.
func (w *Wrapper) RestartFromSavepoint(maxAgeSeconds int32) *Wrapper {
	w.fc.Spec.Job.RestartPolicy = ptr.To(v1beta1.JobRestartPolicyFromSavepointOnFailure)
	w.fc.Spec.Job.MaxStateAgeToRestoreSeconds = ptr.To(maxAgeSeconds)
	return w
}

// Shutdown sets the JobManager's preStop delay and termination grace period.
func (w *Wrapper) Shutdown(preStopSeconds int32, graceSeconds int64) *Wrapper {
	w.fc.Spec.JobManager.PreStopDelaySeconds = ptr.To(preStopSeconds)
	w.fc.Spec.JobManager.TerminationGracePeriodSeconds = ptr.To(graceSeconds)
	return w
}

// Annotation sets a metadata annotation.
func (w *Wrapper) Annotation(k, v string) *Wrapper {
	if w.fc.Annotations == nil {
		w.fc.Annotations = map[string]string{}
	}
	w.fc.Annotations[k] = v
	return w
}

// FromSavepoint sets the savepoint the first deploy restores (spec.job.fromSavepoint).
func (w *Wrapper) FromSavepoint(path string) *Wrapper { w.fc.Spec.Job.FromSavepoint = &path; return w }

// Args sets the job's arguments.
func (w *Wrapper) Args(args ...string) *Wrapper { w.fc.Spec.Job.Args = args; return w }

// ClassName sets the job's entry class.
func (w *Wrapper) ClassName(c string) *Wrapper { w.fc.Spec.Job.ClassName = ptr.To(c); return w }

// TaskManagerDeployment runs the TaskManagers as a Deployment.
func (w *Wrapper) TaskManagerDeployment() *Wrapper {
	w.fc.Spec.TaskManager.DeploymentType = v1beta1.TaskManagerDeploymentTypeDeployment
	return w
}
