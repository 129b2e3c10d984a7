package flinkcluster

// The savepoint rules the webhook and the controller share: when a savepoint that leaves the
// job running is due (spec.job.savepointGeneration, spec.job.autoSavepointSeconds), what an
// update restores from spec.job.fromSavepoint, and which savepoints of the history may be
// disposed of (spec.job.savepointsToKeep).

import (
	"strings"
	"time"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// Trigger reasons of the savepoints NextSavepoint asks for (status.savepoint.triggerReason).
const (
	// SavepointReasonGeneration: spec.job.savepointGeneration went above the status's.
	SavepointReasonGeneration = "savepoint-generation"
	// SavepointReasonScheduled: spec.job.autoSavepointSeconds passed since the job started
	// or since its last savepoint.
	SavepointReasonScheduled = "scheduled"
)

// SavepointRetryInterval is how long after a failed requested or scheduled savepoint the
// next attempt waits: the flink-on-k8s-operator's SavepointRetryIntervalSeconds, so that a
// job whose savepoints fail is not asked for one on every poll.
const SavepointRetryInterval = 10 * time.Second

// MaxSavepointHistory is how many savepoints status.savepointHistory keeps (and so the
// largest spec.job.savepointsToKeep): enough to go back a few savepoints by hand, small
// enough that the status stays far below the object size limit.
const MaxSavepointHistory = 10

// SavepointSchedule is what NextSavepoint decides from.
type SavepointSchedule struct {
	// Spec is spec.job; Job is status.components.job.
	Spec *v1beta1.JobSpec
	Job  *v1beta1.JobStatus
	// FailedReason and FailedAt are the trigger reason and the end of the last savepoint
	// when it failed (or its outcome is unknown); empty and zero otherwise.
	FailedReason string
	FailedAt     time.Time
}

// NextSavepoint decides, with the flink-on-k8s-operator's semantics, whether a savepoint
// that leaves the running job running is due at now, and why: first on request
// (spec.job.savepointGeneration above status.components.job.savepointGeneration), then on
// schedule (spec.job.autoSavepointSeconds, counted from the later of the job's start and its
// last savepoint; zero or less schedules none). A failed attempt of the same reason is
// retried SavepointRetryInterval after it failed. When none is due, next is when one will be
// (zero: none is scheduled). The caller checks that the job runs and no other savepoint is in
// flight.
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

// NextSavepointGeneration is the only value spec.job.savepointGeneration may be raised to:
// status.components.job.savepointGeneration + 1 (the flink-on-k8s-operator's rule, which the
// webhook applies). The controller takes a savepoint while the spec's is above the status's
// (NextSavepoint) and sets the status's to the spec's once taken, so one raise is one
// savepoint, and a raise that skips a generation is never needed.
func NextSavepointGeneration(j *v1beta1.JobStatus) int32 {
	if j == nil {
		return 1
	}
	return j.SavepointGeneration + 1
}

// UpdateRestore is the savepoint an update restores because spec.job.fromSavepoint names it,
// as the flink-on-k8s-operator restores it (an update with fromSavepoint set takes no
// savepoint and deploys from it) — with one difference: only a fromSavepoint that the
// update changes counts, that is one other than the revision the job runs recorded
// (status.components.job.specFromSavepoint), spelt otherwise or not (SameSavepoint: a
// trailing slash added is no new savepoint). A fromSavepoint left as it was, from the first
// deploy or a move from the operator, would otherwise rewind the job to that old savepoint on
// every later update. A status without the record (written before it existed) compares
// with the savepoint the deploy started from. The webhook's update rule
// (UpdateReady) and the controller's update both decide by this function.
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

// Disposable returns the indexes of the history records that spec.job.savepointsToKeep asks
// to dispose of: every savepoint but the newest keep ones, and never one in protected (the
// latest savepoint, the one the running deploy started from, spec.job.fromSavepoint: a
// savepoint a deploy may still restore), however either spells it (SameSavepoint). A record
// whose disposal is already in progress or failed is not returned again. Without
// savepointsToKeep nothing is disposed of.
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
