package v1beta1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlinkCluster is a Flink cluster: a JobManager, TaskManagers and, for a job cluster, the job.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=fc
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.taskManager.replicas,statuspath=.status.components.taskManager.replicas,selectorpath=.status.components.taskManager.selector
// +kubebuilder:printcolumn:name="version",type=string,JSONPath=`.spec.flinkVersion`
// +kubebuilder:printcolumn:name="status",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="job",type=string,JSONPath=`.status.components.job.state`
// +kubebuilder:printcolumn:name="ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="deployment",type=string,JSONPath=`.status.components.jobManager.deploymentType`
// +kubebuilder:printcolumn:name="age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="jm replicas",type=string,JSONPath=`.status.components.jobManager.ready`,priority=1
// +kubebuilder:printcolumn:name="jm zone",type=string,JSONPath=`.spec.jobManager.nodeSelector.topology\.kubernetes\.io\/zone`,priority=1
// +kubebuilder:printcolumn:name="tm replicas",type=string,JSONPath=`.status.components.taskManager.ready`,priority=1
// +kubebuilder:printcolumn:name="tm zone",type=string,JSONPath=`.spec.taskManager.nodeSelector.topology\.kubernetes\.io\/zone`,priority=1
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image.name`,priority=1
// +kubebuilder:metadata:annotations="api-approved.kubernetes.io=https://github.com/spotify/flink-on-k8s-operator"
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || self.metadata.name.size() <= 48",message="cluster name must be at most 48 characters: it prefixes the names of the cluster's resources",reason=FieldValueInvalid,optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="cluster name must be a DNS-1035 label: lower case alphanumeric characters or '-', starting with a letter and ending with an alphanumeric character",reason=FieldValueInvalid,optionalOldSelf=true
type FlinkCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired cluster.
	Spec FlinkClusterSpec `json:"spec"`

	// Status is the observed cluster.
	// +optional
	Status FlinkClusterStatus `json:"status,omitzero"`
}

// FlinkClusterList is a list of FlinkClusters.
//
// +kubebuilder:object:root=true
type FlinkClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlinkCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&FlinkCluster{}, &FlinkClusterList{})
}

// FlinkClusterSpec is the desired state of a FlinkCluster.
//
// The CEL rules below mirror the admission policy (package policy); the parity tests in
// package celrules prove that both give the same verdict. Rules that look at more than one
// field sit here, on the spec, so that they see the effective values (an unset
// deploymentType means Job) and run when a field goes from unset to set. Rules that would
// reject an object only because of what it already was are ratcheted through
// optionalOldSelf: an update is allowed when the old object broke the same rule, so that
// clusters created before a rule existed stay editable. The two rules that lower-case a
// flinkProperties value are split into a create rule and a transition rule: lowerAscii on
// oldSelf.value() is estimated far above the API server's cost budget, on plain oldSelf not.
//
// Every rule runs on every write of the object, status writes included, and the API server
// rebuilds the map of an object's properties on each field it reads (k8s.io/apiserver
// cel/common unstructuredMap.Find): a field is read once, with optional selection
// (self.?job.?mode.orValue("")), not tested with has() and read again: on a status write the
// rules allocate 45 % less than that way (celrules BenchmarkStatusWrite). The empty string is
// written "" in a rule quoted with backquotes: gofmt turns two single quotes in a comment
// into a typographic one. A rule comparing two optional values keeps a ternary, whose
// branches carry the field's bounded size to the cost estimate; orValue drops it.
//
// +kubebuilder:validation:XValidation:rule="(oldSelf.?jobManager.?deploymentType.hasValue() ? oldSelf.jobManager.deploymentType : 'Job') == (self.?jobManager.?deploymentType.hasValue() ? self.jobManager.deploymentType : 'Job')",message="deploymentType is immutable (unset means Job): delete and recreate the cluster to change it",fieldPath=".jobManager.deploymentType",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="(oldSelf.?taskManager.?deploymentType.hasValue() ? oldSelf.taskManager.deploymentType : 'StatefulSet') == (self.?taskManager.?deploymentType.hasValue() ? self.taskManager.deploymentType : 'StatefulSet')",message="taskManager deploymentType is immutable (unset means StatefulSet)",fieldPath=".taskManager.deploymentType",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="has(oldSelf.job) == has(self.job)",message="a cluster cannot change between session cluster and job cluster",fieldPath=".job",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule=`oldSelf.?job.?savepointsDir.orValue("") == "" || self.?job.?savepointsDir.orValue("") != ""`,message="savepointsDir cannot be removed",fieldPath=".job.savepointsDir",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!oldSelf.?job.?cancelRequested.orValue(false) || self.?job.?cancelRequested.orValue(false)",message="cancelRequested cannot go from true to false",fieldPath=".job.cancelRequested",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule=`((oldSelf.?flinkProperties[?'high-availability.type'].orValue("") != "" ? oldSelf.flinkProperties['high-availability.type'] : oldSelf.?flinkProperties[?'high-availability'].orValue("") != "" ? oldSelf.flinkProperties['high-availability'] : 'none').lowerAscii() != 'none') == ((self.?flinkProperties[?'high-availability.type'].orValue("") != "" ? self.flinkProperties['high-availability.type'] : self.?flinkProperties[?'high-availability'].orValue("") != "" ? self.flinkProperties['high-availability'] : 'none').lowerAscii() != 'none')`,message="Flink high availability cannot be switched on or off on an existing cluster",fieldPath=".flinkProperties",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule=`self.?jobManager.?deploymentType.orValue("") != 'Deployment' || self.?job.?mode.orValue("") == 'Application' || (oldSelf.hasValue() && oldSelf.value().?job.?mode.orValue("") != 'Application')`,message="deploymentType Deployment requires an application cluster: spec.job with mode Application",fieldPath=".job.mode",reason=FieldValueInvalid,optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule=`oldSelf.hasValue() || self.?jobManager.?deploymentType.orValue("") != 'Deployment' || ((self.?flinkProperties[?'high-availability.type'].orValue("") != "" ? self.flinkProperties['high-availability.type'] : self.?flinkProperties[?'high-availability'].orValue("") != "" ? self.flinkProperties['high-availability'] : 'none').lowerAscii() != 'none')`,message="deploymentType Deployment requires Flink high availability: set flinkProperties high-availability.type kubernetes",fieldPath=".flinkProperties['high-availability.type']",reason=FieldValueRequired,optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule=`self.?jobManager.?deploymentType.orValue("") != 'Deployment' || ((self.?flinkProperties[?'high-availability.type'].orValue("") != "" ? self.flinkProperties['high-availability.type'] : self.?flinkProperties[?'high-availability'].orValue("") != "" ? self.flinkProperties['high-availability'] : 'none').lowerAscii() != 'none') || !((oldSelf.?flinkProperties[?'high-availability.type'].orValue("") != "" ? oldSelf.flinkProperties['high-availability.type'] : oldSelf.?flinkProperties[?'high-availability'].orValue("") != "" ? oldSelf.flinkProperties['high-availability'] : 'none').lowerAscii() != 'none')`,message="deploymentType Deployment requires Flink high availability: set flinkProperties high-availability.type kubernetes",fieldPath=".flinkProperties['high-availability.type']",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule=`oldSelf.hasValue() || self.?jobManager.?deploymentType.orValue("") != 'Deployment' || (self.?flinkProperties[?'high-availability.type'].orValue("") != "" ? self.flinkProperties['high-availability.type'] : self.?flinkProperties[?'high-availability'].orValue("") != "" ? self.flinkProperties['high-availability'] : 'none').lowerAscii() in ['none', 'kubernetes', 'org.apache.flink.kubernetes.highavailability.kuberneteshaservicesfactory']`,message="deploymentType Deployment requires Kubernetes high availability (high-availability.type kubernetes): the controller checks and cleans up only the Kubernetes HA ConfigMaps of Flink, so with ZooKeeper or another HA factory it could neither tell whether a restarted JobManager recovers the job nor keep an old job graph out of a new deploy; use deploymentType Job for other HA services",fieldPath=".flinkProperties['high-availability.type']",reason=FieldValueInvalid,optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule=`self.?jobManager.?deploymentType.orValue("") != 'Deployment' || (self.?flinkProperties[?'high-availability.type'].orValue("") != "" ? self.flinkProperties['high-availability.type'] : self.?flinkProperties[?'high-availability'].orValue("") != "" ? self.flinkProperties['high-availability'] : 'none').lowerAscii() in ['none', 'kubernetes', 'org.apache.flink.kubernetes.highavailability.kuberneteshaservicesfactory'] || !((oldSelf.?flinkProperties[?'high-availability.type'].orValue("") != "" ? oldSelf.flinkProperties['high-availability.type'] : oldSelf.?flinkProperties[?'high-availability'].orValue("") != "" ? oldSelf.flinkProperties['high-availability'] : 'none').lowerAscii() in ['none', 'kubernetes', 'org.apache.flink.kubernetes.highavailability.kuberneteshaservicesfactory'])`,message="deploymentType Deployment requires Kubernetes high availability (high-availability.type kubernetes): the controller checks and cleans up only the Kubernetes HA ConfigMaps of Flink, so with ZooKeeper or another HA factory it could neither tell whether a restarted JobManager recovers the job nor keep an old job graph out of a new deploy; use deploymentType Job for other HA services",fieldPath=".flinkProperties['high-availability.type']",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule=`self.?jobManager.?deploymentType.orValue("") != 'Deployment' || self.?flinkProperties[?'high-availability.storageDir'].orValue("") != "" || (oldSelf.hasValue() && oldSelf.value().?flinkProperties[?'high-availability.storageDir'].orValue("") == "")`,message="deploymentType Deployment requires Flink high availability: set flinkProperties high-availability.storageDir",fieldPath=".flinkProperties['high-availability.storageDir']",reason=FieldValueRequired,optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule=`self.?jobManager.?deploymentType.orValue("") != 'Deployment' || self.jobManager.?replicas.orValue(1) == 1 || (oldSelf.hasValue() && oldSelf.value().?jobManager.?replicas.orValue(1) != 1)`,message="deploymentType Deployment requires jobManager replicas 1",fieldPath=".jobManager.replicas",reason=FieldValueInvalid,optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule=`oldSelf.hasValue() || self.?jobManager.?deploymentType.orValue("") != 'Deployment' || !(self.?flinkProperties[?'execution.shutdown-on-application-finish'].hasValue() && self.flinkProperties['execution.shutdown-on-application-finish'].lowerAscii() == 'true')`,message="deploymentType Deployment requires execution.shutdown-on-application-finish false: the JobManager must stay up after the job ends so that its final state can be read",fieldPath=".flinkProperties['execution.shutdown-on-application-finish']",reason=FieldValueForbidden,optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule=`self.?jobManager.?deploymentType.orValue("") != 'Deployment' || !(self.?flinkProperties[?'execution.shutdown-on-application-finish'].hasValue() && self.flinkProperties['execution.shutdown-on-application-finish'].lowerAscii() == 'true') || (oldSelf.?flinkProperties[?'execution.shutdown-on-application-finish'].hasValue() && oldSelf.flinkProperties['execution.shutdown-on-application-finish'].lowerAscii() == 'true')`,message="deploymentType Deployment requires execution.shutdown-on-application-finish false: the JobManager must stay up after the job ends so that its final state can be read",fieldPath=".flinkProperties['execution.shutdown-on-application-finish']",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule=`self.?job.?upgradeMode.orValue("") != 'last-state' || (self.?jobManager.?deploymentType.orValue("") == 'Deployment' && (self.?flinkProperties[?'high-availability.type'].orValue("") != "" ? self.flinkProperties['high-availability.type'] : self.?flinkProperties[?'high-availability'].orValue("") != "" ? self.flinkProperties['high-availability'] : 'none').lowerAscii() in ['kubernetes', 'org.apache.flink.kubernetes.highavailability.kuberneteshaservicesfactory'])`,message="upgradeMode last-state requires jobManager deploymentType Deployment and flinkProperties high-availability.type kubernetes: the job resumes from the checkpoints Flink keeps in its Kubernetes HA ConfigMaps",fieldPath=".job.upgradeMode",reason=FieldValueInvalid
type FlinkClusterSpec struct {
	// FlinkVersion is the version of Flink in the image, e.g. "1.20" or "2.2.1".
	FlinkVersion string `json:"flinkVersion"`

	// Image is the Flink image of the JobManager, TaskManagers and job.
	Image ImageSpec `json:"image"`

	// ServiceAccountName is the service account the cluster's pods run as.
	// +optional
	ServiceAccountName *string `json:"serviceAccountName,omitempty"`

	// BatchSchedulerName is the deprecated form of BatchScheduler.Name.
	// +optional
	BatchSchedulerName *string `json:"batchSchedulerName,omitempty"`

	// BatchScheduler configures a batch scheduler such as Volcano.
	// +optional
	BatchScheduler *BatchSchedulerSpec `json:"batchScheduler,omitempty"`

	// JobManager is the JobManager of the cluster.
	// +kubebuilder:default:={replicas:1}
	// +optional
	JobManager *JobManagerSpec `json:"jobManager,omitempty"`

	// TaskManager is the TaskManagers of the cluster.
	// +kubebuilder:default:={replicas:3}
	// +optional
	TaskManager *TaskManagerSpec `json:"taskManager,omitempty"`

	// Job is the job of a job cluster; a session cluster has none.
	// +optional
	Job *JobSpec `json:"job,omitempty"`

	// EnvVars are environment variables of every Flink container.
	// +optional
	EnvVars []corev1.EnvVar `json:"envVars,omitempty"`

	// EnvFrom are environment variable sources of every Flink container.
	// +optional
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`

	// FlinkProperties are Flink configuration entries (flink-conf.yaml / config.yaml).
	// +optional
	FlinkProperties map[string]string `json:"flinkProperties,omitempty"`

	// HadoopConfig mounts a Hadoop configuration.
	// +optional
	HadoopConfig *HadoopConfig `json:"hadoopConfig,omitempty"`

	// GCPConfig mounts Google Cloud credentials.
	// +optional
	GCPConfig *GCPConfig `json:"gcpConfig,omitempty"`

	// LogConfig holds logging configuration files, by file name.
	// +optional
	LogConfig map[string]string `json:"logConfig,omitempty"`

	// RevisionHistoryLimit is how many spec revisions are kept.
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// RecreateOnUpdate recreates the cluster's components when the spec changes.
	// +kubebuilder:default:=true
	// +optional
	RecreateOnUpdate *bool `json:"recreateOnUpdate,omitempty"`

	// PodDisruptionBudget for the cluster's pods.
	// +optional
	PodDisruptionBudget *policyv1.PodDisruptionBudgetSpec `json:"podDisruptionBudget,omitempty"`
}

