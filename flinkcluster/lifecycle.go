package flinkcluster

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

// Stopped reports whether the job has ended, whichever way (Lost counts).
func Stopped(j *v1beta1.JobStatus) bool {
	return j != nil && (j.State == v1beta1.JobStateSucceeded ||
		j.State == v1beta1.JobStateCancelled ||
		Failed(j))
}

// Terminal reports whether a state ends the job for good (not Lost: it may be reported again).
func Terminal(state string) bool {
	switch state {
	case v1beta1.JobStateSucceeded, v1beta1.JobStateFailed, v1beta1.JobStateCancelled, v1beta1.JobStateDeployFailed:
		return true
	}
	return false
}

// Ran reports whether the current deploy's job ever ran; one that never ran holds no state
// newer than the savepoint it started from.
func Ran(j *v1beta1.JobStatus) bool {
	return j != nil && j.StartTime != ""
}

// SavepointFresh reports whether the job's last savepoint may be restored at at without a final
// savepoint: a final one always may; another only within spec.job.maxStateAgeToRestoreSeconds,
// since without it the user never accepted losing what was acknowledged since the savepoint.
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

func endTime(j *v1beta1.JobStatus, at time.Time) time.Time {
	if j != nil && j.CompletionTime != nil {
		return j.CompletionTime.Time
	}
	return at
}

// ShouldRestart reports whether a failed job is restarted from its latest savepoint: policy
// FromSavepointOnFailure, failed after it ran (one that never ran would fail again), a fresh
// savepoint. Never with a JobManager Deployment, where Flink HA recovers newer state.
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

// TakesSavepointOnUpdate reports spec.job.takeSavepointOnUpdate, true when unset.
func TakesSavepointOnUpdate(spec *v1beta1.JobSpec) bool {
	return spec == nil || spec.TakeSavepointOnUpdate == nil || *spec.TakeSavepointOnUpdate
}

// UpdateReady reports whether the job can be updated now without a savepoint first: the update
// restores a newly named fromSavepoint, or the job's state is safe.
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
