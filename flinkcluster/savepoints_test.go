package flinkcluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

func ts(t time.Time) string { return t.Format(time.RFC3339) }

func TestNextSavepoint(t *testing.T) {
	hour := ptr.To[int32](3600)
	running := func(start, savepoint time.Time, gen int32) *v1beta1.JobStatus {
		j := &v1beta1.JobStatus{State: v1beta1.JobStateRunning, StartTime: ts(start), SavepointGeneration: gen}
		if !savepoint.IsZero() {
			j.SavepointLocation, j.SavepointTime = "s3://sp/1", ts(savepoint)
		}
		return j
	}
	tests := []struct {
		name       string
		in         flinkcluster.SavepointSchedule
		now        time.Time
		wantReason string
		wantNext   time.Time
	}{
		{name: "no schedule and no request: none, never", in: flinkcluster.SavepointSchedule{Spec: &v1beta1.JobSpec{}, Job: running(t0, time.Time{}, 0)}, now: t0.Add(time.Hour)},
		{name: "scheduled: not before the interval from the job's start", in: flinkcluster.SavepointSchedule{Spec: &v1beta1.JobSpec{AutoSavepointSeconds: hour}, Job: running(t0, time.Time{}, 0)},
			now: t0.Add(59 * time.Minute), wantNext: t0.Add(time.Hour)},
		{name: "scheduled: due one interval after the job's start", in: flinkcluster.SavepointSchedule{Spec: &v1beta1.JobSpec{AutoSavepointSeconds: hour}, Job: running(t0, time.Time{}, 0)},
			now: t0.Add(time.Hour), wantReason: flinkcluster.SavepointReasonScheduled},
		{name: "scheduled: counted from the last savepoint", in: flinkcluster.SavepointSchedule{Spec: &v1beta1.JobSpec{AutoSavepointSeconds: hour}, Job: running(t0, t0.Add(30*time.Minute), 0)},
			now: t0.Add(time.Hour), wantNext: t0.Add(90 * time.Minute)},
		{name: "scheduled: a savepoint older than the job's start counts from the start", in: flinkcluster.SavepointSchedule{Spec: &v1beta1.JobSpec{AutoSavepointSeconds: hour}, Job: running(t0, t0.Add(-5*time.Hour), 0)},
			now: t0.Add(time.Minute), wantNext: t0.Add(time.Hour)},
		{name: "scheduled: zero seconds schedules none", in: flinkcluster.SavepointSchedule{Spec: &v1beta1.JobSpec{AutoSavepointSeconds: ptr.To[int32](0)}, Job: running(t0, time.Time{}, 0)},
			now: t0.Add(time.Hour)},
		{name: "scheduled: a job that never started has nothing to count from", in: flinkcluster.SavepointSchedule{Spec: &v1beta1.JobSpec{AutoSavepointSeconds: hour}, Job: &v1beta1.JobStatus{State: v1beta1.JobStateDeploying}},
			now: t0.Add(time.Hour)},
		{name: "scheduled: a failed one is retried 10s after it failed, not before", in: flinkcluster.SavepointSchedule{Spec: &v1beta1.JobSpec{AutoSavepointSeconds: hour}, Job: running(t0, time.Time{}, 0),
			FailedReason: flinkcluster.SavepointReasonScheduled, FailedAt: t0.Add(time.Hour)}, now: t0.Add(time.Hour + 5*time.Second), wantNext: t0.Add(time.Hour + 10*time.Second)},
		{name: "scheduled: a failed one is retried once 10s passed", in: flinkcluster.SavepointSchedule{Spec: &v1beta1.JobSpec{AutoSavepointSeconds: hour}, Job: running(t0, time.Time{}, 0),
			FailedReason: flinkcluster.SavepointReasonScheduled, FailedAt: t0.Add(time.Hour)}, now: t0.Add(time.Hour + 10*time.Second), wantReason: flinkcluster.SavepointReasonScheduled},
		{name: "requested: savepointGeneration above the status's", in: flinkcluster.SavepointSchedule{Spec: &v1beta1.JobSpec{SavepointGeneration: 3}, Job: running(t0, time.Time{}, 2)},
			now: t0, wantReason: flinkcluster.SavepointReasonGeneration},
		{name: "requested: savepointGeneration equal to the status's asks nothing", in: flinkcluster.SavepointSchedule{Spec: &v1beta1.JobSpec{SavepointGeneration: 2}, Job: running(t0, time.Time{}, 2)},
			now: t0.Add(time.Hour)},
		{name: "requested: comes before a scheduled one", in: flinkcluster.SavepointSchedule{Spec: &v1beta1.JobSpec{SavepointGeneration: 1, AutoSavepointSeconds: hour}, Job: running(t0, time.Time{}, 0)},
			now: t0.Add(2 * time.Hour), wantReason: flinkcluster.SavepointReasonGeneration},
		{name: "requested: a failed one waits for the retry interval", in: flinkcluster.SavepointSchedule{Spec: &v1beta1.JobSpec{SavepointGeneration: 1}, Job: running(t0, time.Time{}, 0),
			FailedReason: flinkcluster.SavepointReasonGeneration, FailedAt: t0}, now: t0.Add(time.Second), wantNext: t0.Add(10 * time.Second)},
		{name: "requested: a failed scheduled one does not delay a request", in: flinkcluster.SavepointSchedule{Spec: &v1beta1.JobSpec{SavepointGeneration: 1, AutoSavepointSeconds: hour}, Job: running(t0, time.Time{}, 0),
			FailedReason: flinkcluster.SavepointReasonScheduled, FailedAt: t0}, now: t0.Add(time.Second), wantReason: flinkcluster.SavepointReasonGeneration},
		{name: "no spec: none", in: flinkcluster.SavepointSchedule{Job: running(t0, time.Time{}, 0)}, now: t0.Add(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, next := flinkcluster.NextSavepoint(tt.in, tt.now)
			assert.Equal(t, tt.wantReason, reason)
			assert.True(t, tt.wantNext.Equal(next), "next: got %v, want %v", next, tt.wantNext)
		})
	}
}

