package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cluster states (status.state).
const (
	ClusterStateCreating         = "Creating"
	ClusterStateRunning          = "Running"
	ClusterStateReconciling      = "Reconciling"
	ClusterStateUpdating         = "Updating"
	ClusterStateStopping         = "Stopping"
	ClusterStatePartiallyStopped = "PartiallyStopped"
	ClusterStateStopped          = "Stopped"
)

// Component states.
const (
	ComponentStateNotReady = "NotReady"
	ComponentStateReady    = "Ready"
	ComponentStateUpdating = "Updating"
	ComponentStateDeleted  = "Deleted"
)

// Job states (status.components.job.state).
const (
	JobStatePending      = "Pending"
	JobStateUpdating     = "Updating"
	JobStateRestarting   = "Restarting"
	JobStateDeploying    = "Deploying"
	JobStateDeployFailed = "DeployFailed"
	JobStateRunning      = "Running"
	JobStateSucceeded    = "Succeeded"
	JobStateCancelled    = "Cancelled"
	JobStateFailed       = "Failed"
	JobStateLost         = "Lost"
	JobStateUnknown      = "Unknown"
)

// User control (status.control and the user-control annotation).
const (
	// ControlAnnotation is the annotation a user sets to request a savepoint or a cancel.
	ControlAnnotation = "flinkclusters.flinkoperator.k8s.io/user-control"

	ControlNameSavepoint = "savepoint"
	ControlNameJobCancel = "job-cancel"

	ControlStateRequested  = "Requested"
	ControlStateInProgress = "InProgress"
	ControlStateSucceeded  = "Succeeded"
	ControlStateFailed     = "Failed"
)

