package fakeflink_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// The behaviour the fake owes to Flink's sources (issue 17), per supported version: each
// case names the Flink classes it follows.

// versions are the Flink versions the fake behaves like.
var versions = []fakeflink.Version{fakeflink.Version1_20, fakeflink.Version2_2, fakeflink.Version2_3}

// KubernetesLeaderElectionDriver (ConfigMapCallbackHandlerImpl.onDeleted): the leader's
// ConfigMap deleted externally is a fatal error; ClusterEntrypoint exits with
// RUNTIME_FAILURE_RETURN_CODE. The container's restart runs main() again: from the restore
// path the configuration names, which, when it does not exist, fails the job at once
// (JobInitializationException caused by FileNotFoundException) instead of starting empty.
func TestContractLeaderExitsWhenItsConfigMapIsDeleted(t *testing.T) {
	for _, v := range versions {
		t.Run(string(v), func(t *testing.T) {
			c := newCluster(t, fakeflink.Options{Version: v})
			jm := c.Start(fakeflink.Config{Properties: haProps()})
			require.Equal(t, flinkclient.JobStateRunning, jm.JobState(jobID))

			require.NoError(t, c.LoseHA())
			assert.False(t, jm.Alive(), "the leader exits")
			st, ok := jm.ExitStatus()
			require.True(t, ok)
			assert.Equal(t, fakeflink.ExitHALost, st.Code)
			assert.Contains(t, st.Message, flinkha.ClusterConfigMapName(clusterID)+" has been deleted externally")
			require.Len(t, c.Executions(), 1)
			assert.Equal(t, flinkclient.JobStateSuspended, c.Executions()[0].State, "suspended, not ended: no result is written")
			assert.False(t, c.HasResult(jm.JobResultStorePath(), jobID))

			const missing = "no-such-savepoint"
			again := c.Start(fakeflink.Config{Properties: haProps(fakeflink.PropSavepointPath, missing)})
			require.True(t, again.Leads())
			assert.Equal(t, flinkclient.JobStateFailed, again.JobState(jobID), "the restore fails: main() does not start the job empty")
			assert.Len(t, c.Executions(), 1, "the failed job never ran")
			ex := restClient(t, again.URL())
			got, err := ex.GetExceptions(context.Background(), jobID)
			require.NoError(t, err)
			require.NotEmpty(t, got)
			assert.Equal(t, "org.apache.flink.runtime.client.JobInitializationException", got[0].Name)
			assert.Contains(t, got[0].StackTrace, "Cannot find checkpoint or savepoint file/directory '"+missing+"'")
			if v == fakeflink.Version2_3 {
				assert.Equal(t, flinkclient.ApplicationStateFailed, again.ApplicationState())
			}
			assert.Empty(t, c.Violations())
		})
	}
}

// A partial deletion (the job graphs and job ConfigMaps, not the leader's record) is only a
// modification for the driver: the leader runs on.
func TestContractLeaderRunsOnWhenOnlyJobGraphsGo(t *testing.T) {
	c := newCluster(t, fakeflink.Options{})
	jm := c.Start(fakeflink.Config{Properties: haProps()})
	jm.CompleteCheckpoint(jobID)
	require.NoError(t, c.LoseJobGraphs())
	assert.True(t, jm.Leads())
	assert.Equal(t, flinkclient.JobStateRunning, jm.JobState(jobID))
	names, err := c.HAConfigMaps()
	require.NoError(t, err)
	assert.Equal(t, []string{flinkha.ClusterConfigMapName(clusterID)}, names, "the job's checkpoint ConfigMap is gone")
}

// FileSystemJobResultStore, Dispatcher and ApplicationDispatcherBootstrap: a restarted
// JobManager whose job has a clean result does not list it (2.3: the application FINISHED);
// a dirty result is listed in its state by the CheckpointResourcesCleanupRunner while the
// cleanup finishes, and is clean afterwards.
func TestContractJobResultStoreAfterARestart(t *testing.T) {
	for _, v := range versions {
		for _, dirty := range []bool{false, true} {
			name := string(v) + "/clean"
			if dirty {
				name = string(v) + "/dirty"
			}
			t.Run(name, func(t *testing.T) {
				c := newCluster(t, fakeflink.Options{Version: v})
				jm := c.Start(fakeflink.Config{Properties: haProps(fakeflink.PropJRSDeleteOnCommit, "false")})
				jm.SetJobState(jobID, flinkclient.JobStateFinished)
				store := jm.JobResultStorePath()
				require.True(t, c.ResultClean(store, jobID))
				if dirty {
					require.True(t, c.MarkResultDirty(store, jobID))
				}
				again := jm.Restart()
				c.Advance(15 * time.Second)
				require.True(t, again.Leads())
				if dirty {
					assert.Equal(t, flinkclient.JobStateFinished, again.JobState(jobID), "listed in its result's state")
					assert.True(t, c.ResultClean(store, jobID), "the cleanup finished")
				} else {
					assert.Empty(t, again.JobIDs(), "a clean result: not listed")
				}
				if v == fakeflink.Version2_3 {
					assert.Equal(t, flinkclient.ApplicationStateFinished, again.ApplicationState())
				}
				assert.Len(t, c.Executions(), 1, "not run again")
				assert.Empty(t, c.Violations())
			})
		}
	}
}

