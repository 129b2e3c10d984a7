package controller

import "github.com/flink-admission/flink-admission/flinkcluster"

// Event reasons. Each lifecycle transition records one.
const (
	ReasonNotManaged          = "NotManaged"
	ReasonJobStateChanged     = "JobStateChanged"
	ReasonJobFailed           = "JobFailed"
	ReasonJobLost             = "JobLost"
	ReasonJobManagerCreated   = "JobManagerCreated"
	ReasonJobManagerDeleted   = "JobManagerDeleted"
	ReasonJobManagerScaled    = "JobManagerScaledDown"
	ReasonWaitingForPods      = "WaitingForJobManagerPods"
	ReasonUpdateStarted       = "UpdateStarted"
	ReasonRestarting          = "JobRestarting"
	ReasonSavepointTriggered  = "SavepointTriggered"
	ReasonSavepointSucceeded  = "SavepointSucceeded"
	ReasonSavepointFailed     = "SavepointFailed"
	ReasonControlAccepted     = "ControlAccepted"
	ReasonControlSucceeded    = "ControlSucceeded"
	ReasonControlFailed       = "ControlFailed"
	ReasonCleanup             = "Cleanup"
	ReasonDeleting            = "Deleting"
	ReasonFlinkUnreachable    = "FlinkAPIUnreachable"
	ReasonUpdateFinished      = "UpdateFinished"
	ReasonSavepointRequired   = "SavepointRequired"
	ReasonRestoreAccepted     = "RestoreAccepted"
	ReasonHAConfigMapsDeleted = "HAConfigMapsDeleted"
	ReasonHAMetadataMissing   = "HAMetadataMissing"
	ReasonUnsupportedHA       = "UnsupportedHA"
	ReasonWaitExceeded        = "WaitExceeded"
	ReasonJobCancelled        = "JobCancelled"
	// ReasonUnlistedTransition: an event state.Transitions does not list for the job's state was refused.
	ReasonUnlistedTransition = "UnlistedTransition"
	// ReasonSavepointDisposed: Flink disposed of a savepoint spec.job.savepointsToKeep no longer keeps.
	ReasonSavepointDisposed = "SavepointDisposed"
	// ReasonSavepointDisposalFailed: a disposal failed or its outcome is unknown.
	ReasonSavepointDisposalFailed = "SavepointDisposalFailed"
	// ReasonLastStateRedeploy: a deploy restores the newest checkpoint of Flink's HA store.
	ReasonLastStateRedeploy = "LastStateRedeploy"
	// ReasonLastStateRefused: a last-state update takes a savepoint instead (checkpoint too old).
	ReasonLastStateRefused = "LastStateRefused"
	// ReasonStatelessRedeploy: a deploy starts from empty state.
	ReasonStatelessRedeploy = "StatelessRedeploy"
	// ReasonJobManagerShutdown: an ended Job-mode job's JobManager was asked to shut down.
	ReasonJobManagerShutdown = "JobManagerShutdown"
	// ReasonJobManagerShutdownUnanswered: it did not within the wait bound; its Job was deleted.
	ReasonJobManagerShutdownUnanswered = "JobManagerShutdownUnanswered"
)

// RestoreAnnotation answers the SavepointRequired condition (flinkcluster.RestoreAnnotation);
// the controller removes it once it deployed from it.
const RestoreAnnotation = flinkcluster.RestoreAnnotation

// RestoreEmptyState as the RestoreAnnotation's value starts the next deploy without state.
const RestoreEmptyState = flinkcluster.RestoreEmptyState

// Savepoint states (status.savepoint.state) and trigger reasons.
const (
	SavepointStateRequested  = "Requested"
	SavepointStateInProgress = "InProgress"
	SavepointStateSucceeded  = "Succeeded"
	SavepointStateFailed     = "Failed"
	// SavepointStateUnknown: Flink lost the result and nothing shows whether it was taken.
	SavepointStateUnknown = "Unknown"

	SavepointReasonUpdate    = flinkcluster.SavepointReasonUpdate
	SavepointReasonUser      = "user"
	SavepointReasonJobCancel = "job-cancel"
)

// Finalizer holds a FlinkCluster being deleted until its JobManager pods are gone and its HA
// ConfigMaps are removed.
const Finalizer = "flinkclusters.flinkoperator.k8s.io/finalizer"
