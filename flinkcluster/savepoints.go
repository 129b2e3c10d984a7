package flinkcluster

import (
	"strings"
	"time"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// Trigger reasons of the savepoints NextSavepoint asks for (status.savepoint.triggerReason).
const (
	// SavepointReasonGeneration: spec.job.savepointGeneration went above the status's.
	SavepointReasonGeneration = "savepoint-generation"
	// SavepointReasonScheduled: spec.job.autoSavepointSeconds passed.
	SavepointReasonScheduled = "scheduled"
	// SavepointReasonUpdate: an update's stop-with-savepoint.
	SavepointReasonUpdate = "update"
)

// SavepointRetryInterval is how long a failed requested or scheduled savepoint waits for its
// retry, so that a job whose savepoints fail is not asked on every poll.
const SavepointRetryInterval = 10 * time.Second

// MaxSavepointHistory bounds status.savepointHistory (and spec.job.savepointsToKeep), keeping
// the status far below the object size limit.
const MaxSavepointHistory = 10

// SavepointSchedule is what NextSavepoint decides from.
type SavepointSchedule struct {
	// Spec is spec.job; Job is status.components.job.
	Spec *v1beta1.JobSpec
	Job  *v1beta1.JobStatus
	// FailedReason and FailedAt describe the last savepoint if it failed or its outcome is unknown.
	FailedReason string
	FailedAt     time.Time
}

// NextSavepoint decides whether a savepoint that leaves the job running is due at now, and why:
// on request first, then on schedule; a failed attempt is retried after SavepointRetryInterval.
// Otherwise next is when one will be (zero: none). The caller checks that none is in flight.
func NextSavepoint(s SavepointSchedule, now time.Time) (reason string, next time.Time) {
	spec, job := s.Spec, s.Job
	if spec == nil || job == nil {
		return "", time.Time{}
	}
	retry := func(r string) (bool, time.Time) {
		if s.FailedReason != r || s.FailedAt.IsZero() {
			return true, time.Time{}
		}
		at := s.FailedAt.Add(SavepointRetryInterval)
		return !now.Before(at), at
	}
	if spec.SavepointGeneration > job.SavepointGeneration {
		if ok, at := retry(SavepointReasonGeneration); !ok {
			return "", at
		}
		return SavepointReasonGeneration, time.Time{}
	}
	if spec.AutoSavepointSeconds == nil || *spec.AutoSavepointSeconds <= 0 {
		return "", time.Time{}
	}
	if s.FailedReason == SavepointReasonScheduled {
		if ok, at := retry(SavepointReasonScheduled); !ok {
			return "", at
		}
		return SavepointReasonScheduled, time.Time{}
	}
	base := later(parseTime(job.StartTime), parseTime(job.SavepointTime))
	if base.IsZero() {
		return "", time.Time{}
	}
	due := base.Add(time.Duration(*spec.AutoSavepointSeconds) * time.Second)
	if now.Before(due) {
		return "", due
	}
	return SavepointReasonScheduled, time.Time{}
}

// NextSavepointGeneration is the only value spec.job.savepointGeneration may be raised to, so
// that one raise is one savepoint.
func NextSavepointGeneration(j *v1beta1.JobStatus) int32 {
	if j == nil {
		return 1
	}
	return j.SavepointGeneration + 1
}

// UpdateRestore is the savepoint an update restores because spec.job.fromSavepoint names it
// anew (not SameSavepoint as the recorded specFromSavepoint, else fromSavepoint): an unchanged
// one would rewind the job to that old savepoint on every update.
func UpdateRestore(j *v1beta1.JobStatus, spec *v1beta1.JobSpec) (string, bool) {
	if spec == nil || blank(spec.FromSavepoint) {
		return "", false
	}
	from := strings.TrimSpace(*spec.FromSavepoint)
	if j == nil {
		return from, true
	}
	recorded := j.SpecFromSavepoint
	if recorded == "" {
		recorded = j.FromSavepoint
	}
	if SameSavepoint(from, recorded) {
		return "", false
	}
	return from, true
}

// Disposable returns the indexes of the history records spec.job.savepointsToKeep disposes of:
// all but the newest keep, never a protected one (a deploy may restore it) or one already handled.
func Disposable(history []v1beta1.SavepointRecord, spec *v1beta1.JobSpec, protected ...string) []int {
	if spec == nil || spec.SavepointsToKeep == nil || *spec.SavepointsToKeep < 1 {
		return nil
	}
	keep := int(*spec.SavepointsToKeep)
	var out []int
	for i := 0; i < len(history)-keep; i++ {
		r := history[i]
		if r.Disposal != "" || r.Location == "" || isProtected(r.Location, protected) {
			continue
		}
		out = append(out, i)
	}
	return out
}

func isProtected(loc string, protected []string) bool {
	for _, p := range protected {
		if strings.TrimSpace(p) != "" && SameSavepoint(p, loc) {
			return true
		}
	}
	return false
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