// The fake reads its restore paths like Flink: a relative path names nothing.
func TestContractRestorePaths(t *testing.T) {
	for _, tc := range []struct {
		path   string
		failed bool
	}{
		{"s3://bucket/savepoints/savepoint-1", false},
		{"/savepoints/savepoint-1", false},
		{"", false},
		{"savepoint-1", true},
	} {
		t.Run(tc.path, func(t *testing.T) {
			c := newCluster(t, fakeflink.Options{})
			jm := c.Start(fakeflink.Config{Properties: haProps(), FromSavepoint: tc.path})
			want := flinkclient.JobStateRunning
			if tc.failed {
				want = flinkclient.JobStateFailed
			}
			assert.Equal(t, want, jm.JobState(jobID))
			assert.Equal(t, !tc.failed, strings.Contains(strings.Join(jobIDs(c), ","), jobID))
		})
	}
}

func jobIDs(c *fakeflink.Cluster) []string {
	var out []string
	for _, e := range c.Executions() {
		out = append(out, e.JobID)
	}
	return out
}

// JobStatus: a submitted job is INITIALIZING (the JobMaster is created and restores its
// state), then CREATED (the scheduler waits for slots), then RUNNING; savepoints are refused
// until it runs; on 2.3 the application is RUNNING throughout.
func TestContractJobStartsInitializingThenCreated(t *testing.T) {
	for _, v := range versions {
		t.Run(string(v), func(t *testing.T) {
			c := newCluster(t, fakeflink.Options{Version: v, JobStartup: 10 * time.Second})
			jm := c.Start(fakeflink.Config{Properties: haProps()})
			fc := restClient(t, jm.URL())
			state := func() string {
				jobs, err := fc.ListJobs(context.Background())
				require.NoError(t, err)
				require.Len(t, jobs, 1)
				return jobs[0].State
			}
			assert.Equal(t, flinkclient.JobStateInitializing, state())
			if v == fakeflink.Version2_3 {
				assert.Equal(t, flinkclient.ApplicationStateRunning, jm.ApplicationState())
			}
			_, err := fc.TriggerSavepoint(context.Background(), jobID, flinkclient.SavepointRequest{TriggerID: triggerID})
			require.NoError(t, err)
			st, err := fc.SavepointStatus(context.Background(), jobID, triggerID)
			require.NoError(t, err)
			assert.False(t, st.Succeeded(), "no savepoint of a job that does not run")
			c.Advance(5 * time.Second)
			assert.Equal(t, flinkclient.JobStateCreated, state())
			c.Advance(5 * time.Second)
			assert.Equal(t, flinkclient.JobStateRunning, state())
			if v == fakeflink.Version2_3 {
				assert.Equal(t, flinkclient.ApplicationStateRunning, jm.ApplicationState())
			}
		})
	}
}

// StopWithSavepointTerminationHandlerImpl: a stop-with-savepoint whose savepoint completed
// but whose job failed while stopping: the operation fails with
// StopWithSavepointStoppingException naming the savepoint, which the checkpoint statistics
// list; the job restarts and runs on (2.3: the application RUNNING).
func TestContractStopWhoseJobRestarted(t *testing.T) {
	for _, v := range versions {
		t.Run(string(v), func(t *testing.T) {
			ctx := context.Background()
			c := newCluster(t, fakeflink.Options{Version: v})
			jm := c.Start(fakeflink.Config{Properties: haProps()})
			jm.SetSavepointMode(fakeflink.SavepointHold)
			fc := restClient(t, jm.URL())
			_, err := fc.StopWithSavepoint(ctx, jobID, flinkclient.SavepointRequest{TriggerID: triggerID})
			require.NoError(t, err)
			jm.CompleteStopsThenRestart()
			st, err := fc.SavepointStatus(ctx, jobID, triggerID)
			require.NoError(t, err)
			require.True(t, st.Completed())
			assert.False(t, st.Succeeded())
			assert.Contains(t, st.FailureCause, "StopWithSavepointStoppingException")
			location := jm.LatestSavepoint(jobID)
			require.NotEmpty(t, location, "the savepoint exists")
			assert.Contains(t, st.FailureCause, "A savepoint has been created at: "+location)
			assert.Equal(t, flinkclient.JobStateRunning, jm.JobState(jobID), "the job restarted")
			if v == fakeflink.Version2_3 {
				assert.Equal(t, flinkclient.ApplicationStateRunning, jm.ApplicationState())
			}
			require.Len(t, c.Executions(), 1)
			assert.True(t, c.Executions()[0].End.IsZero(), "the same execution runs on")
			assert.Empty(t, c.Violations())
		})
	}
}
