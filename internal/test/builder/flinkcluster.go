// Package builder makes FlinkCluster test objects in the style of kueue's test wrappers:
//
//	fc := builder.MakeFlinkCluster("wordcount", "default").
//		DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).
//		HA().
//		Obj()
//
// MakeFlinkCluster starts from the smallest valid cluster: an Application-mode job cluster
// with a savepointsDir (so that the cluster can be updated) and nothing else, so that every
// other field is at its default and tests say only what they care about. The setters change
// one thing each and return the wrapper; Obj returns a deep copy, so a wrapper can be reused
// as the base of several objects.
package builder

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// Defaults of the minimal cluster MakeFlinkCluster builds.
const (
	// Image is the Flink image of the minimal cluster.
	Image = "flink:2.2.1"
	// FlinkVersion is the Flink version of the minimal cluster.
	FlinkVersion = "2.2.1"
	// ClassName is the job entry class of the minimal cluster.
	ClassName = "org.example.StreamingJob"
	// SavepointsDirPrefix prefixes the minimal cluster's savepointsDir; the cluster name follows.
	SavepointsDirPrefix = "s3://bucket/savepoints/"
	// HAStorageDir is the high-availability.storageDir that HA sets.
	HAStorageDir = "s3://bucket/ha"
)

// FlinkClusterWrapper wraps a FlinkCluster under construction.
type FlinkClusterWrapper struct {
	obj v1beta1.FlinkCluster
}

// MakeFlinkCluster returns a wrapper around a minimal valid Application-mode job cluster:
// image flink:2.2.1, flinkVersion 2.2.1, spec.job with mode Application, className and
// savepointsDir. jobManager and taskManager are left nil, as a user who relies on the
// defaults would leave them.
func MakeFlinkCluster(name, namespace string) *FlinkClusterWrapper {
	return &FlinkClusterWrapper{obj: v1beta1.FlinkCluster{
		TypeMeta: metav1.TypeMeta{
			APIVersion: v1beta1.GroupVersion.String(),
			Kind:       v1beta1.Kind,
		},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1beta1.FlinkClusterSpec{
			FlinkVersion: FlinkVersion,
			Image:        v1beta1.ImageSpec{Name: Image},
			Job: &v1beta1.JobSpec{
				Mode:          ptr.To(v1beta1.JobModeApplication),
				ClassName:     ptr.To(ClassName),
				SavepointsDir: ptr.To(SavepointsDirPrefix + name),
			},
		},
	}}
}

// Wrap wraps a deep copy of an existing FlinkCluster, e.g. one decoded from a fixture file.
func Wrap(fc *v1beta1.FlinkCluster) *FlinkClusterWrapper {
	return &FlinkClusterWrapper{obj: *fc.DeepCopy()}
}

// Obj returns a deep copy of the built FlinkCluster.
func (w *FlinkClusterWrapper) Obj() *v1beta1.FlinkCluster {
	return w.obj.DeepCopy()
}

// Clone returns an independent copy of the wrapper, to branch off a shared base.
func (w *FlinkClusterWrapper) Clone() *FlinkClusterWrapper {
	return &FlinkClusterWrapper{obj: *w.obj.DeepCopy()}
}

// jobManager returns spec.jobManager, creating it when nil.
func (w *FlinkClusterWrapper) jobManager() *v1beta1.JobManagerSpec {
	if w.obj.Spec.JobManager == nil {
		w.obj.Spec.JobManager = &v1beta1.JobManagerSpec{}
	}
	return w.obj.Spec.JobManager
}

// taskManager returns spec.taskManager, creating it when nil.
func (w *FlinkClusterWrapper) taskManager() *v1beta1.TaskManagerSpec {
	if w.obj.Spec.TaskManager == nil {
		w.obj.Spec.TaskManager = &v1beta1.TaskManagerSpec{}
	}
	return w.obj.Spec.TaskManager
}

// job returns spec.job, creating it when nil.
func (w *FlinkClusterWrapper) job() *v1beta1.JobSpec {
	if w.obj.Spec.Job == nil {
		w.obj.Spec.Job = &v1beta1.JobSpec{}
	}
	return w.obj.Spec.Job
}

