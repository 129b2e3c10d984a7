// Package flinkclient is a small client of the Flink REST API: the calls the controller needs
// to follow an application-mode job and, on Flink 2.3+, its application. Field names follow
// Flink's REST message classes, named on each type.
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

// Application states (ApplicationState, Flink 2.3+): CANCELLING, then CANCELED, as for jobs.
const (
	ApplicationStateCreated    = "CREATED"
	ApplicationStateRunning    = "RUNNING"
	ApplicationStateFailing    = "FAILING"
	ApplicationStateFailed     = "FAILED"
	ApplicationStateCancelling = "CANCELLING"
	ApplicationStateCanceled   = "CANCELED"
	ApplicationStateFinished   = "FINISHED"
)

// ApplicationDriverJobName names the FAILED job Flink lists when main() throws
// (execution.submit-failed-job-on-application-error).
const ApplicationDriverJobName = "(application driver)"

// NotExternallyAddressable is the external_path of a checkpoint whose metadata is not
// persisted, which cannot be restored from.
const NotExternallyAddressable = "<checkpoint-not-externally-addressable>"

// Asynchronous operation states (savepoint and stop-with-savepoint status).
const (
	OperationInProgress = "IN_PROGRESS"
	OperationCompleted  = "COMPLETED"
)

// ErrNotFound is Flink's 404: an unknown job or trigger, or before 2.3 the application API.
var ErrNotFound = errors.New("not found")

// Client is what the controller asks the Flink REST API. Every call is bounded by ctx.
type Client interface {
	// ListJobs returns every job the JobManager knows, including finished ones.
	ListJobs(ctx context.Context) ([]Job, error)
	// GetJob returns one job.
	GetJob(ctx context.Context, jobID string) (*Job, error)
	// GetExceptions returns the job's recent failures, newest first.
	GetExceptions(ctx context.Context, jobID string) ([]Exception, error)
	// TriggerSavepoint starts a savepoint that leaves the job running; it returns the trigger ID.
	TriggerSavepoint(ctx context.Context, jobID string, req SavepointRequest) (string, error)
	// StopWithSavepoint starts a savepoint that stops the job and returns its trigger ID.
	StopWithSavepoint(ctx context.Context, jobID string, req SavepointRequest) (string, error)
	// SavepointStatus returns a trigger's state; after rest.async.store-duration, ErrNotFound.
	SavepointStatus(ctx context.Context, jobID, triggerID string) (*SavepointStatus, error)
	// GetCheckpoints returns the job's checkpoint statistics, which hold a lost savepoint result.
	GetCheckpoints(ctx context.Context, jobID string) (*Checkpoints, error)
	// CancelJob cancels a job without a savepoint (409 once the job ended).
	CancelJob(ctx context.Context, jobID string) error
	// ListApplications returns the applications (Flink 2.3+; ErrNotFound before).
	ListApplications(ctx context.Context) ([]Application, error)
	// GetApplication returns one application with its jobs (Flink 2.3+; 404 before).
	GetApplication(ctx context.Context, applicationID string) (*Application, error)
	// CancelApplication cancels an application and its jobs (409 once it ended).
	CancelApplication(ctx context.Context, applicationID string) error
	// GetApplicationExceptions returns an application's failures, newest first (sorted here).
	GetApplicationExceptions(ctx context.Context, applicationID string) ([]Exception, error)
	// DisposeSavepoint deletes a savepoint; Flink picks the trigger ID, so a retry disposes again.
	DisposeSavepoint(ctx context.Context, savepointPath string) (string, error)
	// DisposalStatus returns a disposal's state, known only to the Dispatcher that took it.
	DisposalStatus(ctx context.Context, triggerID string) (*OperationStatus, error)
	// ShutdownCluster (DELETE /cluster) cleans up the HA data and exits 0 whatever the jobs' ends.
	ShutdownCluster(ctx context.Context) error
}

