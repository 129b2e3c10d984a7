package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// Flink never adds a savepoint to the job's CompletedCheckpointStore (CheckpointCoordinator
// completes a savepoint without addCompletedCheckpointToStoreAndSubsumeOldest), so a
// last-state redeploy restores the store's newest checkpoint even when a savepoint completed
// after it. A request that replaces the record of a savepoint whose outcome was never learnt
// (in progress, or unknown: its result lost with its JobManager, or expired) keeps its
// trigger time, and no last-state redeploy restores the store until a savepoint triggered
// later succeeds (seed 1796139225380835489).
func TestLastStateUnavailableWhileAReplacedSavepointMayHaveCompleted(t *testing.T) {
	const jobID = "e09f121b2c6eda2457a0ae393feab73a"
	t0 := time.Date(2026, 11, 30, 12, 13, 10, 0, time.UTC)
	replaced := func(state, triggerTime string) *v1beta1.SavepointStatus {
		return &v1beta1.SavepointStatus{JobID: jobID, TriggerID: "37ae38c2711f3e0a36bd16e07a4d9149", TriggerTime: triggerTime,
			TriggerReason: flinkcluster.SavepointReasonScheduled, State: state}
	}
	for _, tc := range []struct {
		name     string
		replaced *v1beta1.SavepointStatus
		// unknown is the unknownSavepointTime the replacement leaves.
		unknown string
	}{
		{name: "an in-progress scheduled savepoint may have completed: last-state unavailable",
			replaced: replaced(SavepointStateInProgress, "2026-11-30T12:13:10Z"), unknown: "2026-11-30T12:13:10Z"},
		{name: "a savepoint whose outcome is unknown may have completed: last-state unavailable",
			replaced: replaced(SavepointStateUnknown, "2026-11-30T12:13:10Z"), unknown: "2026-11-30T12:13:10Z"},
		{name: "a request written before Flink was called may have reached it: last-state unavailable",
			replaced: replaced(SavepointStateRequested, "2026-11-30T12:13:10Z"), unknown: "2026-11-30T12:13:10Z"},
		{name: "a request that never reached Flink took no savepoint: last-state available",
			replaced: replaced(SavepointStateRequested, "")},
		{name: "a failed savepoint took none: last-state available",
			replaced: replaced(SavepointStateFailed, "2026-11-30T12:13:10Z")},
		{name: "another job ID's savepoint is older than this job's checkpoints: last-state available",
			replaced: &v1beta1.SavepointStatus{JobID: "ffffffffffffffffffffffffffffffff", TriggerID: "t", TriggerTime: "2026-11-30T12:13:10Z", State: SavepointStateInProgress}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := lastStateCycle(jobID, t0.Add(27*time.Second))
			c.st.Savepoint = tc.replaced
			c.requestSavepoint(SavepointReasonUpdate)
			assert.Equal(t, tc.unknown, c.job().UnknownSavepointTime)
			c.st.Savepoint.State = SavepointStateFailed // the update's stop failed too
			ls := c.flowIn().lastState(c.st)
			assert.Equal(t, tc.unknown == "", ls.ok, ls.why)
			if tc.unknown != "" {
				assert.Contains(t, ls.why, "has an unknown outcome")
			}
		})
	}

	t.Run("a savepoint triggered later that succeeds holds newer state: the mark is cleared", func(t *testing.T) {
		c := lastStateCycle(jobID, t0.Add(27*time.Second))
		c.st.Savepoint = replaced(SavepointStateInProgress, "2026-11-30T12:13:10Z")
		c.requestSavepoint(SavepointReasonUpdate)
		c.st.Savepoint.TriggerTime = "2026-11-30T12:13:37Z"
		c.savepointSucceeded("file:///savepoints/savepoint-e09f12-0cafb8577268", true, "")
		assert.Empty(t, c.job().UnknownSavepointTime)
	})
	t.Run("a record dropped (an update reverted) keeps the mark too", func(t *testing.T) {
		c := lastStateCycle(jobID, t0.Add(27*time.Second))
		c.st.Savepoint = replaced(SavepointStateInProgress, "2026-11-30T12:13:10Z")
		replaceSavepointRecord(c.st, nil)
		assert.Equal(t, "2026-11-30T12:13:10Z", c.job().UnknownSavepointTime)
		assert.False(t, c.flowIn().lastState(c.st).ok)
	})
	t.Run("a savepoint triggered before the unknown one does not clear the mark", func(t *testing.T) {
		c := lastStateCycle(jobID, t0.Add(27*time.Second))
		c.job().UnknownSavepointTime = "2026-11-30T12:13:10Z"
		c.st.Savepoint = replaced(SavepointStateInProgress, "2026-11-30T12:10:00Z")
		c.savepointSucceeded("file:///savepoints/savepoint-e09f12-older", false, savepointRecovered)
		assert.Equal(t, "2026-11-30T12:13:10Z", c.job().UnknownSavepointTime)
	})
}

