// Package flinkclient is a small client of the Flink REST API: the calls the controller needs
// to follow an application-mode job (job list and details, exceptions, savepoints,
// stop-with-savepoint, checkpoint statistics, cancel) and, on Flink 2.3 and later, the
// application status. Field names follow Flink's REST message classes, named on each type.
package flinkclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// Application states (ApplicationState, Flink 2.3+, FLIP-549). Note the spelling: the
// transitional state is CANCELLING, the terminal one CANCELED, as for jobs.
const (
	ApplicationStateCreated    = "CREATED"
	ApplicationStateRunning    = "RUNNING"
	ApplicationStateFailing    = "FAILING"
	ApplicationStateFailed     = "FAILED"
	ApplicationStateCancelling = "CANCELLING"
	ApplicationStateCanceled   = "CANCELED"
	ApplicationStateFinished   = "FINISHED"
)

// ApplicationDriverJobName is the name of the FAILED job Flink reports when an application's
// main() throws and execution.submit-failed-job-on-application-error is true.
const ApplicationDriverJobName = "(application driver)"

// NotExternallyAddressable is the external_path Flink reports for a checkpoint whose metadata
// is not persisted (NonPersistentMetadataCheckpointStorageLocation.EXTERNAL_POINTER): such a
// checkpoint cannot be restored from.
const NotExternallyAddressable = "<checkpoint-not-externally-addressable>"

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
	// GetExceptions returns the job's most recent failures, sorted newest first by timestamp.
	GetExceptions(ctx context.Context, jobID string) ([]Exception, error)
	// TriggerSavepoint starts a savepoint that leaves the job running; it returns the trigger
	// ID. With req.TriggerID set, Flink treats a repeated call as the same operation.
	TriggerSavepoint(ctx context.Context, jobID string, req SavepointRequest) (string, error)
	// StopWithSavepoint starts a savepoint that stops the job once taken; it returns the
	// trigger ID. With req.TriggerID set, a repeated call does not stop the job twice.
	StopWithSavepoint(ctx context.Context, jobID string, req SavepointRequest) (string, error)
	// SavepointStatus returns the state of a savepoint or stop-with-savepoint trigger. Flink
	// forgets results after rest.async.store-duration (and on a JobManager restart): the
	// error then wraps ErrNotFound.
	SavepointStatus(ctx context.Context, jobID, triggerID string) (*SavepointStatus, error)
	// GetCheckpoints returns the job's checkpoint statistics, including the latest completed
	// checkpoint and savepoint: where a lost savepoint result can be recovered from.
	GetCheckpoints(ctx context.Context, jobID string) (*Checkpoints, error)
	// CancelJob cancels a job without a savepoint (PATCH /jobs/:jobid?mode=cancel). Flink
	// answers 409 (an *HTTPError) for a job that already ended otherwise.
	CancelJob(ctx context.Context, jobID string) error
	// ListApplications returns the applications (Flink 2.3+). Older versions answer 404:
	// the error then wraps ErrNotFound, and callers treat it as "no application status".
	ListApplications(ctx context.Context) ([]Application, error)
	// GetApplication returns one application with its jobs (Flink 2.3+; 404 before).
	GetApplication(ctx context.Context, applicationID string) (*Application, error)
	// CancelApplication cancels an application and its jobs (Flink 2.3+; 404 before, 409 for
	// an application that already ended otherwise).
	CancelApplication(ctx context.Context, applicationID string) error
	// GetApplicationExceptions returns an application's failures, sorted newest first by
	// timestamp (Flink 2.3+; the handler itself does not order them).
	GetApplicationExceptions(ctx context.Context, applicationID string) ([]Exception, error)
	// DisposeSavepoint asks the Dispatcher to dispose of a savepoint (POST
	// /savepoint-disposal, SavepointDisposalRequest): it removes the savepoint's metadata and
	// state files. It returns the trigger ID; the request carries none of the caller's, so a
	// repeated call is a second disposal (of a savepoint that may be gone by then).
	DisposeSavepoint(ctx context.Context, savepointPath string) (string, error)
	// DisposalStatus returns the state of a disposal (GET /savepoint-disposal/:triggerid,
	// AsynchronousOperationResult<AsynchronousOperationInfo>). The result lives in the
	// Dispatcher that took the request: after rest.async.store-duration, or once another
	// JobManager answers, the error wraps ErrNotFound.
	DisposalStatus(ctx context.Context, triggerID string) (*OperationStatus, error)
	// ShutdownCluster ends the JobManager (DELETE /cluster, ShutdownHandler): the leader's
	// Dispatcher completes its shutdown future with ApplicationStatus.SUCCEEDED, and the
	// entrypoint cleans up the cluster's HA data and exits with that status's exit code, 0,
	// whatever state the cluster's jobs ended in. Flink answers 200 before the process exits.
	ShutdownCluster(ctx context.Context) error
}