// jobStatus returns status.components.job, creating it when nil.
func (w *FlinkClusterWrapper) jobStatus() *v1beta1.JobStatus {
	if w.obj.Status.Components.Job == nil {
		w.obj.Status.Components.Job = &v1beta1.JobStatus{}
	}
	return w.obj.Status.Components.Job
}

// --- escape hatches, for fields without a dedicated setter ---

// Spec calls fn on spec.
func (w *FlinkClusterWrapper) Spec(fn func(*v1beta1.FlinkClusterSpec)) *FlinkClusterWrapper {
	fn(&w.obj.Spec)
	return w
}

// JobManager calls fn on spec.jobManager, creating it when nil.
func (w *FlinkClusterWrapper) JobManager(fn func(*v1beta1.JobManagerSpec)) *FlinkClusterWrapper {
	fn(w.jobManager())
	return w
}

// TaskManager calls fn on spec.taskManager, creating it when nil.
func (w *FlinkClusterWrapper) TaskManager(fn func(*v1beta1.TaskManagerSpec)) *FlinkClusterWrapper {
	fn(w.taskManager())
	return w
}

// Job calls fn on spec.job, creating it when nil.
func (w *FlinkClusterWrapper) Job(fn func(*v1beta1.JobSpec)) *FlinkClusterWrapper {
	fn(w.job())
	return w
}

// --- metadata ---

// Annotation sets a metadata annotation.
func (w *FlinkClusterWrapper) Annotation(k, v string) *FlinkClusterWrapper {
	if w.obj.Annotations == nil {
		w.obj.Annotations = map[string]string{}
	}
	w.obj.Annotations[k] = v
	return w
}

// UserControl sets the user-control annotation (savepoint or job-cancel).
func (w *FlinkClusterWrapper) UserControl(v string) *FlinkClusterWrapper {
	return w.Annotation(v1beta1.ControlAnnotation, v)
}

// Label sets a metadata label.
func (w *FlinkClusterWrapper) Label(k, v string) *FlinkClusterWrapper {
	if w.obj.Labels == nil {
		w.obj.Labels = map[string]string{}
	}
	w.obj.Labels[k] = v
	return w
}

// --- cluster-wide spec ---

// FlinkVersion sets spec.flinkVersion.
func (w *FlinkClusterWrapper) FlinkVersion(v string) *FlinkClusterWrapper {
	w.obj.Spec.FlinkVersion = v
	return w
}

// Image sets spec.image.name.
func (w *FlinkClusterWrapper) Image(name string) *FlinkClusterWrapper {
	w.obj.Spec.Image.Name = name
	return w
}

// PullPolicy sets spec.image.pullPolicy.
func (w *FlinkClusterWrapper) PullPolicy(p corev1.PullPolicy) *FlinkClusterWrapper {
	w.obj.Spec.Image.PullPolicy = p
	return w
}

// FlinkProperty sets a Flink configuration entry.
func (w *FlinkClusterWrapper) FlinkProperty(k, v string) *FlinkClusterWrapper {
	if w.obj.Spec.FlinkProperties == nil {
		w.obj.Spec.FlinkProperties = map[string]string{}
	}
	w.obj.Spec.FlinkProperties[k] = v
	return w
}

// DeleteFlinkProperty removes a Flink configuration entry.
func (w *FlinkClusterWrapper) DeleteFlinkProperty(k string) *FlinkClusterWrapper {
	delete(w.obj.Spec.FlinkProperties, k)
	return w
}

// HA turns on Kubernetes high availability: high-availability.type=kubernetes and
// high-availability.storageDir=s3://bucket/ha.
func (w *FlinkClusterWrapper) HA() *FlinkClusterWrapper {
	return w.FlinkProperty("high-availability.type", "kubernetes").
		FlinkProperty("high-availability.storageDir", HAStorageDir)
}

// BatchSchedulerName sets the deprecated spec.batchSchedulerName.
func (w *FlinkClusterWrapper) BatchSchedulerName(name string) *FlinkClusterWrapper {
	w.obj.Spec.BatchSchedulerName = ptr.To(name)
	return w
}

