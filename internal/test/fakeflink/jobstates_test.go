package fakeflink_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// TestJobStatesSetByTheTestControls: SetJobState moves a job through Flink's JobStatus as
// Flink would; what the controller then sees of its savepoints, its end and its HA data.
func TestJobStatesSetByTheTestControls(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, c *fakeflink.Cluster, store *fakeflink.MemoryHA, jm *fakeflink.JobManager, fc *flinkclient.HTTPClient)
	}{
		{"RESTARTING: a stop-with-savepoint fails at once, the job runs on; once RUNNING again the stop is taken", func(t *testing.T, c *fakeflink.Cluster, store *fakeflink.MemoryHA, jm *fakeflink.JobManager, fc *flinkclient.HTTPClient) {
			jm.AddException(jobID, flinkclient.Exception{Name: "java.util.concurrent.TimeoutException", StackTrace: "java.util.concurrent.TimeoutException: Heartbeat of TaskManager timed out"})
			jm.SetJobState(jobID, flinkclient.JobStateRestarting)
			tid, err := fc.StopWithSavepoint(ctx, jobID, flinkclient.SavepointRequest{TriggerID: triggerID})
			require.NoError(t, err, "the trigger is accepted")
			st, err := fc.SavepointStatus(ctx, jobID, tid)
			require.NoError(t, err)
			assert.True(t, st.Completed())
			assert.Contains(t, st.FailureCause, "is not running (RESTARTING)")
			assert.Equal(t, flinkclient.JobStateRestarting, jm.JobState(jobID))
			ex, err := fc.GetExceptions(ctx, jobID)
			require.NoError(t, err)
			require.Len(t, ex, 1)
			assert.Equal(t, c.Clock().Now().UnixMilli(), ex[0].Timestamp, "timestamped when recorded")

			jm.SetJobState(jobID, flinkclient.JobStateRunning)
			tid, err = fc.StopWithSavepoint(ctx, jobID, flinkclient.SavepointRequest{TriggerID: flinkclient.NewID()})
			require.NoError(t, err)
			st, err = fc.SavepointStatus(ctx, jobID, tid)
			require.NoError(t, err)
			assert.True(t, st.Succeeded())
			assert.Equal(t, flinkclient.JobStateFinished, jm.JobState(jobID))
		}},
		{"SUSPENDED: the execution ends on this JobManager with an end time, no result is stored, the HA data stays for the next leader", func(t *testing.T, c *fakeflink.Cluster, store *fakeflink.MemoryHA, jm *fakeflink.JobManager, fc *flinkclient.HTTPClient) {
			jm.CompleteCheckpoint(jobID)
			c.Advance(time.Second)
			jm.SetJobState(jobID, flinkclient.JobStateSuspended)
			j, err := fc.GetJob(ctx, jobID)
			require.NoError(t, err)
			assert.Equal(t, flinkclient.JobStateSuspended, j.State)
			assert.Equal(t, c.Clock().Now().UnixMilli(), j.EndTime)
			assert.Equal(t, flinkclient.JobStateSuspended, c.Executions()[0].State)
			assert.False(t, c.HasResult(jm.JobResultStorePath(), jobID))
			cm, err := store.Get(ctx, flinkha.JobConfigMapName(clusterID, jobID))
			require.NoError(t, err)
			assert.Equal(t, []int64{1}, flinkha.CheckpointIDs(cm))
		}},
		{"CANCELLING stays until CANCELED; CANCELED ends the job globally", func(t *testing.T, c *fakeflink.Cluster, _ *fakeflink.MemoryHA, jm *fakeflink.JobManager, _ *flinkclient.HTTPClient) {
			jm.SetJobState(jobID, flinkclient.JobStateCancelling)
			c.Advance(time.Hour)
			assert.Equal(t, flinkclient.JobStateCancelling, jm.JobState(jobID))
			jm.SetJobState(jobID, flinkclient.JobStateCanceled)
			assert.Equal(t, flinkclient.JobStateCanceled, jm.JobState(jobID))
			assert.Equal(t, flinkclient.JobStateCanceled, c.Executions()[0].State)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &fakeflink.MemoryHA{}
			c := newCluster(t, fakeflink.Options{HA: store})
			jm := c.Start(fakeflink.Config{Properties: haProps()})
			require.True(t, jm.Leads())
			tc.run(t, c, store, jm, restClient(t, jm.URL()))
			assert.Empty(t, c.Violations())
		})
	}
}
