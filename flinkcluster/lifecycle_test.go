package flinkcluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func spec(maxAge *int32) *v1beta1.JobSpec {
	p := v1beta1.JobRestartPolicyFromSavepointOnFailure
	return &v1beta1.JobSpec{RestartPolicy: &p, MaxStateAgeToRestoreSeconds: maxAge}
}

func failedAt(end time.Time) *v1beta1.JobStatus {
	return &v1beta1.JobStatus{State: v1beta1.JobStateFailed, SavepointLocation: "s3://sp/1", SavepointTime: t0.Format(time.RFC3339),
		CompletionTime: &metav1.Time{Time: end}}
}

func TestShouldRestart(t *testing.T) {
	job, dep := v1beta1.JobManagerDeploymentTypeJob, v1beta1.JobManagerDeploymentTypeDeployment
	s := spec(ptr.To[int32](600))
	assert.True(t, flinkcluster.ShouldRestart(job, failedAt(t0.Add(5*time.Minute)), s), "Job: savepoint fresh at the job's end")
	assert.False(t, flinkcluster.ShouldRestart(job, failedAt(t0.Add(11*time.Minute)), s), "Job: savepoint older than maxStateAgeToRestoreSeconds at the end")
	assert.False(t, flinkcluster.ShouldRestart(dep, failedAt(t0.Add(time.Minute)), s), "Deployment: never restored from a savepoint")
	assert.False(t, flinkcluster.ShouldRestart(job, failedAt(t0), &v1beta1.JobSpec{}), "restartPolicy unset")
	noSavepoint := &v1beta1.JobStatus{State: v1beta1.JobStateFailed}
	assert.False(t, flinkcluster.ShouldRestart(job, noSavepoint, s), "nothing to restore")
	deployFailed := failedAt(t0)
	deployFailed.State = v1beta1.JobStateDeployFailed
	assert.False(t, flinkcluster.ShouldRestart(job, deployFailed, s), "a deploy that never ran fails the same way again")
	cancelled := failedAt(t0)
	cancelled.State = v1beta1.JobStateCancelled
	assert.False(t, flinkcluster.ShouldRestart(job, cancelled, s))
}

// TestSavepointFresh: one rule for the controller and the webhook, so that with
// maxStateAgeToRestoreSeconds unset the controller restores no savepoint the webhook judges stale.
func TestSavepointFresh(t *testing.T) {
	j := &v1beta1.JobStatus{SavepointLocation: "s3://sp/1", SavepointTime: t0.Format(time.RFC3339)}
	assert.False(t, flinkcluster.SavepointFresh(j, &v1beta1.JobSpec{}, t0), "no limit: only a final savepoint is fresh")
	assert.True(t, flinkcluster.SavepointFresh(j, spec(ptr.To[int32](60)), t0.Add(time.Minute)))
	assert.False(t, flinkcluster.SavepointFresh(j, spec(ptr.To[int32](60)), t0.Add(time.Minute+time.Second)))
	final := *j
	final.FinalSavepoint = true
	assert.True(t, flinkcluster.SavepointFresh(&final, &v1beta1.JobSpec{}, t0.Add(time.Hour)), "a final savepoint is always fresh")
	bad := *j
	bad.SavepointTime = "yesterday"
	assert.False(t, flinkcluster.SavepointFresh(&bad, spec(ptr.To[int32](60)), t0), "a malformed time is not recent")
	assert.False(t, flinkcluster.SavepointFresh(nil, nil, t0))
}

func TestUpdateReady(t *testing.T) {
	running := &v1beta1.JobStatus{State: v1beta1.JobStateRunning, SavepointLocation: "s3://sp/1", SavepointTime: t0.Format(time.RFC3339)}
	assert.False(t, flinkcluster.UpdateReady(running, &v1beta1.JobSpec{}, t0), "a running job needs its final savepoint")
	skip := &v1beta1.JobSpec{TakeSavepointOnUpdate: ptr.To(false), MaxStateAgeToRestoreSeconds: ptr.To[int32](60)}
	assert.True(t, flinkcluster.UpdateReady(running, skip, t0.Add(30*time.Second)))
	assert.False(t, flinkcluster.UpdateReady(running, skip, t0.Add(2*time.Minute)))
	assert.True(t, flinkcluster.UpdateReady(running, &v1beta1.JobSpec{FromSavepoint: ptr.To("s3://explicit")}, t0), "an explicit savepoint")
	assert.True(t, flinkcluster.UpdateReady(nil, &v1beta1.JobSpec{}, t0), "no job yet")
	assert.True(t, flinkcluster.Ran(&v1beta1.JobStatus{StartTime: "2026-11-30T12:00:00Z"}))
	assert.False(t, flinkcluster.Ran(&v1beta1.JobStatus{State: v1beta1.JobStateDeployFailed}))
}
