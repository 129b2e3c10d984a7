package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/state"
)

// checkpointsOnly answers GetCheckpoints; any other call panics (the test makes none).
type checkpointsOnly struct {
	flinkclient.Client
	cps *flinkclient.Checkpoints
}

func (c checkpointsOnly) GetCheckpoints(context.Context, string) (*flinkclient.Checkpoints, error) {
	return c.cps, nil
}

// A trigger's result that Flink no longer knows is recovered from the checkpoint statistics
// only from a savepoint of the trigger's kind: a user's savepoint, superseded by a
// job-cancel's stop and completing just before the stop was recorded, is not the stop's
// result, whose job then would be taken for ended (seed 1796565790140735165: the controller
// waited for ever for a running job to end).
func TestASavepointOfAnotherKindIsNotATriggersRecoveredResult(t *testing.T) {
	const jobID = "042069d40f4cfcb5364d845573b6ce06"
	now := time.Date(2026, 11, 30, 12, 11, 45, 0, time.UTC)
	trigger := now.Add(-4 * time.Second)
	for _, tc := range []struct {
		name      string
		stop      bool
		typ       string
		recovered bool
	}{
		{name: "a stop's result is a SYNC_SAVEPOINT", stop: true, typ: flinkclient.CheckpointTypeSyncSavepoint, recovered: true},
		{name: "a plain SAVEPOINT is not a stop's result", stop: true, typ: "SAVEPOINT"},
		{name: "a savepoint's result is a SAVEPOINT", typ: "SAVEPOINT", recovered: true},
		{name: "a SYNC_SAVEPOINT is not a plain savepoint's result", typ: flinkclient.CheckpointTypeSyncSavepoint},
		{name: "a Flink that reports no type: the time alone decides", stop: true, recovered: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := lastStateCycle(jobID, now)
			c.job().State = v1beta1.JobStateRunning
			c.obs.flink = &state.Flink{}
			c.st.Savepoint = &v1beta1.SavepointStatus{JobID: jobID, TriggerID: "7857d71f0f67c6e9ebcf5e2c7dc7a2f5",
				TriggerReason: SavepointReasonJobCancel, TriggerTime: state.Time(trigger), State: SavepointStateInProgress}
			latest := &flinkclient.Checkpoint{ID: 2, Status: "COMPLETED", IsSavepoint: true, Type: tc.typ,
				TriggerTimestamp: trigger.Add(-3 * time.Second).UnixMilli(), ExternalPath: "file:/savepoints/savepoint-042069-3b1ff2eaada5"}
			cl := checkpointsOnly{cps: &flinkclient.Checkpoints{Latest: flinkclient.LatestCheckpoints{Savepoint: latest}}}
			loc, ok := c.recoverSavepoint(context.Background(), cl, tc.stop)
			assert.Equal(t, tc.recovered, ok)
			if tc.recovered {
				assert.Equal(t, latest.ExternalPath, loc)
			}
		})
	}
}
