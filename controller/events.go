package controller

// Event reasons. Each lifecycle transition records one.
const (
	ReasonNotManaged         = "NotManaged"
	ReasonJobStateChanged    = "JobStateChanged"
	ReasonJobFailed          = "JobFailed"
	ReasonJobLost            = "JobLost"
	ReasonClusterState       = "ClusterStateChanged"
	ReasonJobManagerCreated  = "JobManagerCreated"
	ReasonJobManagerDeleted  = "JobManagerDeleted"
	ReasonJobManagerScaled   = "JobManagerScaledDown"
	ReasonWaitingForPods     = "WaitingForJobManagerPods"
	ReasonUpdateStarted      = "UpdateStarted"
	ReasonRestarting         = "JobRestarting"
	ReasonSavepointTriggered = "SavepointTriggered"
	ReasonSavepointSucceeded = "SavepointSucceeded"
	ReasonSavepointFailed    = "SavepointFailed"
	ReasonControlAccepted    = "ControlAccepted"
	ReasonControlSucceeded   = "ControlSucceeded"
	ReasonControlFailed      = "ControlFailed"
	ReasonCleanup            = "Cleanup"
	ReasonDeleting           = "Deleting"
	ReasonFlinkUnreachable   = "FlinkAPIUnreachable"
	ReasonJobManagerReady    = "JobManagerReady"
	ReasonJobManagerNotReady = "JobManagerNotReady"
	ReasonUpdateFinished     = "UpdateFinished"
)

// Savepoint states (status.savepoint.state) and trigger reasons.
const (
	SavepointStateRequested  = "Requested"
	SavepointStateInProgress = "InProgress"
	SavepointStateSucceeded  = "Succeeded"
	SavepointStateFailed     = "Failed"

	SavepointReasonUpdate    = "update"
	SavepointReasonUser      = "user"
	SavepointReasonJobCancel = "job-cancel"
)

// Finalizer holds a FlinkCluster being deleted until its JobManager pods are gone and its HA
// ConfigMaps are removed.
const Finalizer = "flinkclusters.flinkoperator.k8s.io/finalizer"

// haConfigMapLabel is the label Flink's Kubernetes HA services put on their ConfigMaps, next
// to app=<cluster id>.
const (
	haConfigMapTypeLabel = "configmap-type"
	haConfigMapType      = "high-availability"
)