// OperationStatus is the state of an asynchronous operation without a result (a savepoint
// disposal).
type OperationStatus struct {
	// State is IN_PROGRESS or COMPLETED.
	State string
	// FailureCause describes why a completed operation failed; empty on success.
	FailureCause string
}

// Completed reports whether the operation finished, successfully or not.
func (s *OperationStatus) Completed() bool { return s != nil && s.State == OperationCompleted }

// Succeeded reports whether the operation finished without a failure.
func (s *OperationStatus) Succeeded() bool { return s.Completed() && s.FailureCause == "" }

// Job is a Flink job as listed by /jobs/overview (JobDetails) or returned by /jobs/:jobid
// (JobDetailsInfo). Times are epoch milliseconds; EndTime is -1 while the job runs.
type Job struct {
	ID        string `json:"jid"`
	Name      string `json:"name"`
	State     string `json:"state"`
	StartTime int64  `json:"start-time"`
	EndTime   int64  `json:"end-time"`
	// ApplicationID is the owning application (JobDetailsInfo "application-id", Flink 2.3+;
	// empty before and in the job overview).
	ApplicationID string `json:"application-id,omitempty"`
}

// Application is a Flink 2.3+ application, from /applications/overview (ApplicationDetails:
// "jobs" maps a job state to a count) or /applications/:id (ApplicationDetailsInfo: "jobs"
// lists JobDetails). Decoding accepts both shapes and fills JobCounts either way.
type Application struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Status    string `json:"status"`
	StartTime int64  `json:"start-time"`
	EndTime   int64  `json:"end-time"`
	// JobCounts maps a job state to the number of the application's jobs in it.
	JobCounts map[string]int `json:"-"`
	// Jobs are the application's jobs; only /applications/:id lists them.
	Jobs []Job `json:"-"`
}

// Exception is one entry of a job's or an application's exception history
// (JobExceptionsInfoWithHistory, ApplicationExceptionsInfoWithHistory).
type Exception struct {
	Name       string `json:"exceptionName"`
	StackTrace string `json:"stacktrace"`
	// Timestamp is when the failure happened, epoch milliseconds.
	Timestamp int64 `json:"timestamp"`
	// TaskName is the failing task, when the failure is a task's.
	TaskName string `json:"taskName,omitempty"`
	// JobID is the failing job in an application's history; empty for a failure of main().
	JobID string `json:"jobId,omitempty"`
}

// SavepointRequest says where and in which format a savepoint is written, and under which
// trigger ID.
type SavepointRequest struct {
	// TargetDirectory is the savepoint directory; empty uses Flink's state.savepoints.dir.
	TargetDirectory string
	// FormatType is CANONICAL or NATIVE; empty uses Flink's default.
	FormatType string
	// TriggerID makes the trigger idempotent: 32 hexadecimal characters, chosen (and recorded)
	// by the caller before the call, so that a retry after a lost answer or a lost status
	// write asks about the same operation instead of starting another. Empty lets Flink pick.
	TriggerID string
}

// Checkpoints is the part of /jobs/:jobid/checkpoints (CheckpointingStatistics) the
// controller reads.
type Checkpoints struct {
	Counts CheckpointCounts  `json:"counts"`
	Latest LatestCheckpoints `json:"latest"`
	// History lists the recent checkpoints, newest first (web.checkpoints.history entries).
	History []Checkpoint `json:"history"`
}

// CheckpointInProgress is the status of a checkpoint Flink has triggered and not yet completed
// or failed (CheckpointStatsStatus.IN_PROGRESS).
const CheckpointInProgress = "IN_PROGRESS"

// InProgress returns the checkpoint in progress, nil when none: the newest history entry, as
// Flink triggers one checkpoint after another (the Flink Kubernetes operator reads it so).
func (c *Checkpoints) InProgress() *Checkpoint {
	if c == nil || len(c.History) == 0 || c.History[0].Status != CheckpointInProgress {
		return nil
	}
	return &c.History[0]
}

