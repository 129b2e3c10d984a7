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

// TestPeriodicCheckpoints: with execution.checkpointing.interval a running job is
// checkpointed every interval, each checkpoint completing CheckpointDuration after its
// trigger, counted in /jobs/:id/checkpoints and stored in HA, where a recovery finds it.
func TestPeriodicCheckpoints(t *testing.T) {
	const interval = 10 * time.Second
	var ha *fakeflink.MemoryHA
	for _, tc := range []struct {
		name string
		// props are added to haProps; took is Options.CheckpointDuration (0: its default).
		props []string
		took  time.Duration
		run   func(t *testing.T, c *fakeflink.Cluster, jm *fakeflink.JobManager, start time.Time)
	}{
		{"no interval: no checkpoint however long the job runs", nil, 0, func(t *testing.T, c *fakeflink.Cluster, jm *fakeflink.JobManager, _ time.Time) {
			c.Advance(time.Hour)
			cps := checkpoints(t, jm)
			assert.Zero(t, cps.Counts.Completed)
			assert.Nil(t, cps.Latest.Completed)
		}},
		{"one per interval from the job's start, each completing CheckpointDuration after its trigger", []string{fakeflink.PropCheckpointInterval, "10 s"}, 2 * time.Second,
			func(t *testing.T, c *fakeflink.Cluster, jm *fakeflink.JobManager, start time.Time) {
				c.Advance(interval + time.Second)
				cps := checkpoints(t, jm)
				assert.Zero(t, cps.Counts.Completed)
				assert.Equal(t, int64(1), cps.Counts.InProgress, "triggered at 10 s, not yet complete")
				c.Advance(time.Second)
				cps = checkpoints(t, jm)
				require.NotNil(t, cps.Latest.Completed)
				assert.Equal(t, int64(1), cps.Counts.Completed)
				assert.Equal(t, int64(1), cps.Latest.Completed.ID)
				assert.Equal(t, start.Add(interval).UnixMilli(), cps.Latest.Completed.TriggerTimestamp)
				assert.Equal(t, start.Add(interval+2*time.Second).UnixMilli(), cps.Latest.Completed.LatestAckTimestamp)
				assert.False(t, cps.Latest.Completed.IsSavepoint)
				c.Advance(interval)
				cps = checkpoints(t, jm)
				assert.Equal(t, int64(2), cps.Counts.Completed)
				assert.Equal(t, "file:/checkpoints/"+jobID+"/chk-2", cps.Latest.Completed.ExternalPath)
				assert.Equal(t, start.Add(2*interval).UnixMilli(), cps.Latest.Completed.TriggerTimestamp)
			}},
		{"a restart stops the schedule; RUNNING again starts a new one from then", []string{fakeflink.PropCheckpointInterval, "10s"}, 2 * time.Second,
			func(t *testing.T, c *fakeflink.Cluster, jm *fakeflink.JobManager, start time.Time) {
				c.Advance(15 * time.Second)
				jm.SetJobState(jobID, flinkclient.JobStateRestarting)
				c.Advance(time.Minute)
				assert.Equal(t, int64(1), checkpoints(t, jm).Counts.Completed, "none while RESTARTING")
				jm.SetJobState(jobID, flinkclient.JobStateRunning)
				restarted := c.Clock().Now()
				c.Advance(interval + 2*time.Second)
				cps := checkpoints(t, jm)
				assert.Equal(t, int64(2), cps.Counts.Completed)
				assert.Equal(t, restarted.Add(interval).UnixMilli(), cps.Latest.Completed.TriggerTimestamp)
			}},
		{"checkpoints due when the JobManager dies are in HA: the next one restores the newest", []string{fakeflink.PropCheckpointInterval, "10000"}, 2 * time.Second,
			func(t *testing.T, c *fakeflink.Cluster, jm *fakeflink.JobManager, _ time.Time) {
				// The clock moves without anyone looking: the kill still finds three due.
				c.Clock().Step(3*interval + 5*time.Second)
				jm.Kill()
				next := c.Start(fakeflink.Config{Properties: haProps(fakeflink.PropCheckpointInterval, "10000")})
				c.Advance(time.Minute) // the dead leader's lease expires
				require.True(t, next.Leads())
				assert.Equal(t, "file:/checkpoints/"+jobID+"/chk-3", next.RestoredFrom(jobID))
				assert.True(t, c.Executions()[1].RestoredCheckpoint)
			}},
		{"a savepoint takes the next ID and counts; the statistics keep web.checkpoints.history entries, newest first", []string{fakeflink.PropCheckpointInterval, "10 s", fakeflink.PropCheckpointHistory, "2"}, 2 * time.Second,
			func(t *testing.T, c *fakeflink.Cluster, jm *fakeflink.JobManager, _ time.Time) {
				c.Advance(2*interval + 5*time.Second)
				fc := restClient(t, jm.URL())
				_, err := fc.TriggerSavepoint(context.Background(), jobID, flinkclient.SavepointRequest{TriggerID: triggerID})
				require.NoError(t, err)
				st, err := fc.SavepointStatus(context.Background(), jobID, triggerID)
				require.NoError(t, err)
				require.True(t, st.Succeeded())
				c.Advance(interval)
				cps := checkpoints(t, jm)
				assert.Equal(t, int64(4), cps.Counts.Completed, "checkpoints 1, 2, 4 and savepoint 3")
				assert.Equal(t, int64(4), cps.Latest.Completed.ID)
				assert.Equal(t, int64(3), cps.Latest.Savepoint.ID)
			}},
		{"a clock far ahead counts every checkpoint and keeps state.checkpoints.num-retained in the store", []string{fakeflink.PropCheckpointInterval, "1 s", fakeflink.PropNumRetained, "3"}, 0,
			func(t *testing.T, c *fakeflink.Cluster, jm *fakeflink.JobManager, _ time.Time) {
				c.Advance(time.Hour)
				cps := checkpoints(t, jm)
				// Triggers at 1 s … 3599 s complete 100 ms later (a tenth of the interval).
				assert.Equal(t, int64(3599), cps.Counts.Completed)
				assert.Equal(t, int64(3599), cps.Latest.Completed.ID)
				cm, err := ha.Get(context.Background(), flinkha.JobConfigMapName(clusterID, jobID))
				require.NoError(t, err)
				assert.Equal(t, []int64{3597, 3598, 3599}, flinkha.CheckpointIDs(cm))
				assert.Equal(t, "3600", cm.Data[flinkha.CheckpointCounterKey])
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ha = &fakeflink.MemoryHA{}
			c := newCluster(t, fakeflink.Options{HA: ha, CheckpointDuration: tc.took})
			start := c.Clock().Now()
			jm := c.Start(fakeflink.Config{Properties: haProps(tc.props...)})
			require.True(t, jm.Leads())
			require.Equal(t, flinkclient.JobStateRunning, jm.JobState(jobID))
			tc.run(t, c, jm, start)
			assert.Empty(t, c.Violations())
		})
	}
}

func checkpoints(t *testing.T, jm *fakeflink.JobManager) *flinkclient.Checkpoints {
	t.Helper()
	cps, err := restClient(t, jm.URL()).GetCheckpoints(context.Background(), jobID)
	require.NoError(t, err)
	return cps
}
