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
	// ReasonUnlistedTransition: the controller refused to move the job by an event that the
	// job state machine (state.Transitions) does not list for the job's state.
	ReasonUnlistedTransition = "UnlistedTransition"
	// ReasonSavepointDisposed: Flink disposed of a savepoint spec.job.savepointsToKeep no
	// longer keeps.
	ReasonSavepointDisposed = "SavepointDisposed"
	// ReasonSavepointDisposalFailed: a disposal failed or its outcome is unknown.
	ReasonSavepointDisposalFailed = "SavepointDisposalFailed"
	// ReasonLastStateRedeploy: a deploy restores the newest checkpoint of Flink's HA store
	// under the same job ID (upgradeMode last-state, or savepoint's fallback).
	ReasonLastStateRedeploy = "LastStateRedeploy"
	// ReasonLastStateRefused: a last-state update of a running job takes a savepoint instead:
	// its newest checkpoint is older than the max checkpoint age.
	ReasonLastStateRefused = "LastStateRefused"
	// ReasonStatelessRedeploy: a deploy starts from empty state, as upgradeMode stateless asks.
	ReasonStatelessRedeploy = "StatelessRedeploy"
	// ReasonJobManagerShutdown: the JobManager of a Job-mode job that ended was asked to shut
	// down (DELETE /cluster) once the controller had recorded the job's end.
	ReasonJobManagerShutdown = "JobManagerShutdown"
	// ReasonJobManagerShutdownUnanswered: a Job-mode JobManager whose job ended did not answer
	// the shutdown within the wait bound; the controller deleted its Job instead.
	ReasonJobManagerShutdownUnanswered = "JobManagerShutdownUnanswered"
)

// RestoreAnnotation is how a user answers the SavepointRequired condition: when the controller
// stops for want of a confirmed final savepoint (an update or a recovery whose newest state it
// cannot confirm), it deploys nothing until this annotation names what the next deploy
// restores: a savepoint path (an older savepoint, knowingly) or RestoreEmptyState. The
// controller removes the annotation once it deployed from it.
const RestoreAnnotation = flinkcluster.RestoreAnnotation

// RestoreEmptyState as the RestoreAnnotation's value starts the next deploy without state.
const RestoreEmptyState = flinkcluster.RestoreEmptyState

// Savepoint states (status.savepoint.state) and trigger reasons.
const (
	SavepointStateRequested  = "Requested"
	SavepointStateInProgress = "InProgress"
	SavepointStateSucceeded  = "Succeeded"
	SavepointStateFailed     = "Failed"
	// SavepointStateUnknown: Flink lost the result and nothing shows whether the savepoint
	// was taken.
	SavepointStateUnknown = "Unknown"

	SavepointReasonUpdate    = "update"
	SavepointReasonUser      = "user"
	SavepointReasonJobCancel = "job-cancel"
)

// Finalizer holds a FlinkCluster being deleted until its JobManager pods are gone and its HA
// ConfigMaps are removed.
const Finalizer = "flinkclusters.flinkoperator.k8s.io/finalizer"