// ImageSpec is a container image.
type ImageSpec struct {
	// Name is the image reference.
	Name string `json:"name"`

	// PullPolicy is the image pull policy.
	// +kubebuilder:default:=Always
	// +kubebuilder:validation:Enum=Always;Never;IfNotPresent
	// +optional
	PullPolicy corev1.PullPolicy `json:"pullPolicy,omitempty"`

	// PullSecrets are the secrets to pull the image with.
	// +optional
	PullSecrets []corev1.LocalObjectReference `json:"pullSecrets,omitempty"`
}

// BatchSchedulerSpec selects and configures a batch scheduler.
type BatchSchedulerSpec struct {
	// Name is the scheduler name, e.g. "volcano".
	Name string `json:"name"`

	// Queue is the scheduler queue.
	// +optional
	Queue string `json:"queue,omitempty"`

	// PriorityClassName is the priority class of the pod group.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// NamedPort is an extra container port.
type NamedPort struct {
	// Name is the port name, unique across ports and extraPorts.
	// +optional
	Name string `json:"name,omitempty"`

	// ContainerPort is the port number, unique across ports and extraPorts.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	ContainerPort int32 `json:"containerPort"`

	// Protocol is the port protocol.
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	// +optional
	Protocol string `json:"protocol,omitempty"`
}

// JobManagerPorts are the JobManager's ports.
type JobManagerPorts struct {
	// RPC is the RPC port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default:=6123
	// +optional
	RPC *int32 `json:"rpc,omitempty"`

	// Blob is the blob server port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default:=6124
	// +optional
	Blob *int32 `json:"blob,omitempty"`

	// Query is the queryable state port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default:=6125
	// +optional
	Query *int32 `json:"query,omitempty"`

	// UI is the web UI and REST port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default:=8081
	// +optional
	UI *int32 `json:"ui,omitempty"`
}

// TaskManagerPorts are the TaskManagers' ports.
type TaskManagerPorts struct {
	// Data is the data port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default:=6121
	// +optional
	Data *int32 `json:"data,omitempty"`

	// RPC is the RPC port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default:=6122
	// +optional
	RPC *int32 `json:"rpc,omitempty"`

	// Query is the queryable state port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default:=6125
	// +optional
	Query *int32 `json:"query,omitempty"`
}

// JobManagerIngressSpec exposes the JobManager web UI through an Ingress.
type JobManagerIngressSpec struct {
	// HostFormat is the host name format, e.g. "{{$clusterName}}.example.com".
	// +optional
	HostFormat *string `json:"hostFormat,omitempty"`

	// Annotations of the Ingress.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// UseTLS serves the Ingress over TLS.
	// +kubebuilder:default:=false
	// +optional
	UseTLS *bool `json:"useTls,omitempty"`

	// TLSSecretName is the Secret holding the Ingress TLS certificate.
	// +optional
	TLSSecretName *string `json:"tlsSecretName,omitempty"`
}

// AccessScope is how the JobManager Service is reachable.
// +kubebuilder:validation:Enum=Cluster;VPC;External;NodePort;Headless
type AccessScope string

// Access scopes of the JobManager Service.
const (
	AccessScopeCluster  AccessScope = "Cluster"
	AccessScopeVPC      AccessScope = "VPC"
	AccessScopeExternal AccessScope = "External"
	AccessScopeNodePort AccessScope = "NodePort"
	AccessScopeHeadless AccessScope = "Headless"
)

// JobManagerDeploymentType is the Kubernetes workload that runs an application-mode JobManager.
// +kubebuilder:validation:Enum=Job;Deployment
type JobManagerDeploymentType string

// JobManager deployment types.
const (
	// JobManagerDeploymentTypeJob runs the JobManager as a batch Job with pod restartPolicy
	// Never: a lost JobManager pod ends the job. It is the default.
	JobManagerDeploymentTypeJob JobManagerDeploymentType = "Job"
	// JobManagerDeploymentTypeDeployment runs the JobManager as a 1-replica Deployment:
	// Kubernetes recreates a lost pod and Flink HA recovers the job.
	JobManagerDeploymentTypeDeployment JobManagerDeploymentType = "Deployment"
)

// JobManagerSpec is the JobManager of a cluster.
//
// +kubebuilder:validation:XValidation:rule="!has(self.terminationGracePeriodSeconds) || !has(self.preStopDelaySeconds) || self.terminationGracePeriodSeconds > self.preStopDelaySeconds || (oldSelf.hasValue() && has(oldSelf.value().terminationGracePeriodSeconds) && has(oldSelf.value().preStopDelaySeconds) && oldSelf.value().terminationGracePeriodSeconds <= oldSelf.value().preStopDelaySeconds)",message="terminationGracePeriodSeconds must be longer than preStopDelaySeconds, or the JobManager is killed before it can clean up",fieldPath=".terminationGracePeriodSeconds",reason=FieldValueInvalid,optionalOldSelf=true
type JobManagerSpec struct {
	// DeploymentType is the workload that runs an application-mode JobManager: Job (the
	// default when unset) or Deployment. It cannot be changed once set; read it through
	// GetDeploymentType.
	// +optional
	DeploymentType JobManagerDeploymentType `json:"deploymentType,omitempty"`

	// Replicas is the number of JobManagers; it must be 1.
	// +kubebuilder:default:=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// AccessScope is how the JobManager Service is reachable.
	// +kubebuilder:default:=Cluster
	// +optional
	AccessScope AccessScope `json:"accessScope,omitempty"`

	// ServiceAnnotations are annotations of the JobManager Service.
	// +optional
	ServiceAnnotations map[string]string `json:"ServiceAnnotations,omitempty"`

	// ServiceLabels are labels of the JobManager Service.
	// +optional
	ServiceLabels map[string]string `json:"ServiceLabels,omitempty"`

	// Ingress exposes the JobManager web UI.
	// +optional
	Ingress *JobManagerIngressSpec `json:"ingress,omitempty"`

	// Ports are the JobManager's ports.
	// +kubebuilder:default:={rpc:6123,blob:6124,query:6125,ui:8081}
	// +optional
	Ports JobManagerPorts `json:"ports,omitempty"`

	// ExtraPorts are additional container ports.
	// +optional
	ExtraPorts []NamedPort `json:"extraPorts,omitempty"`

	// Resources of the JobManager container.
	// +kubebuilder:default:={requests:{cpu:"200m",memory:"512Mi"},limits:{cpu:"2",memory:"2Gi"}}
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// MemoryOffHeapRatio is the off-heap share of memory in percent (Flink < 1.11).
	// +optional
	MemoryOffHeapRatio *int32 `json:"memoryOffHeapRatio,omitempty"`

	// MemoryOffHeapMin is the minimum off-heap memory (Flink < 1.11).
	// +optional
	MemoryOffHeapMin resource.Quantity `json:"memoryOffHeapMin,omitzero"`

	// MemoryProcessRatio is the Flink process share of memory in percent (Flink >= 1.11).
	// +optional
	MemoryProcessRatio *int32 `json:"memoryProcessRatio,omitempty"`

	// Volumes of the JobManager pod.
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// VolumeMounts of the JobManager container.
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`

	// VolumeClaimTemplates of the JobManager.
	// +optional
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// InitContainers of the JobManager pod.
	// +optional
	InitContainers []corev1.Container `json:"initContainers,omitempty"`

	// NodeSelector of the JobManager pod.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations of the JobManager pod.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Sidecars are extra containers of the JobManager pod.
	// +optional
	Sidecars []corev1.Container `json:"sidecars,omitempty"`

	// PodAnnotations of the JobManager pod.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// SecurityContext of the JobManager pod.
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`

	// PodLabels of the JobManager pod.
	// +optional
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// LivenessProbe of the JobManager container.
	// +optional
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`

	// ReadinessProbe of the JobManager container.
	// +optional
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`

	// HostAliases of the JobManager pod.
	// +optional
	HostAliases []corev1.HostAlias `json:"hostAliases,omitempty"`

	// Affinity of the JobManager pod.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// TerminationGracePeriodSeconds is how long the JobManager pod may take to shut down
	// before it is killed. Flink needs this time to clean up its HA metadata.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`

	// PreStopDelaySeconds delays the JobManager's shutdown after Kubernetes asks the pod to
	// stop, so that in-flight REST calls and leader hand-over finish first.
	// +kubebuilder:validation:Minimum=0
	// +optional
	PreStopDelaySeconds *int32 `json:"preStopDelaySeconds,omitempty"`
}

// TaskManagerDeploymentType is the Kubernetes workload that runs the TaskManagers.
// +kubebuilder:validation:Enum=StatefulSet;Deployment
type TaskManagerDeploymentType string

// TaskManager deployment types.
const (
	// TaskManagerDeploymentTypeStatefulSet runs the TaskManagers as a StatefulSet (default).
	TaskManagerDeploymentTypeStatefulSet TaskManagerDeploymentType = "StatefulSet"
	// TaskManagerDeploymentTypeDeployment runs the TaskManagers as a Deployment.
	TaskManagerDeploymentTypeDeployment TaskManagerDeploymentType = "Deployment"
)

// TaskManagerSpec is the TaskManagers of a cluster.
type TaskManagerSpec struct {
	// DeploymentType is the workload that runs the TaskManagers; unset means StatefulSet.
	// +kubebuilder:default:=StatefulSet
	// +optional
	DeploymentType TaskManagerDeploymentType `json:"deploymentType,omitempty"`

	// Replicas is the number of TaskManagers.
	// +kubebuilder:default:=3
	// +kubebuilder:validation:Minimum=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Ports are the TaskManagers' ports.
	// +kubebuilder:default:={data:6121,rpc:6122,query:6125}
	// +optional
	Ports TaskManagerPorts `json:"ports,omitempty"`

	// ExtraPorts are additional container ports.
	// +optional
	ExtraPorts []NamedPort `json:"extraPorts,omitempty"`

	// Resources of the TaskManager container.
	// +kubebuilder:default:={requests:{cpu:"200m",memory:"512Mi"},limits:{cpu:"2",memory:"2Gi"}}
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// MemoryOffHeapRatio is the off-heap share of memory in percent (Flink < 1.11).
	// +optional
	MemoryOffHeapRatio *int32 `json:"memoryOffHeapRatio,omitempty"`

	// MemoryOffHeapMin is the minimum off-heap memory (Flink < 1.11).
	// +optional
	MemoryOffHeapMin resource.Quantity `json:"memoryOffHeapMin,omitzero"`

	// MemoryProcessRatio is the Flink process share of memory in percent (Flink >= 1.11).
	// +optional
	MemoryProcessRatio *int32 `json:"memoryProcessRatio,omitempty"`

	// Volumes of the TaskManager pods.
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// VolumeMounts of the TaskManager container.
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`

	// VolumeClaimTemplates of the TaskManagers.
	// +optional
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`

	// InitContainers of the TaskManager pods.
	// +optional
	InitContainers []corev1.Container `json:"initContainers,omitempty"`

	// NodeSelector of the TaskManager pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations of the TaskManager pods.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Sidecars are extra containers of the TaskManager pods.
	// +optional
	Sidecars []corev1.Container `json:"sidecars,omitempty"`

	// PodAnnotations of the TaskManager pods.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// SecurityContext of the TaskManager pods.
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`

	// PodLabels of the TaskManager pods.
	// +optional
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// LivenessProbe of the TaskManager container.
	// +optional
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`

	// ReadinessProbe of the TaskManager container.
	// +optional
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`

	// HostAliases of the TaskManager pods.
	// +optional
	HostAliases []corev1.HostAlias `json:"hostAliases,omitempty"`

	// Affinity of the TaskManager pods.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// HorizontalPodAutoscaler scales the TaskManagers.
	// +optional
	HorizontalPodAutoscaler *HorizontalPodAutoscalerSpec `json:"horizontalPodAutoscaler,omitempty"`
}

// HorizontalPodAutoscalerSpec scales the TaskManagers.
type HorizontalPodAutoscalerSpec struct {
	// MinReplicas is the lower bound.
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the upper bound.
	MaxReplicas int32 `json:"maxReplicas"`

	// Metrics drive the replica count.
	// +optional
	Metrics []autoscalingv2.MetricSpec `json:"metrics,omitempty"`

	// Behavior configures scaling up and down.
	// +optional
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
}

// CleanupAction is what happens to the cluster when its job ends.
// +kubebuilder:validation:Enum=KeepCluster;DeleteCluster;DeleteTaskManager
type CleanupAction string

// Cleanup actions.
const (
	CleanupActionKeepCluster       CleanupAction = "KeepCluster"
	CleanupActionDeleteCluster     CleanupAction = "DeleteCluster"
	CleanupActionDeleteTaskManager CleanupAction = "DeleteTaskManager"
)

// CleanupPolicy says what happens to the cluster when its job ends.
type CleanupPolicy struct {
	// AfterJobSucceeds applies when the job succeeds.
	// +kubebuilder:default:=DeleteCluster
	// +optional
	AfterJobSucceeds CleanupAction `json:"afterJobSucceeds,omitempty"`

	// AfterJobFails applies when the job fails.
	// +kubebuilder:default:=KeepCluster
	// +optional
	AfterJobFails CleanupAction `json:"afterJobFails,omitempty"`

	// AfterJobCancelled applies when the job is cancelled.
	// +kubebuilder:default:=DeleteCluster
	// +optional
	AfterJobCancelled CleanupAction `json:"afterJobCancelled,omitempty"`
}

// JobRestartPolicy says whether a failed job is restarted.
// +kubebuilder:validation:Enum=Never;FromSavepointOnFailure
type JobRestartPolicy string

// Job restart policies.
const (
	JobRestartPolicyNever                  JobRestartPolicy = "Never"
	JobRestartPolicyFromSavepointOnFailure JobRestartPolicy = "FromSavepointOnFailure"
)

// JobMode is how the job is submitted.
// +kubebuilder:validation:Enum=Detached;Blocking;Application
type JobMode string

// Job modes.
const (
	JobModeDetached    JobMode = "Detached"
	JobModeBlocking    JobMode = "Blocking"
	JobModeApplication JobMode = "Application"
)

// UpgradeMode is how a redeploy carries the job's state (the Flink Kubernetes operator's
// upgrade modes, spelt as it spells them).
// +kubebuilder:validation:Enum=savepoint;last-state;stateless
type UpgradeMode string

// Upgrade modes.
const (
	// UpgradeModeSavepoint stops the job with a savepoint and restores it; when the job does
	// not run (it crash-loops or is Lost) and Flink's HA store holds a checkpoint newer than
	// every savepoint, it falls back to UpgradeModeLastState. The default.
	UpgradeModeSavepoint UpgradeMode = "savepoint"
	// UpgradeModeLastState keeps the checkpoints in Flink's Kubernetes HA ConfigMaps, removes
	// only the job graph, and redeploys under the same job ID, so that the new JobManager
	// restores the latest completed checkpoint with the new spec.
	UpgradeModeLastState UpgradeMode = "last-state"
	// UpgradeModeStateless redeploys from empty state, on purpose.
	UpgradeModeStateless UpgradeMode = "stateless"
)

// UpgradeModes are the upgrade modes, in the order of the Enum marker above UpgradeMode.
var UpgradeModes = []UpgradeMode{UpgradeModeSavepoint, UpgradeModeLastState, UpgradeModeStateless}

// SavepointFormatType is the savepoint format.
// +kubebuilder:validation:Enum=CANONICAL;NATIVE
type SavepointFormatType string

// Savepoint formats.
const (
	SavepointFormatTypeCanonical SavepointFormatType = "CANONICAL"
	SavepointFormatTypeNative    SavepointFormatType = "NATIVE"
)

// JobSpec is the job of a job cluster.
//
// +kubebuilder:validation:XValidation:rule="self.?parallelism.orValue(1) >= 1 || (oldSelf.hasValue() && has(oldSelf.value().parallelism) && oldSelf.value().parallelism < 1)",message="parallelism must be at least 1",fieldPath=".parallelism",reason=FieldValueInvalid,optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule=`self.?mode.orValue("") == 'Application' || has(self.jarFile) || has(self.pyFile) || has(self.pyModule) || (oldSelf.hasValue() && !(oldSelf.value().?mode.orValue("") == 'Application' || has(oldSelf.value().jarFile) || has(oldSelf.value().pyFile) || has(oldSelf.value().pyModule)))`,message="one of jarFile, pyFile or pyModule is required outside Application mode",fieldPath=".jarFile",reason=FieldValueRequired,optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule=`self.?restartPolicy.orValue("") != 'FromSavepointOnFailure' || has(self.maxStateAgeToRestoreSeconds) || (oldSelf.hasValue() && oldSelf.value().?restartPolicy.orValue("") == 'FromSavepointOnFailure' && !has(oldSelf.value().maxStateAgeToRestoreSeconds))`,message="maxStateAgeToRestoreSeconds is required with restartPolicy FromSavepointOnFailure",fieldPath=".maxStateAgeToRestoreSeconds",reason=FieldValueRequired,optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule="self.?takeSavepointOnUpdate.orValue(true) || has(self.maxStateAgeToRestoreSeconds) || (oldSelf.hasValue() && !oldSelf.value().?takeSavepointOnUpdate.orValue(true) && !has(oldSelf.value().maxStateAgeToRestoreSeconds))",message="maxStateAgeToRestoreSeconds is required with takeSavepointOnUpdate false",fieldPath=".maxStateAgeToRestoreSeconds",reason=FieldValueRequired,optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !has(self.cancelRequested) || !self.cancelRequested",message="cancelRequested cannot be true on a new job",fieldPath=".cancelRequested",reason=FieldValueForbidden,optionalOldSelf=true
type JobSpec struct {
	// JarFile is the job's JAR.
	// +optional
	JarFile *string `json:"jarFile,omitempty"`

	// ClassName is the job's entry class.
	// +optional
	ClassName *string `json:"className,omitempty"`

	// PyFile is the job's Python file.
	// +optional
	PyFile *string `json:"pyFile,omitempty"`

	// PyFiles are extra Python files.
	// +optional
	PyFiles *string `json:"pyFiles,omitempty"`

	// PyModule is the job's Python module.
	// +optional
	PyModule *string `json:"pyModule,omitempty"`

	// Args are the job's arguments.
	// +optional
	Args []string `json:"args,omitempty"`

	// FromSavepoint is the savepoint the job starts from.
	// +optional
	FromSavepoint *string `json:"fromSavepoint,omitempty"`

	// AllowNonRestoredState skips savepoint state that maps to no operator.
	// +kubebuilder:default:=false
	// +optional
	AllowNonRestoredState *bool `json:"allowNonRestoredState,omitempty"`

	// SavepointsDir is where savepoints are written.
	// +optional
	SavepointsDir *string `json:"savepointsDir,omitempty"`

	// SavepointFormatType is the format of savepoints.
	// +optional
	SavepointFormatType *SavepointFormatType `json:"savepointFormatType,omitempty"`

	// TakeSavepointOnUpdate takes a savepoint before an update; unset means true.
	// +optional
	TakeSavepointOnUpdate *bool `json:"takeSavepointOnUpdate,omitempty"`

	// AutoSavepointSeconds is the interval of periodic savepoints.
	// +optional
	AutoSavepointSeconds *int32 `json:"autoSavepointSeconds,omitempty"`

	// SavepointGeneration triggers a savepoint when increased by one.
	// +optional
	SavepointGeneration int32 `json:"savepointGeneration,omitempty"`

	// SavepointsToKeep asks the controller to dispose of the savepoints it took, through
	// Flink's savepoint disposal, once they are older than the newest SavepointsToKeep of
	// status.savepointHistory; unset keeps every savepoint (the flink-on-k8s-operator's
	// behaviour). At most 10: the history holds the last 10 savepoints, and a savepoint the
	// history forgot is never disposed of.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +optional
	SavepointsToKeep *int32 `json:"savepointsToKeep,omitempty"`

	// UpgradeMode is how a redeploy (an update, or a recovery of a job that crash-loops or
	// is Lost) carries the job's state: savepoint (unset), last-state or stateless. The
	// oldest checkpoint last-state restores from a running job is bounded by the flinkProperty
	// kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age.
	// +optional
	UpgradeMode *UpgradeMode `json:"upgradeMode,omitempty"`

	// MaxStateAgeToRestoreSeconds is the oldest savepoint age a restart or update may use.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxStateAgeToRestoreSeconds *int32 `json:"maxStateAgeToRestoreSeconds,omitempty"`

	// Parallelism is the job's default parallelism.
	// +optional
	Parallelism *int32 `json:"parallelism,omitempty"`

	// NoLoggingToStdout keeps the job submitter's log out of stdout.
	// +kubebuilder:default:=false
	// +optional
	NoLoggingToStdout *bool `json:"noLoggingToStdout,omitempty"`

	// Volumes of the job submitter pod.
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`

	// VolumeMounts of the job submitter container.
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`

	// InitContainers of the job submitter pod.
	// +optional
	InitContainers []corev1.Container `json:"initContainers,omitempty"`

	// NodeSelector of the job submitter pod.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations of the job submitter pod.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// RestartPolicy says whether a failed job is restarted from its latest savepoint. It
	// has no effect with jobManager deploymentType Deployment, where Flink HA recovers.
	// +kubebuilder:default:=Never
	// +optional
	RestartPolicy *JobRestartPolicy `json:"restartPolicy,omitempty"`

	// CleanupPolicy says what happens to the cluster when the job ends.
	// +kubebuilder:default:={afterJobSucceeds:DeleteCluster,afterJobFails:KeepCluster,afterJobCancelled:DeleteCluster}
	// +optional
	CleanupPolicy *CleanupPolicy `json:"cleanupPolicy,omitempty"`

	// CancelRequested cancels the job; it cannot be true on a new job.
	// +optional
	CancelRequested *bool `json:"cancelRequested,omitempty"`

	// PodAnnotations of the job submitter pod.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// PodLabels of the job submitter pod.
	// +optional
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// Resources of the job submitter container.
	// +kubebuilder:default:={requests:{cpu:"200m",memory:"512Mi"},limits:{cpu:"2",memory:"2Gi"}}
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// SecurityContext of the job submitter pod.
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`

	// HostAliases of the job submitter pod.
	// +optional
	HostAliases []corev1.HostAlias `json:"hostAliases,omitempty"`

	// Affinity of the job submitter pod.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// Mode is how the job is submitted; Application runs main() in the JobManager.
	// +kubebuilder:default:=Detached
	// +optional
	Mode *JobMode `json:"mode,omitempty"`

	// ClassPath are extra class path entries.
	// +optional
	ClassPath []string `json:"classPath,omitempty"`
}

// HadoopConfig mounts a Hadoop configuration ConfigMap.
type HadoopConfig struct {
	// ConfigMapName is the ConfigMap holding the Hadoop configuration.
	// +optional
	ConfigMapName string `json:"configMapName,omitempty"`

	// MountPath is where it is mounted.
	// +kubebuilder:default:=/etc/hadoop/conf
	// +optional
	MountPath string `json:"mountPath,omitempty"`
}

// GCPConfig mounts Google Cloud configuration.
type GCPConfig struct {
	// ServiceAccount mounts a service account key.
	// +optional
	ServiceAccount *GCPServiceAccount `json:"serviceAccount,omitempty"`
}

// GCPServiceAccount mounts a Google Cloud service account key from a Secret.
type GCPServiceAccount struct {
	// SecretName is the Secret holding the key.
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// KeyFile is the key's file name in the Secret.
	// +optional
	KeyFile string `json:"keyFile,omitempty"`

	// MountPath is the directory the key is mounted in.
	// +optional
	MountPath string `json:"mountPath,omitempty"`
}