func TestUpdateRestore(t *testing.T) {
	tests := []struct {
		name   string
		job    *v1beta1.JobStatus
		spec   *v1beta1.JobSpec
		want   string
		wantOK bool
	}{
		{name: "unset: nothing to restore", job: &v1beta1.JobStatus{}, spec: &v1beta1.JobSpec{}},
		{name: "blank: nothing to restore", job: &v1beta1.JobStatus{}, spec: &v1beta1.JobSpec{FromSavepoint: ptr.To("  ")}},
		{name: "a savepoint the running revision did not name: restored", job: &v1beta1.JobStatus{SpecFromSavepoint: "s3://sp/old"},
			spec: &v1beta1.JobSpec{FromSavepoint: ptr.To("s3://sp/new")}, want: "s3://sp/new", wantOK: true},
		{name: "set anew where the running revision had none: restored", job: &v1beta1.JobStatus{FromSavepoint: "s3://sp/final-1"},
			spec: &v1beta1.JobSpec{FromSavepoint: ptr.To("s3://sp/new")}, want: "s3://sp/new", wantOK: true},
		{name: "left as the running revision has it: not restored again", job: &v1beta1.JobStatus{SpecFromSavepoint: "s3://sp/first", FromSavepoint: "s3://sp/final-1"},
			spec: &v1beta1.JobSpec{FromSavepoint: ptr.To("s3://sp/first")}},
		{name: "a status without the record compares with what the deploy started from", job: &v1beta1.JobStatus{FromSavepoint: "s3://sp/first"},
			spec: &v1beta1.JobSpec{FromSavepoint: ptr.To("s3://sp/first")}},
		{name: "no job yet: restored", spec: &v1beta1.JobSpec{FromSavepoint: ptr.To("s3://sp/x")}, want: "s3://sp/x", wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := flinkcluster.UpdateRestore(tt.job, tt.spec)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantOK, ok)
			// The webhook's rule agrees: an update it may admit without a savepoint is one
			// the controller restores.
			stale := &v1beta1.JobStatus{State: v1beta1.JobStateCancelled}
			if tt.job != nil {
				c := *tt.job
				c.State = v1beta1.JobStateCancelled
				stale = &c
			}
			assert.Equal(t, tt.wantOK, flinkcluster.UpdateReady(stale, tt.spec, t0), "UpdateReady of a stopped job without a fresh savepoint")
		})
	}
}

func TestDisposable(t *testing.T) {
	history := func(n int) []v1beta1.SavepointRecord {
		var h []v1beta1.SavepointRecord
		for i := range n {
			h = append(h, v1beta1.SavepointRecord{Location: "s3://sp/" + string(rune('a'+i)), Time: ts(t0.Add(time.Duration(i) * time.Hour))})
		}
		return h
	}
	keep := func(n int32) *v1beta1.JobSpec { return &v1beta1.JobSpec{SavepointsToKeep: &n} }
	inProgress := history(4)
	inProgress[0].Disposal = v1beta1.SavepointDisposalInProgress
	failed := history(4)
	failed[1].Disposal = v1beta1.SavepointDisposalFailed
	tests := []struct {
		name      string
		history   []v1beta1.SavepointRecord
		spec      *v1beta1.JobSpec
		protected []string
		want      []int
	}{
		{name: "savepointsToKeep unset: none", history: history(5), spec: &v1beta1.JobSpec{}},
		{name: "keep 2 of 5: the three oldest", history: history(5), spec: keep(2), want: []int{0, 1, 2}},
		{name: "keep 5 of 5: none", history: history(5), spec: keep(5)},
		{name: "a protected savepoint is kept", history: history(4), spec: keep(1), protected: []string{"s3://sp/b"}, want: []int{0, 2}},
		{name: "a disposal in progress is not asked again", history: inProgress, spec: keep(1), want: []int{1, 2}},
		{name: "a failed disposal is not asked again", history: failed, spec: keep(1), want: []int{0, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, flinkcluster.Disposable(tt.history, tt.spec, tt.protected...))
		})
	}
}

func TestNextSavepointGeneration(t *testing.T) {
	assert.Equal(t, int32(1), flinkcluster.NextSavepointGeneration(nil), "no job yet")
	assert.Equal(t, int32(1), flinkcluster.NextSavepointGeneration(&v1beta1.JobStatus{}), "no savepoint yet")
	assert.Equal(t, int32(4), flinkcluster.NextSavepointGeneration(&v1beta1.JobStatus{SavepointGeneration: 3}))
}
