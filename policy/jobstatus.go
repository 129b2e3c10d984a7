package policy

import (
	"strings"
	"time"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// The job-state predicates of the flink-on-k8s-operator, which the user-control and
// job-update rules are written in. They accept a nil status (no job yet) and never panic on
// a malformed time: a time that does not parse counts as "no recent savepoint".

// jobActive reports whether the job is running or being deployed.
func jobActive(j *v1beta1.JobStatus) bool {
	return j != nil && (j.State == v1beta1.JobStateRunning || j.State == v1beta1.JobStateDeploying)
}

// jobFailed reports whether the job failed, was lost, or failed to deploy.
func jobFailed(j *v1beta1.JobStatus) bool {
	return j != nil && (j.State == v1beta1.JobStateFailed ||
		j.State == v1beta1.JobStateLost ||
		j.State == v1beta1.JobStateDeployFailed)
}

// jobStopped reports whether the job has ended, whichever way.
func jobStopped(j *v1beta1.JobStatus) bool {
	return j != nil && (j.State == v1beta1.JobStateSucceeded ||
		j.State == v1beta1.JobStateCancelled ||
		jobFailed(j))
}

// jobTerminated reports whether the job has ended and the operator will not restart it.
func jobTerminated(j *v1beta1.JobStatus, spec *v1beta1.JobSpec) bool {
	return jobStopped(j) && !jobShouldRestart(j, spec)
}

// jobShouldRestart reports whether the operator restarts a failed job: restartPolicy is
// FromSavepointOnFailure and a savepoint recent enough at the job's end exists.
func jobShouldRestart(j *v1beta1.JobStatus, spec *v1beta1.JobSpec) bool {
	if !jobFailed(j) || spec == nil {
		return false
	}
	if spec.RestartPolicy == nil || *spec.RestartPolicy != v1beta1.JobRestartPolicyFromSavepointOnFailure {
		return false
	}
	var completed time.Time
	if j.CompletionTime != nil {
		completed = j.CompletionTime.Time
	}
	return savepointUpToDate(j, spec, completed)
}

// savepointUpToDate reports whether the job's last savepoint is at most
// maxStateAgeToRestoreSeconds older than at. A final savepoint (taken when the job stopped)
// is always up to date; without maxStateAgeToRestoreSeconds no other savepoint is.
func savepointUpToDate(j *v1beta1.JobStatus, spec *v1beta1.JobSpec, at time.Time) bool {
	if j.FinalSavepoint {
		return true
	}
	if at.IsZero() || spec.MaxStateAgeToRestoreSeconds == nil ||
		j.SavepointLocation == "" || j.SavepointTime == "" {
		return false
	}
	taken, err := time.Parse(time.RFC3339, j.SavepointTime)
	if err != nil {
		return false
	}
	maxAge := time.Duration(*spec.MaxStateAgeToRestoreSeconds) * time.Second
	return !at.After(taken.Add(maxAge))
}

// jobUpdateReady reports whether the job can be updated now without taking a savepoint
// first: the update starts from an explicit savepoint, or the job's state is safe (a final
// savepoint, or a savepoint recent enough compared with now or with the job's end).
func jobUpdateReady(j *v1beta1.JobStatus, spec *v1beta1.JobSpec, now time.Time) bool {
	takeSavepoint := spec.TakeSavepointOnUpdate == nil || *spec.TakeSavepointOnUpdate
	switch {
	case j == nil, !isBlank(spec.FromSavepoint):
		return true
	case jobActive(j):
		if takeSavepoint {
			return j.FinalSavepoint
		}
		return savepointUpToDate(j, spec, now)
	case j.State == v1beta1.JobStateUpdating && !takeSavepoint:
		return true
	default:
		var completed time.Time
		if j.CompletionTime != nil {
			completed = j.CompletionTime.Time
		}
		return savepointUpToDate(j, spec, completed)
	}
}

// isBlank reports whether s is nil or only white space.
func isBlank(s *string) bool {
	return s == nil || strings.TrimSpace(*s) == ""
}

// isEmpty reports whether s is nil or "".
func isEmpty(s *string) bool {
	return s == nil || *s == ""
}

// isTrue reports whether b is set and true.
func isTrue(b *bool) bool {
	return b != nil && *b
}