// HadoopConfig sets spec.hadoopConfig.
func (w *FlinkClusterWrapper) HadoopConfig(configMapName, mountPath string) *FlinkClusterWrapper {
	w.obj.Spec.HadoopConfig = &v1beta1.HadoopConfig{ConfigMapName: configMapName, MountPath: mountPath}
	return w
}

// GCPServiceAccount sets spec.gcpConfig.serviceAccount.
func (w *FlinkClusterWrapper) GCPServiceAccount(secretName, keyFile, mountPath string) *FlinkClusterWrapper {
	w.obj.Spec.GCPConfig = &v1beta1.GCPConfig{ServiceAccount: &v1beta1.GCPServiceAccount{
		SecretName: secretName, KeyFile: keyFile, MountPath: mountPath,
	}}
	return w
}

// SessionCluster removes spec.job, which makes the cluster a session cluster.
func (w *FlinkClusterWrapper) SessionCluster() *FlinkClusterWrapper {
	w.obj.Spec.Job = nil
	return w
}

// --- JobManager ---

// NilJobManager removes spec.jobManager.
func (w *FlinkClusterWrapper) NilJobManager() *FlinkClusterWrapper {
	w.obj.Spec.JobManager = nil
	return w
}

// DeploymentType sets spec.jobManager.deploymentType ("" unsets it).
func (w *FlinkClusterWrapper) DeploymentType(t v1beta1.JobManagerDeploymentType) *FlinkClusterWrapper {
	w.jobManager().DeploymentType = t
	return w
}

// JobManagerReplicas sets spec.jobManager.replicas.
func (w *FlinkClusterWrapper) JobManagerReplicas(n int32) *FlinkClusterWrapper {
	w.jobManager().Replicas = ptr.To(n)
	return w
}

// Grace sets spec.jobManager.terminationGracePeriodSeconds.
func (w *FlinkClusterWrapper) Grace(n int64) *FlinkClusterWrapper {
	w.jobManager().TerminationGracePeriodSeconds = ptr.To(n)
	return w
}

// PreStop sets spec.jobManager.preStopDelaySeconds.
func (w *FlinkClusterWrapper) PreStop(n int32) *FlinkClusterWrapper {
	w.jobManager().PreStopDelaySeconds = ptr.To(n)
	return w
}

// AccessScope sets spec.jobManager.accessScope.
func (w *FlinkClusterWrapper) AccessScope(s v1beta1.AccessScope) *FlinkClusterWrapper {
	w.jobManager().AccessScope = s
	return w
}

// JobManagerPorts sets the JobManager's rpc, blob, query and ui ports.
func (w *FlinkClusterWrapper) JobManagerPorts(rpc, blob, query, ui int32) *FlinkClusterWrapper {
	w.jobManager().Ports = v1beta1.JobManagerPorts{
		RPC: ptr.To(rpc), Blob: ptr.To(blob), Query: ptr.To(query), UI: ptr.To(ui),
	}
	return w
}

// JobManagerExtraPorts appends spec.jobManager.extraPorts.
func (w *FlinkClusterWrapper) JobManagerExtraPorts(ports ...v1beta1.NamedPort) *FlinkClusterWrapper {
	return w.appendPorts(&w.jobManager().ExtraPorts, ports)
}

// JobManagerResources sets spec.jobManager.resources.
func (w *FlinkClusterWrapper) JobManagerResources(r corev1.ResourceRequirements) *FlinkClusterWrapper {
	w.jobManager().Resources = r
	return w
}

// JobManagerPodAnnotation sets a JobManager pod annotation.
func (w *FlinkClusterWrapper) JobManagerPodAnnotation(k, v string) *FlinkClusterWrapper {
	jm := w.jobManager()
	if jm.PodAnnotations == nil {
		jm.PodAnnotations = map[string]string{}
	}
	jm.PodAnnotations[k] = v
	return w
}

// JobManagerPodLabel sets a JobManager pod label.
func (w *FlinkClusterWrapper) JobManagerPodLabel(k, v string) *FlinkClusterWrapper {
	jm := w.jobManager()
	if jm.PodLabels == nil {
		jm.PodLabels = map[string]string{}
	}
	jm.PodLabels[k] = v
	return w
}

