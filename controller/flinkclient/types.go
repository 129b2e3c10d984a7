// Package flinkclient is a small client of the Flink REST API: the calls the controller needs
// to follow an application-mode job (job list and details, exceptions, savepoints,
// stop-with-savepoint) and, on Flink 2.3 and later, the application status.
package flinkclient

import (
	"context"
	"errors"
)

// Flink job states (JobStatus in the Flink REST API).
const (
	JobStateInitializing = "INITIALIZING"
	JobStateCreated      = "CREATED"
	JobStateRunning      = "RUNNING"
	JobStateFailing      = "FAILING"
	JobStateFailed       = "FAILED"
	JobStateCancelling   = "CANCELLING"
	JobStateCanceled     = "CANCELED"
	JobStateFinished     = "FINISHED"
	JobStateRestarting   = "RESTARTING"
	JobStateSuspended    = "SUSPENDED"
	JobStateReconciling  = "RECONCILING"
)

// Application states (Flink 2.3+, FLIP-549).
const (
	ApplicationStateCreated   = "CREATED"
	ApplicationStateRunning   = "RUNNING"
	ApplicationStateFailing   = "FAILING"
	ApplicationStateFailed    = "FAILED"
	ApplicationStateCanceling = "CANCELING"
	ApplicationStateCanceled  = "CANCELED"
	ApplicationStateFinished  = "FINISHED"
)

// Asynchronous operation states (savepoint and stop-with-savepoint status).
const (
	OperationInProgress = "IN_PROGRESS"
	OperationCompleted  = "COMPLETED"
)

// ErrNotFound is returned when Flink answers 404: an unknown job, trigger or, on Flink before
// 2.3, the whole application API.
var ErrNotFound = errors.New("not found")

// Client is what the controller asks the Flink REST API. Every call is bounded by ctx.
type Client interface {
	// ListJobs returns every job the JobManager knows, including finished ones.
	ListJobs(ctx context.Context) ([]Job, error)
	// GetJob returns one job.
	GetJob(ctx context.Context, jobID string) (*Job, error)
	// GetExceptions returns the job's most recent failures, newest first.
	GetExceptions(ctx context.Context, jobID string) ([]Exception, error)
	// TriggerSavepoint starts a savepoint that leaves the job running; it returns the trigger ID.
	TriggerSavepoint(ctx context.Context, jobID string, req SavepointRequest) (string, error)
	// StopWithSavepoint starts a savepoint that stops the job once taken; it returns the
	// trigger ID.
	StopWithSavepoint(ctx context.Context, jobID string, req SavepointRequest) (string, error)
	// SavepointStatus returns the state of a savepoint or stop-with-savepoint trigger.
	SavepointStatus(ctx context.Context, jobID, triggerID string) (*SavepointStatus, error)
	// ListApplications returns the applications (Flink 2.3+). Older versions answer 404:
	// the error then wraps ErrNotFound, and callers treat it as "no application status".
	ListApplications(ctx context.Context) ([]Application, error)
	// GetApplicationExceptions returns an application's failures, newest first (Flink 2.3+).
	GetApplicationExceptions(ctx context.Context, applicationID string) ([]Exception, error)
}

// Job is a Flink job as listed by /jobs/overview or returned by /jobs/:jobid.
type Job struct {
	ID        string `json:"jid"`
	Name      string `json:"name"`
	State     string `json:"state"`
	StartTime int64  `json:"start-time"`
	EndTime   int64  `json:"end-time"`
}

// Application is a Flink 2.3+ application as listed by /applications/overview.
type Application struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Status    string `json:"status"`
	StartTime int64  `json:"start-time"`
	EndTime   int64  `json:"end-time"`
}

// Exception is one entry of a job's or an application's exception history.
type Exception struct {
	Name       string `json:"exceptionName"`
	StackTrace string `json:"stacktrace"`
	Timestamp  int64  `json:"timestamp"`
}

// SavepointRequest says where and in which format a savepoint is written.
type SavepointRequest struct {
	// TargetDirectory is the savepoint directory; empty uses Flink's state.savepoints.dir.
	TargetDirectory string
	// FormatType is CANONICAL or NATIVE; empty uses Flink's default.
	FormatType string
}

// SavepointStatus is the state of a savepoint trigger.
type SavepointStatus struct {
	// State is IN_PROGRESS or COMPLETED.
	State string
	// Location is the savepoint path, once completed successfully.
	Location string
	// FailureCause describes why a completed savepoint failed; empty on success.
	FailureCause string
}

// Completed reports whether the trigger finished, successfully or not.
func (s *SavepointStatus) Completed() bool { return s != nil && s.State == OperationCompleted }

// Succeeded reports whether the savepoint was taken.
func (s *SavepointStatus) Succeeded() bool {
	return s.Completed() && s.FailureCause == "" && s.Location != ""
}

// IsTerminalJobState reports whether a Flink job state is globally terminal.
func IsTerminalJobState(state string) bool {
	switch state {
	case JobStateFinished, JobStateFailed, JobStateCanceled:
		return true
	}
	return false
}