// CheckpointCounts are CheckpointingStatistics.Counts.
type CheckpointCounts struct {
	Restored   int64 `json:"restored"`
	Total      int64 `json:"total"`
	InProgress int64 `json:"in_progress"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
}

// LatestCheckpoints are CheckpointingStatistics.LatestCheckpoints; each may be absent.
type LatestCheckpoints struct {
	Completed *Checkpoint `json:"completed"`
	Savepoint *Checkpoint `json:"savepoint"`
	Failed    *Checkpoint `json:"failed"`
	Restored  *Checkpoint `json:"restored"`
}

// Checkpoint is one CheckpointStatistics entry (completed, failed or restored).
type Checkpoint struct {
	ID     int64  `json:"id"`
	Status string `json:"status"`
	// IsSavepoint tells a savepoint from a checkpoint.
	IsSavepoint bool `json:"is_savepoint"`
	// TriggerTimestamp and LatestAckTimestamp are epoch milliseconds.
	TriggerTimestamp   int64 `json:"trigger_timestamp"`
	LatestAckTimestamp int64 `json:"latest_ack_timestamp"`
	// ExternalPath is where a completed (or restored) checkpoint can be restored from.
	ExternalPath string `json:"external_path"`
	// Discarded is true once Flink deleted a completed checkpoint's data.
	Discarded bool `json:"discarded"`
	// RestoreTimestamp is set on the restored entry.
	RestoreTimestamp int64 `json:"restore_timestamp"`
	// FailureTimestamp and FailureMessage are set on the failed entry.
	FailureTimestamp int64  `json:"failure_timestamp"`
	FailureMessage   string `json:"failure_message"`
}

// Restorable reports whether a completed checkpoint or savepoint can be restored from: it
// has an external path that Flink persisted and has not discarded.
func (c *Checkpoint) Restorable() bool {
	return c != nil && c.ExternalPath != "" && c.ExternalPath != NotExternallyAddressable && !c.Discarded
}

// LatestSavepoint returns the latest completed savepoint if it can be restored from, else nil.
func (c *Checkpoints) LatestSavepoint() *Checkpoint {
	if c == nil || !c.Latest.Savepoint.Restorable() {
		return nil
	}
	return c.Latest.Savepoint
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

// IsTerminalApplicationState reports whether an application state is terminal.
func IsTerminalApplicationState(state string) bool {
	switch state {
	case ApplicationStateFinished, ApplicationStateFailed, ApplicationStateCanceled:
		return true
	}
	return false
}

// IsTerminalJobState reports whether a Flink job state is globally terminal.
func IsTerminalJobState(state string) bool {
	switch state {
	case JobStateFinished, JobStateFailed, JobStateCanceled:
		return true
	}
	return false
}

// UnmarshalJSON decodes both application shapes: "jobs" as a map from state to count
// (ApplicationDetails, /applications/overview) or as a list of jobs (ApplicationDetailsInfo,
// /applications/:id).
func (a *Application) UnmarshalJSON(data []byte) error {
	type plain Application
	var raw struct {
		plain
		Jobs json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*a = Application(raw.plain)
	jobs := bytes.TrimSpace(raw.Jobs)
	switch {
	case len(jobs) == 0 || bytes.Equal(jobs, []byte("null")):
	case jobs[0] == '{':
		if err := json.Unmarshal(jobs, &a.JobCounts); err != nil {
			return fmt.Errorf("application %s: jobs: %w", a.ID, err)
		}
	case jobs[0] == '[':
		if err := json.Unmarshal(jobs, &a.Jobs); err != nil {
			return fmt.Errorf("application %s: jobs: %w", a.ID, err)
		}
		a.JobCounts = map[string]int{}
		for _, j := range a.Jobs {
			a.JobCounts[j.State]++
		}
	default:
		return fmt.Errorf("application %s: jobs is neither a map nor a list", a.ID)
	}
	return nil
}

// MarshalJSON writes the overview shape (ApplicationDetails): "jobs" maps a state to a count.
func (a Application) MarshalJSON() ([]byte, error) {
	type plain Application
	counts := a.JobCounts
	if counts == nil {
		counts = map[string]int{}
	}
	return json.Marshal(struct {
		plain
		Jobs map[string]int `json:"jobs"`
	}{plain(a), counts})
}