// --- TaskManager ---

// NilTaskManager removes spec.taskManager.
func (w *FlinkClusterWrapper) NilTaskManager() *FlinkClusterWrapper {
	w.obj.Spec.TaskManager = nil
	return w
}

// TaskManagerDeploymentType sets spec.taskManager.deploymentType ("" unsets it).
func (w *FlinkClusterWrapper) TaskManagerDeploymentType(t v1beta1.TaskManagerDeploymentType) *FlinkClusterWrapper {
	w.taskManager().DeploymentType = t
	return w
}

// TaskManagerReplicas sets spec.taskManager.replicas.
func (w *FlinkClusterWrapper) TaskManagerReplicas(n int32) *FlinkClusterWrapper {
	w.taskManager().Replicas = ptr.To(n)
	return w
}

// TaskManagerPorts sets the TaskManagers' data, rpc and query ports.
func (w *FlinkClusterWrapper) TaskManagerPorts(data, rpc, query int32) *FlinkClusterWrapper {
	w.taskManager().Ports = v1beta1.TaskManagerPorts{Data: ptr.To(data), RPC: ptr.To(rpc), Query: ptr.To(query)}
	return w
}

// TaskManagerExtraPorts appends spec.taskManager.extraPorts.
func (w *FlinkClusterWrapper) TaskManagerExtraPorts(ports ...v1beta1.NamedPort) *FlinkClusterWrapper {
	return w.appendPorts(&w.taskManager().ExtraPorts, ports)
}

// appendPorts appends ports to a role's extraPorts, the JobManager's or the TaskManagers':
// both roles' setters add ports the same way, after those set before.
func (w *FlinkClusterWrapper) appendPorts(extra *[]v1beta1.NamedPort, ports []v1beta1.NamedPort) *FlinkClusterWrapper {
	*extra = append(*extra, ports...)
	return w
}

// TaskManagerResources sets spec.taskManager.resources.
func (w *FlinkClusterWrapper) TaskManagerResources(r corev1.ResourceRequirements) *FlinkClusterWrapper {
	w.taskManager().Resources = r
	return w
}

// TaskManagerSidecar appends a TaskManager sidecar container.
func (w *FlinkClusterWrapper) TaskManagerSidecar(c corev1.Container) *FlinkClusterWrapper {
	tm := w.taskManager()
	tm.Sidecars = append(tm.Sidecars, c)
	return w
}

// --- job ---

// JobMode sets spec.job.mode.
func (w *FlinkClusterWrapper) JobMode(m v1beta1.JobMode) *FlinkClusterWrapper {
	w.job().Mode = ptr.To(m)
	return w
}

// NoJobMode unsets spec.job.mode (which means Detached).
func (w *FlinkClusterWrapper) NoJobMode() *FlinkClusterWrapper {
	w.job().Mode = nil
	return w
}

// JarFile sets spec.job.jarFile.
func (w *FlinkClusterWrapper) JarFile(s string) *FlinkClusterWrapper {
	w.job().JarFile = ptr.To(s)
	return w
}

// PyFile sets spec.job.pyFile.
func (w *FlinkClusterWrapper) PyFile(s string) *FlinkClusterWrapper {
	w.job().PyFile = ptr.To(s)
	return w
}

// PyModule sets spec.job.pyModule.
func (w *FlinkClusterWrapper) PyModule(s string) *FlinkClusterWrapper {
	w.job().PyModule = ptr.To(s)
	return w
}

// ClassName sets spec.job.className.
func (w *FlinkClusterWrapper) ClassName(s string) *FlinkClusterWrapper {
	w.job().ClassName = ptr.To(s)
	return w
}

// Parallelism sets spec.job.parallelism.
func (w *FlinkClusterWrapper) Parallelism(n int32) *FlinkClusterWrapper {
	w.job().Parallelism = ptr.To(n)
	return w
}

// RestartPolicy sets spec.job.restartPolicy.
func (w *FlinkClusterWrapper) RestartPolicy(p v1beta1.JobRestartPolicy) *FlinkClusterWrapper {
	w.job().RestartPolicy = ptr.To(p)
	return w
}