// FlinkClusterStatus is the observed state of a FlinkCluster.
type FlinkClusterStatus struct {
	// State is the cluster state.
	State string `json:"state"`

	// Components are the states of the cluster's components.
	Components FlinkClusterComponentsStatus `json:"components"`

	// Control is the state of the last user control.
	// +optional
	Control *FlinkClusterControlStatus `json:"control,omitempty"`

	// Savepoint is the state of the last savepoint.
	// +optional
	Savepoint *SavepointStatus `json:"savepoint,omitempty"`

	// SavepointHistory lists the last savepoints the controller took (at most 10), oldest
	// first: where each is and when it was taken, and its disposal when spec.job.savepointsToKeep
	// asks for one.
	// +optional
	SavepointHistory []SavepointRecord `json:"savepointHistory,omitempty"`

	// Revision tracks spec revisions.
	// +optional
	Revision RevisionStatus `json:"revision,omitzero"`

	// LastUpdateTime is when the status last changed.
	// +optional
	LastUpdateTime string `json:"lastUpdateTime,omitempty"`

	// ObservedGeneration is the metadata.generation the controller last reconciled: a
	// smaller value means the status does not yet answer the latest spec (kstatus, Flux and
	// Argo CD read it so).
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions record the controller's lifecycle transitions (Managed, JobManagerReady,
	// Updating, DeploymentFailed, Lost, ...) and the cluster's health (Ready, Reconciling,
	// Stalled), each with the time of its last change.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// FlinkClusterComponentsStatus are the states of a cluster's components.
type FlinkClusterComponentsStatus struct {
	// ConfigMap holds the Flink configuration.
	// +optional
	ConfigMap *ConfigMapStatus `json:"configMap,omitempty"`

	// JobManager is the JobManager workload.
	// +optional
	JobManager *JobManagerStatus `json:"jobManager,omitempty"`

	// JobManagerService is the JobManager Service.
	// +optional
	JobManagerService JobManagerServiceStatus `json:"jobManagerService,omitzero"`

	// JobManagerIngress is the JobManager Ingress.
	// +optional
	JobManagerIngress *JobManagerIngressStatus `json:"jobManagerIngress,omitempty"`

	// TaskManager is the TaskManager workload.
	// +optional
	TaskManager *TaskManagerStatus `json:"taskManager,omitempty"`

	// Job is the job.
	// +optional
	Job *JobStatus `json:"job,omitempty"`
}

// ConfigMapStatus is the state of the Flink configuration ConfigMap.
type ConfigMapStatus struct {
	// Name of the ConfigMap.
	Name string `json:"name"`
	// State of the ConfigMap.
	State string `json:"state"`
}

// JobManagerStatus is the state of the JobManager workload.
type JobManagerStatus struct {
	// Name of the workload.
	Name string `json:"name"`
	// State of the workload.
	State string `json:"state"`
	// Replicas is the desired replica count.
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is the ready replica count.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Ready is "ready/desired".
	Ready string `json:"ready"`
	// DeploymentType is the JobManager workload's kind, Job or Deployment: the spec's, with
	// unset shown as Job (the printer column reads it here).
	// +optional
	DeploymentType string `json:"deploymentType,omitempty"`
}

// JobManagerServiceStatus is the state of the JobManager Service.
type JobManagerServiceStatus struct {
	// Name of the Service.
	Name string `json:"name"`
	// State of the Service.
	State string `json:"state"`
	// NodePort of the Service, for access scope NodePort.
	// +optional
	NodePort int32 `json:"nodePort,omitempty"`
	// LoadBalancerIngress of the Service.
	// +optional
	LoadBalancerIngress []corev1.LoadBalancerIngress `json:"loadBalancerIngress,omitempty"`
}

// JobManagerIngressStatus is the state of the JobManager Ingress.
type JobManagerIngressStatus struct {
	// Name of the Ingress.
	Name string `json:"name"`
	// State of the Ingress.
	State string `json:"state"`
	// URLs of the Ingress.
	// +optional
	URLs []string `json:"urls,omitempty"`
}

// TaskManagerStatus is the state of the TaskManager workload.
type TaskManagerStatus struct {
	// Name of the workload.
	Name string `json:"name"`
	// State of the workload.
	State string `json:"state"`
	// Replicas is the desired replica count.
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is the ready replica count.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Ready is "ready/desired".
	Ready string `json:"ready"`
	// Selector is the label selector of the TaskManager pods (for the scale subresource).
	Selector string `json:"selector"`
}

// JobStatus is the state of the job.
type JobStatus struct {
	// ID is the Flink job ID.
	// +optional
	ID string `json:"id,omitempty"`
	// Name is the Flink job name.
	// +optional
	Name string `json:"name,omitempty"`
	// SubmitterName is the job submitter's name.
	// +optional
	SubmitterName string `json:"submitterName,omitempty"`
	// SubmitterExitCode is the job submitter's exit code.
	// +optional
	SubmitterExitCode int32 `json:"submitterExitCode,omitempty"`
	// State is the job state.
	State string `json:"state"`
	// FromSavepoint is the savepoint the job started from.
	// +optional
	FromSavepoint string `json:"fromSavepoint,omitempty"`
	// SavepointGeneration is the generation of the last savepoint.
	// +optional
	SavepointGeneration int32 `json:"savepointGeneration,omitempty"`
	// SavepointLocation is the last savepoint.
	// +optional
	SavepointLocation string `json:"savepointLocation,omitempty"`
	// SavepointTime is when the last savepoint was taken.
	// +optional
	SavepointTime string `json:"savepointTime,omitempty"`
	// FromCheckpoint is whether the current deploy restores the newest checkpoint that Flink's
	// HA store keeps for the job ID (a last-state redeploy) rather than FromSavepoint.
	// +optional
	FromCheckpoint bool `json:"fromCheckpoint,omitempty"`
	// SavepointCheckpointID is the checkpoint ID Flink gave the last savepoint, when known:
	// a checkpoint in Flink's HA store with a higher ID holds newer state than the savepoint.
	// +optional
	SavepointCheckpointID int64 `json:"savepointCheckpointID,omitempty"`
	// UnknownSavepointTime is the trigger time of the newest savepoint of the job ID whose
	// outcome the controller never learnt before a later request replaced status.savepoint
	// (its result was lost with its JobManager, or expired): that savepoint may have
	// completed after the newest checkpoint of Flink's HA store, which never holds
	// savepoints, so no last-state redeploy restores the store until a savepoint triggered
	// later succeeds. A new job ID clears it.
	// +optional
	UnknownSavepointTime string `json:"unknownSavepointTime,omitempty"`
	// FlinkVersion is the spec.flinkVersion the current deploy runs: an update to another
	// Flink version cannot be a last-state one (the new version does not read the old one's
	// HA checkpoint handles).
	// +optional
	FlinkVersion string `json:"flinkVersion,omitempty"`
	// FinalSavepoint is whether the last savepoint ended the job.
	// +optional
	FinalSavepoint bool `json:"finalSavepoint,omitempty"`
	// SpecFromSavepoint is spec.job.fromSavepoint as the revision the job runs has it: an
	// update restores spec.job.fromSavepoint only when it names another savepoint.
	// +optional
	SpecFromSavepoint string `json:"specFromSavepoint,omitempty"`
	// DeployTime is when the job was deployed.
	// +optional
	DeployTime string `json:"deployTime,omitempty"`
	// StartTime is when the job started.
	// +optional
	StartTime string `json:"startTime,omitempty"`
	// RestartCount is how often the job was restarted.
	// +optional
	RestartCount int32 `json:"restartCount,omitempty"`
	// CompletionTime is when the job ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// FailureReasons are why the job failed.
	// +optional
	FailureReasons []string `json:"failureReasons,omitempty"`
}

// SavepointStatus is the state of the last savepoint.
type SavepointStatus struct {
	// JobID is the job the savepoint belongs to.
	// +optional
	JobID string `json:"jobID,omitempty"`
	// TriggerID is Flink's savepoint trigger ID.
	// +optional
	TriggerID string `json:"triggerID,omitempty"`
	// TriggerTime is when the savepoint was triggered.
	// +optional
	TriggerTime string `json:"triggerTime,omitempty"`
	// TriggerReason is why the savepoint was triggered.
	// +optional
	TriggerReason string `json:"triggerReason,omitempty"`
	// RequestTime is when the savepoint was requested.
	// +optional
	RequestTime string `json:"requestTime,omitempty"`
	// State is the savepoint state.
	State string `json:"state"`
	// Message explains the state.
	// +optional
	Message string `json:"message,omitempty"`
	// FormatType is the savepoint format.
	// +optional
	FormatType string `json:"formatType,omitempty"`
	// UpdateTime is when the state last changed: a failed scheduled or requested savepoint
	// is retried 10 seconds after it.
	// +optional
	UpdateTime string `json:"updateTime,omitempty"`
}

// Savepoint disposal states (status.savepointHistory[].disposal).
const (
	// SavepointDisposalInProgress: Flink was asked to dispose of the savepoint.
	SavepointDisposalInProgress = "InProgress"
	// SavepointDisposalFailed: Flink could not dispose of it, or its answer was lost; the
	// savepoint may still be there, and the controller does not ask again.
	SavepointDisposalFailed = "Failed"
)

// SavepointRecord is one savepoint of status.savepointHistory.
type SavepointRecord struct {
	// Location is the savepoint's path.
	Location string `json:"location"`
	// Time is when it was taken.
	Time string `json:"time"`
	// JobID is the job it belongs to.
	// +optional
	JobID string `json:"jobID,omitempty"`
	// TriggerReason is why it was taken (update, job-cancel, user, savepoint-generation,
	// scheduled).
	// +optional
	TriggerReason string `json:"triggerReason,omitempty"`
	// Final is whether it ended the job (stop-with-savepoint).
	// +optional
	Final bool `json:"final,omitempty"`
	// Disposal is its disposal state: InProgress or Failed; unset while it is kept.
	// +optional
	Disposal string `json:"disposal,omitempty"`
	// DisposalTriggerID is Flink's trigger ID of the disposal.
	// +optional
	DisposalTriggerID string `json:"disposalTriggerID,omitempty"`
	// DisposalMessage explains a failed disposal.
	// +optional
	DisposalMessage string `json:"disposalMessage,omitempty"`
}

// RevisionStatus tracks spec revisions.
type RevisionStatus struct {
	// CurrentRevision is the revision the components run.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// NextRevision is the revision being rolled out.
	// +optional
	NextRevision string `json:"nextRevision,omitempty"`
	// CollisionCount counts hash collisions of revision names.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`
}

// FlinkClusterControlStatus is the state of a user control.
type FlinkClusterControlStatus struct {
	// Name is the control: savepoint or job-cancel.
	Name string `json:"name"`
	// Details of the control.
	// +optional
	Details map[string]string `json:"details,omitempty"`
	// State of the control.
	State string `json:"state"`
	// Message explains the state.
	// +optional
	Message string `json:"message,omitempty"`
	// UpdateTime is when the state last changed.
	UpdateTime string `json:"updateTime"`
}