// OperationStatus is the state of an operation without a result (a savepoint disposal).
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

// Job is a Flink job (JobDetails, JobDetailsInfo); times are epoch ms, EndTime -1 while running.
type Job struct {
	ID        string `json:"jid"`
	Name      string `json:"name"`
	State     string `json:"state"`
	StartTime int64  `json:"start-time"`
	EndTime   int64  `json:"end-time"`
	// ApplicationID is the owning application (Flink 2.3+, not in the job overview).
	ApplicationID string `json:"application-id,omitempty"`
}

// Application is a Flink 2.3+ application (its "jobs" a count by state, or a list of jobs).
type Application struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Status    string `json:"status"`
	StartTime int64  `json:"start-time"`
	EndTime   int64  `json:"end-time"`

	JobCounts map[string]int `json:"-"`
	// Jobs are listed by /applications/:id only.
	Jobs []Job `json:"-"`
}

// Exception is one entry of a job's or an application's exception history.
type Exception struct {
	Name       string `json:"exceptionName"`
	StackTrace string `json:"stacktrace"`
	// Timestamp is in epoch ms.
	Timestamp int64 `json:"timestamp"`

	TaskName string `json:"taskName,omitempty"`
	// JobID is the failing job in an application's history; empty for main()'s failure.
	JobID string `json:"jobId,omitempty"`
}

// SavepointRequest says where, in which format and under which trigger ID to take a savepoint.
type SavepointRequest struct {
	// TargetDirectory is the savepoint directory; empty uses Flink's state.savepoints.dir.
	TargetDirectory string
	// FormatType is CANONICAL or NATIVE; empty uses Flink's default.
	FormatType string
	// TriggerID (32 hex characters, recorded by the caller before the call) makes a retry after
	// a lost answer or status write ask about the same operation; empty lets Flink pick.
	TriggerID string
}

// Checkpoints is what the controller reads of CheckpointingStatistics.
type Checkpoints struct {
	Counts CheckpointCounts  `json:"counts"`
	Latest LatestCheckpoints `json:"latest"`
	// History lists the recent checkpoints, newest first.
	History []Checkpoint `json:"history"`
}

// CheckpointInProgress is the status of a checkpoint neither completed nor failed.
const CheckpointInProgress = "IN_PROGRESS"

// InProgress returns the checkpoint in progress (the newest; Flink takes one at a time), or nil.
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

	IsSavepoint bool `json:"is_savepoint"`
	// Type is CheckpointStatistics.RestAPICheckpointType: CHECKPOINT, UNALIGNED_CHECKPOINT,
	// SAVEPOINT, or SYNC_SAVEPOINT (a stop-with-savepoint's: SavepointType.isSynchronous).
	Type string `json:"checkpoint_type"`
	// Timestamps are epoch ms.
	TriggerTimestamp   int64 `json:"trigger_timestamp"`
	LatestAckTimestamp int64 `json:"latest_ack_timestamp"`

	ExternalPath string `json:"external_path"`
	// Discarded: Flink deleted the checkpoint's data.
	Discarded bool `json:"discarded"`
	// RestoreTimestamp is set on the restored entry.
	RestoreTimestamp int64 `json:"restore_timestamp"`
	// FailureTimestamp and FailureMessage are set on the failed entry.
	FailureTimestamp int64  `json:"failure_timestamp"`
	FailureMessage   string `json:"failure_message"`
}

// Restorable reports whether a checkpoint has a persisted, undiscarded external path.
func (c *Checkpoint) Restorable() bool {
	return c != nil && c.ExternalPath != "" && c.ExternalPath != NotExternallyAddressable && !c.Discarded
}

// CheckpointTypeSyncSavepoint is the Type of a stop-with-savepoint's savepoint.
const CheckpointTypeSyncSavepoint = "SYNC_SAVEPOINT"

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

// UnmarshalJSON decodes both application shapes.
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

// MarshalJSON writes the overview shape.
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