// MaxStateAge sets spec.job.maxStateAgeToRestoreSeconds.
func (w *FlinkClusterWrapper) MaxStateAge(n int32) *FlinkClusterWrapper {
	w.job().MaxStateAgeToRestoreSeconds = ptr.To(n)
	return w
}

// TakeSavepointOnUpdate sets spec.job.takeSavepointOnUpdate.
func (w *FlinkClusterWrapper) TakeSavepointOnUpdate(b bool) *FlinkClusterWrapper {
	w.job().TakeSavepointOnUpdate = ptr.To(b)
	return w
}

// AllowNonRestoredState sets spec.job.allowNonRestoredState.
func (w *FlinkClusterWrapper) AllowNonRestoredState(b bool) *FlinkClusterWrapper {
	w.job().AllowNonRestoredState = ptr.To(b)
	return w
}

// CancelRequested sets spec.job.cancelRequested.
func (w *FlinkClusterWrapper) CancelRequested(b bool) *FlinkClusterWrapper {
	w.job().CancelRequested = ptr.To(b)
	return w
}

// SavepointsDir sets spec.job.savepointsDir; "" removes it.
func (w *FlinkClusterWrapper) SavepointsDir(s string) *FlinkClusterWrapper {
	if s == "" {
		w.job().SavepointsDir = nil
	} else {
		w.job().SavepointsDir = ptr.To(s)
	}
	return w
}

// FromSavepoint sets spec.job.fromSavepoint.
func (w *FlinkClusterWrapper) FromSavepoint(s string) *FlinkClusterWrapper {
	w.job().FromSavepoint = ptr.To(s)
	return w
}

// SavepointGeneration sets spec.job.savepointGeneration.
func (w *FlinkClusterWrapper) SavepointGeneration(n int32) *FlinkClusterWrapper {
	w.job().SavepointGeneration = n
	return w
}

// CleanupPolicy sets spec.job.cleanupPolicy.
func (w *FlinkClusterWrapper) CleanupPolicy(succeeds, fails, cancelled v1beta1.CleanupAction) *FlinkClusterWrapper {
	w.job().CleanupPolicy = &v1beta1.CleanupPolicy{
		AfterJobSucceeds: succeeds, AfterJobFails: fails, AfterJobCancelled: cancelled,
	}
	return w
}

// --- status ---

// JobStatus sets status.components.job.state (creating the job status when nil).
func (w *FlinkClusterWrapper) JobStatus(state string) *FlinkClusterWrapper {
	w.jobStatus().State = state
	return w
}

// JobRecord edits status.components.job (creating it when nil): the fields no other option
// sets, such as the job ID or the Flink version it runs.
func (w *FlinkClusterWrapper) JobRecord(fn func(*v1beta1.JobStatus)) *FlinkClusterWrapper {
	fn(w.jobStatus())
	return w
}

// JobSavepoint records the job's last savepoint in status.components.job.
func (w *FlinkClusterWrapper) JobSavepoint(location string, at time.Time) *FlinkClusterWrapper {
	js := w.jobStatus()
	js.SavepointLocation = location
	js.SavepointTime = at.UTC().Format(time.RFC3339)
	return w
}

// FinalSavepoint sets status.components.job.finalSavepoint.
func (w *FlinkClusterWrapper) FinalSavepoint(b bool) *FlinkClusterWrapper {
	w.jobStatus().FinalSavepoint = b
	return w
}

// JobCompletionTime sets status.components.job.completionTime.
func (w *FlinkClusterWrapper) JobCompletionTime(at time.Time) *FlinkClusterWrapper {
	w.jobStatus().CompletionTime = &metav1.Time{Time: at}
	return w
}

// StatusSavepointGeneration sets status.components.job.savepointGeneration.
func (w *FlinkClusterWrapper) StatusSavepointGeneration(n int32) *FlinkClusterWrapper {
	w.jobStatus().SavepointGeneration = n
	return w
}

// ControlStatus sets status.control to the named control in the given state.
func (w *FlinkClusterWrapper) ControlStatus(name, state string) *FlinkClusterWrapper {
	w.obj.Status.Control = &v1beta1.FlinkClusterControlStatus{Name: name, State: state}
	return w
}