// lastStateCycle is a reconcile of a last-state Deployment cluster whose job's HA store holds
// checkpoint 1.
func lastStateCycle(jobID string, now time.Time) *cycle {
	fc := builder.MakeAppCluster("wc").Deployment().
		FlinkProperty("high-availability.type", "kubernetes").Obj()
	fc.Spec.Job.UpgradeMode = ptrTo(v1beta1.UpgradeModeLastState)
	fc.Status.Components.Job = &v1beta1.JobStatus{ID: jobID, State: v1beta1.JobStateUpdating}
	n := 0
	r := &Reconciler{Recorder: events.NewFakeRecorder(10), Options: Options{NewID: func() string { n++; return "0cafb8577268ce2e31a1e9a74b64e8d" + string(rune('0'+n)) }}}
	c := &cycle{r: r, fc: fc, read: *fc.Status.DeepCopy(), st: &fc.Status, now: now, mode: v1beta1.JobManagerDeploymentTypeDeployment}
	c.obs.ha.configMaps = []corev1.ConfigMap{{
		ObjectMeta: metav1.ObjectMeta{Name: flinkha.JobConfigMapName("wc", jobID)},
		Data:       map[string]string{flinkha.CheckpointKey(1): "handle"},
	}}
	return c
}

func ptrTo[T any](v T) *T { return &v }

// The last-state fallback of a job that cannot take a savepoint waits while a JobManager may
// still run the job and none answers as the leader; once the leader answers and does not
// list the job, nothing runs it (only the leader runs jobs) and the fallback redeploys from
// the checkpoint store (seed 1796181100155158405: the update waited an hour on the answering
// leader's own pod).
func TestLastStateFallbackWaitsOnlyWhileNoLeaderAnswers(t *testing.T) {
	const jobID = "2c91d7ecbabfceee31cb6f34c54ce6c3"
	t0 := time.Date(2026, 11, 30, 12, 30, 23, 0, time.UTC)
	for _, tc := range []struct {
		name string
		// flink is what the JobManager answered as the leader; nil for no answer.
		flink         *state.Flink
		wantLastState bool
		wantWait      string
	}{
		{name: "no leader answers: the pod may still run the job, the fallback waits",
			wantWait: ConditionReasonWaitingForLeader},
		{name: "the leader answers and lists no job: the fallback redeploys last-state",
			flink: &state.Flink{}, wantLastState: true},
		{name: "the leader answers with the job failed: the fallback redeploys last-state",
			flink: &state.Flink{Job: &flinkclient.Job{ID: jobID, State: flinkclient.JobStateFailed}, JobCount: 1}, wantLastState: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := lastStateCycle(jobID, t0)
			c.fc.Spec.Job.UpgradeMode = ptrTo(v1beta1.UpgradeModeSavepoint)
			c.st.Savepoint = &v1beta1.SavepointStatus{JobID: jobID, TriggerID: "696bd7dca53700484b11d504dba9092d", TriggerTime: "2026-11-30T12:22:04Z",
				TriggerReason: SavepointReasonUpdate, State: SavepointStateFailed, Message: "the job is not running"}
			c.obs.pods = []corev1.Pod{*builder.SetRunning(builder.Pod("wc", "wc-jobmanager-1-3", "wc-d324db481c", t0.Add(-8*time.Minute)), t0.Add(-7*time.Minute))}
			c.obs.flink = tc.flink
			r := c.flowIn().planRestore(c.st, flinkcluster.Upgrade{How: flinkcluster.UpgradeSavepoint})
			assert.Empty(t, r.From)
			assert.Equal(t, tc.wantLastState, r.How == flinkcluster.RestoreLastState, r.Why)
			if tc.wantWait == "" {
				assert.NotEqual(t, flinkcluster.RestoreWait, r.How, r.Why)
				return
			}
			assert.Equal(t, flinkcluster.RestoreWait, r.How, r.Why)
			assert.Equal(t, tc.wantWait, restoreReasons[r.Reason])
		})
	}
}

// Every wait and question of flinkcluster.PlanRestore reaches the user under its own reason.
func TestEveryRestoreReasonHasAConditionReason(t *testing.T) {
	for _, r := range []flinkcluster.RestoreReason{flinkcluster.WaitForFlinkAPI, flinkcluster.WaitForLeader,
		flinkcluster.AskHAMetadataMissing, flinkcluster.AskNoFinalSavepoint} {
		assert.NotEmpty(t, restoreReasons[r], "restore reason %q", r)
	}
	assert.Len(t, restoreReasons, 4)
}
