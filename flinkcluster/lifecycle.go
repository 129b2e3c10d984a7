package flinkcluster

// The job-lifecycle predicates that the admission policy (the user-control and job-update
// rules) and the controller both decide by: which states are active, failed or stopped,
// whether a savepoint is recent enough to restore, whether a failed job is restarted, and
// whether an update may go ahead without a final savepoint. Defining them once keeps the
// webhook judging against the controller that ships.
//
// Every function accepts a nil status (no job yet) and never panics on a malformed time: a
// time that does not parse counts as "no recent savepoint".

import (
	"strings"
	"time"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// Active reports whether the job is running or being deployed.
func Active(j *v1beta1.JobStatus) bool {
	return j != nil && (j.State == v1beta1.JobStateRunning || j.State == v1beta1.JobStateDeploying)
}

// Failed reports whether the job failed, was lost, or failed to deploy.
func Failed(j *v1beta1.JobStatus) bool {
	return j != nil && (j.State == v1beta1.JobStateFailed ||
		j.State == v1beta1.JobStateLost ||
		j.State == v1beta1.JobStateDeployFailed)
}

// Stopped reports whether the job has ended, whichever way (Lost counts: it may be reported
// again, but it is not running under the controller's eyes).
func Stopped(j *v1beta1.JobStatus) bool {
	return j != nil && (j.State == v1beta1.JobStateSucceeded ||
		j.State == v1beta1.JobStateCancelled ||
		Failed(j))
}

// Terminal reports whether a job state ends the job for good (only a new revision deploys
// again). Lost is not terminal: the job may be reported again until the Lost timeout.
func Terminal(state string) bool {
	switch state {
	case v1beta1.JobStateSucceeded, v1beta1.JobStateFailed, v1beta1.JobStateCancelled, v1beta1.JobStateDeployFailed:
		return true
	}
	return false
}

// Ran reports whether the job of the current deploy ever ran: the controller records its
// start time when Flink first reports it RUNNING. A deploy that never ran holds no state
// newer than the savepoint it started from.
func Ran(j *v1beta1.JobStatus) bool {
	return j != nil && j.StartTime != ""
}

// SavepointFresh reports whether the job's last savepoint may be restored at time at without
// a final savepoint: a final savepoint (taken when the job stopped) always may; any other
// only when spec.job.maxStateAgeToRestoreSeconds is set and the savepoint is no older than
// that at at. (A final savepoint's location is the caller's to check: the rules judge the
// flag alone.) Without the limit the user never accepted losing the state acknowledged since
// a savepoint, so no savepoint but a final one is fresh.
func SavepointFresh(j *v1beta1.JobStatus, spec *v1beta1.JobSpec, at time.Time) bool {
	if j == nil {
		return false
	}
	if j.FinalSavepoint {
		return true
	}
	if j.SavepointLocation == "" || spec == nil || at.IsZero() || spec.MaxStateAgeToRestoreSeconds == nil || j.SavepointTime == "" {
		return false
	}
	taken, err := time.Parse(time.RFC3339, j.SavepointTime)
	if err != nil {
		return false
	}
	maxAge := time.Duration(*spec.MaxStateAgeToRestoreSeconds) * time.Second
	return !at.After(taken.Add(maxAge))
}

// endTime is when the job ended: its completion time, else at.
func endTime(j *v1beta1.JobStatus, at time.Time) time.Time {
	if j != nil && j.CompletionTime != nil {
		return j.CompletionTime.Time
	}
	return at
}

// ShouldRestart reports whether a failed job is restarted from its latest savepoint:
// restartPolicy FromSavepointOnFailure, a job that failed after it ran (Failed or Lost; a
// deploy that never ran would fail the same way again), and a savepoint fresh at the job's
// end. The deployment type is the caller's: with a JobManager Deployment a failed job is never
// restored from a savepoint (Kubernetes recreates the pod and Flink HA recovers the state; a
// savepoint would throw away what was acknowledged since it was taken).
func ShouldRestart(deploymentType v1beta1.JobManagerDeploymentType, j *v1beta1.JobStatus, spec *v1beta1.JobSpec) bool {
	if deploymentType == v1beta1.JobManagerDeploymentTypeDeployment || spec == nil || j == nil {
		return false
	}
	if spec.RestartPolicy == nil || *spec.RestartPolicy != v1beta1.JobRestartPolicyFromSavepointOnFailure {
		return false
	}
	if j.State != v1beta1.JobStateFailed && j.State != v1beta1.JobStateLost {
		return false
	}
	return SavepointFresh(j, spec, endTime(j, time.Time{}))
}

// TakesSavepointOnUpdate reports whether an update stops the running job with a final
// savepoint (spec.job.takeSavepointOnUpdate, true when unset).
func TakesSavepointOnUpdate(spec *v1beta1.JobSpec) bool {
	return spec == nil || spec.TakeSavepointOnUpdate == nil || *spec.TakeSavepointOnUpdate
}

// UpdateReady reports whether the job can be updated now without taking a savepoint first:
// the update restores a savepoint spec.job.fromSavepoint names anew (UpdateRestore, as the
// controller decides it), or the job's state is safe (a final savepoint, or a savepoint
// fresh compared with now for an active job, or with the job's end for one that stopped).
func UpdateReady(j *v1beta1.JobStatus, spec *v1beta1.JobSpec, now time.Time) bool {
	if _, ok := UpdateRestore(j, spec); ok {
		return true
	}
	switch {
	case j == nil:
		return true
	case Active(j):
		if TakesSavepointOnUpdate(spec) {
			return j.FinalSavepoint
		}
		return SavepointFresh(j, spec, now)
	case j.State == v1beta1.JobStateUpdating && !TakesSavepointOnUpdate(spec):
		return true
	default:
		return SavepointFresh(j, spec, endTime(j, time.Time{}))
	}
}

func blank(s *string) bool { return s == nil || strings.TrimSpace(*s) == "" }
