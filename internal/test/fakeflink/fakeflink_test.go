package fakeflink_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

const (
	clusterID = "wordcount"
	jobID     = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
	triggerID = "0123456789abcdef0123456789abcdef"
)

// haProps is the configuration of an HA JobManager with a fixed job ID.
func haProps(extra ...string) map[string]string {
	p := map[string]string{
		fakeflink.PropHAType:       "kubernetes",
		fakeflink.PropHAStorageDir: "s3://bucket/ha",
		fakeflink.PropJobID:        jobID,
	}
	for i := 0; i+1 < len(extra); i += 2 {
		p[extra[i]] = extra[i+1]
	}
	return p
}

func newCluster(t *testing.T, opts fakeflink.Options) *fakeflink.Cluster {
	t.Helper()
	if opts.ClusterID == "" {
		opts.ClusterID = clusterID
	}
	c := fakeflink.NewCluster(opts)
	t.Cleanup(c.Close)
	return c
}

func restClient(t *testing.T, url string) *flinkclient.HTTPClient {
	t.Helper()
	cl, err := flinkclient.New(url, &http.Client{Timeout: 5 * time.Second})
	require.NoError(t, err)
	return cl
}

func TestJobResultStoreAndRestarts(t *testing.T) {
	for _, tc := range []struct {
		name           string
		deleteOnCommit string
		wantRerun      bool
	}{
		{name: "FLINK-27569: delete-on-commit=true reruns main() after a restart", deleteOnCommit: "true", wantRerun: true},
		{name: "delete-on-commit=false keeps the result: no rerun", deleteOnCommit: "false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := newCluster(t, fakeflink.Options{})
			jm := c.Start(fakeflink.Config{Properties: haProps(fakeflink.PropJRSDeleteOnCommit, tc.deleteOnCommit), FromSavepoint: "s3://bucket/sp/savepoint-initial"})
			require.True(t, jm.Leads())
			require.Equal(t, flinkclient.JobStateRunning, jm.JobState(jobID))

			fc := restClient(t, c.URL())
			_, err := fc.StopWithSavepoint(ctx, jobID, flinkclient.SavepointRequest{TriggerID: triggerID})
			require.NoError(t, err)
			st, err := fc.SavepointStatus(ctx, jobID, triggerID)
			require.NoError(t, err)
			require.True(t, st.Succeeded())
			require.Equal(t, flinkclient.JobStateFinished, jm.JobState(jobID))

			again := jm.Restart()
			c.Advance(15 * time.Second) // the killed process's lease runs out
			require.True(t, again.Leads())
			assert.Equal(t, tc.deleteOnCommit == "false", c.HasResult(again.JobResultStorePath(), jobID))
			if tc.wantRerun {
				assert.Equal(t, flinkclient.JobStateRunning, again.JobState(jobID), "main() ran the ended job again")
				assert.Equal(t, "s3://bucket/sp/savepoint-initial", again.RestoredFrom(jobID), "from the command line's savepoint")
				require.Len(t, c.Violations(), 1)
				assert.Contains(t, c.Violations()[0], "rerun")
			} else {
				// A clean result: the job is not listed at all (ApplicationDispatcherBootstrap
				// takes the duplicate submission of a globally terminated job as done).
				assert.Empty(t, again.JobIDs(), "done, not run and not listed")
				assert.Empty(t, c.Violations())
				assert.Len(t, c.Executions(), 1)
			}
		})
	}
}

func TestRecoveryFromTheJobGraphStoreIgnoresTheCommandLine(t *testing.T) {
	for _, tc := range []struct {
		name       string
		checkpoint bool
		want       string
	}{
		{name: "from the latest checkpoint", checkpoint: true, want: "file:/checkpoints/" + jobID + "/chk-1"},
		{name: "without checkpoints, from the savepoint the graph was submitted with", want: "s3://sp/old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, fakeflink.Options{})
			old := c.Start(fakeflink.Config{Properties: haProps(), FromSavepoint: "s3://sp/old"})
			if tc.checkpoint {
				require.NotEmpty(t, old.CompleteCheckpoint(jobID))
			}
			old.Kill()
			next := c.Start(fakeflink.Config{Properties: haProps(), FromSavepoint: "s3://sp/new"})
			assert.False(t, next.Leads(), "the dead leader's lease still holds")
			c.Advance(15 * time.Second)
			require.True(t, next.Leads())
			assert.Equal(t, flinkclient.JobStateRunning, next.JobState(jobID))
			assert.Equal(t, tc.want, next.RestoredFrom(jobID), "--fromSavepoint s3://sp/new is ignored")
			if tc.checkpoint {
				assert.Equal(t, "file:/checkpoints/"+jobID+"/chk-2", next.CompleteCheckpoint(jobID), "checkpoint IDs go on after a recovery")
			}
			ex := c.Executions()
			require.Len(t, ex, 2)
			assert.True(t, ex[1].Recovered)
			assert.Empty(t, c.Violations())
		})
	}
}

func TestLostHAMetadataRestartsFromTheCommandLine(t *testing.T) {
	c := newCluster(t, fakeflink.Options{})
	old := c.Start(fakeflink.Config{Properties: haProps(), FromSavepoint: "s3://sp/old"})
	old.CompleteCheckpoint(jobID)
	names, err := c.HAConfigMaps()
	require.NoError(t, err)
	assert.Equal(t, []string{flinkha.JobConfigMapName(clusterID, jobID), flinkha.ClusterConfigMapName(clusterID)}, names)

	require.NoError(t, c.LoseHA())
	old.Kill()
	next := c.Start(fakeflink.Config{Properties: haProps(), FromSavepoint: "s3://sp/old"})
	require.True(t, next.Leads(), "no ConfigMap, no lease: the new process leads at once")
	assert.Equal(t, "s3://sp/old", next.RestoredFrom(jobID), "the checkpoint pointer was lost with the HA data")
	assert.False(t, c.Executions()[1].Recovered)
}

func TestSavepointOperations(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name          string
		storeDuration string
		advance       time.Duration
		wantFound     bool
	}{
		{name: "result kept within rest.async.store-duration", advance: 4 * time.Minute, wantFound: true},
		{name: "expired after the default 5 min: 404", advance: 5 * time.Minute},
		{name: "expired after a configured 1 min", storeDuration: "1 min", advance: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, fakeflink.Options{})
			jm := c.Start(fakeflink.Config{Properties: haProps(fakeflink.PropAsyncStoreDuration, tc.storeDuration)})
			fc := restClient(t, jm.URL())
			_, err := fc.TriggerSavepoint(ctx, jobID, flinkclient.SavepointRequest{TriggerID: triggerID})
			require.NoError(t, err)
			st, err := fc.SavepointStatus(ctx, jobID, triggerID)
			require.NoError(t, err)
			require.True(t, st.Succeeded())
			c.Advance(tc.advance)
			_, err = fc.SavepointStatus(ctx, jobID, triggerID)
			if tc.wantFound {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, flinkclient.ErrNotFound)
			}
			cp, err := fc.GetCheckpoints(ctx, jobID)
			require.NoError(t, err)
			require.NotNil(t, cp.LatestSavepoint(), "the savepoint outlives its operation's result")
			assert.Equal(t, st.Location, cp.LatestSavepoint().ExternalPath)
		})
	}
}

func TestStopIsIdempotentPerTriggerID(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, fakeflink.Options{})
	jm := c.Start(fakeflink.Config{Properties: haProps()})
	jm.SetSavepointMode(fakeflink.SavepointHold)
	fc := restClient(t, c.URL())
	for range 2 {
		got, err := fc.StopWithSavepoint(ctx, jobID, flinkclient.SavepointRequest{TriggerID: triggerID})
		require.NoError(t, err)
		assert.Equal(t, triggerID, got)
	}
	jm.CompleteSavepoints()
	_, err := fc.StopWithSavepoint(ctx, jobID, flinkclient.SavepointRequest{TriggerID: triggerID})
	require.NoError(t, err, "a retry after the stop completed is the same operation")
	st, err := fc.SavepointStatus(ctx, jobID, triggerID)
	require.NoError(t, err)
	assert.True(t, st.Succeeded())
	assert.Equal(t, 1, countSavepoints(c), "one stop, one savepoint")

	c.Advance(5 * time.Minute)
	_, err = fc.StopWithSavepoint(ctx, jobID, flinkclient.SavepointRequest{TriggerID: triggerID})
	require.NoError(t, err)
	st, err = fc.SavepointStatus(ctx, jobID, triggerID)
	require.NoError(t, err)
	assert.False(t, st.Succeeded(), "once forgotten, the same triggerId is a new stop of a FINISHED job")
}

func countSavepoints(c *fakeflink.Cluster) int {
	n := 0
	for _, p := range c.Processes() {
		if p.LatestSavepoint(jobID) != "" {
			n++
		}
	}
	return n
}

func TestLeadershipHandover(t *testing.T) {
	for _, tc := range []struct {
		name  string
		leave func(*fakeflink.JobManager)
		wait  time.Duration
	}{
		{name: "killed leader: a standby takes over when the lease expires", leave: (*fakeflink.JobManager).Kill, wait: 15 * time.Second},
		{name: "stopped leader gives the lease up: immediate", leave: (*fakeflink.JobManager).Stop},
		{name: "partitioned leader: runs until its lease expires, then a standby", leave: func(p *fakeflink.JobManager) { p.Partition(true) }, wait: 15 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ha := &fakeflink.MemoryHA{}
			c := newCluster(t, fakeflink.Options{HA: ha})
			a := c.Start(fakeflink.Config{Name: "jm-a", Properties: haProps(), Address: "http://10.0.0.1:8081"})
			b := c.Start(fakeflink.Config{Name: "jm-b", Properties: haProps(), Address: "http://10.0.0.2:8081"})
			require.Equal(t, a, c.ProcessAt("http://10.0.0.1:8081"))
			require.Equal(t, b, c.Process("jm-b"))
			require.True(t, a.Leads())
			require.False(t, b.Leads())
			jobs, err := restClient(t, b.URL()).ListJobs(ctx)
			require.NoError(t, err, "a standby answers for the leader")
			require.Len(t, jobs, 1)

			cm, err := ha.Get(ctx, flinkha.ClusterConfigMapName(clusterID))
			require.NoError(t, err)
			l, ok := flinkha.Leader(cm)
			require.True(t, ok)
			assert.Equal(t, "10.0.0.1", l.Host(), "the pod's address, as Flink publishes it")

			tc.leave(a)
			if tc.wait > 0 {
				c.Advance(tc.wait - time.Second)
				assert.False(t, b.Leads(), "not before the lease expired")
				c.Advance(time.Second)
			}
			require.True(t, b.Leads())
			assert.False(t, a.Leads())
			assert.Equal(t, b, c.Leader())
			cm, err = ha.Get(ctx, flinkha.ClusterConfigMapName(clusterID))
			require.NoError(t, err)
			l, ok = flinkha.Leader(cm)
			require.True(t, ok)
			assert.Equal(t, "http://10.0.0.2:8081", l.Address)
			assert.Equal(t, flinkclient.JobStateRunning, b.JobState(jobID))
			assert.Empty(t, c.Violations(), "never two executions at once")
		})
	}
}

func TestApplicationDriver(t *testing.T) {
	ctx := context.Background()
	for _, v := range []fakeflink.Version{fakeflink.Version1_20, fakeflink.Version2_2} {
		t.Run("submit-failed-job: FAILED (application driver) on "+string(v), func(t *testing.T) {
			c := newCluster(t, fakeflink.Options{Version: v, Program: fakeflink.Program{Throw: "java.lang.IllegalArgumentException: bad argument"}})
			jm := c.Start(fakeflink.Config{Properties: haProps(fakeflink.PropSubmitFailedJob, "true")})
			fc := restClient(t, jm.URL())
			j, err := fc.GetJob(ctx, jobID)
			require.NoError(t, err)
			assert.Equal(t, flinkclient.ApplicationDriverJobName, j.Name)
			assert.Equal(t, flinkclient.JobStateFailed, j.State)
			ex, err := fc.GetExceptions(ctx, jobID)
			require.NoError(t, err)
			assert.Equal(t, "java.lang.IllegalArgumentException: bad argument", flinkclient.Summary(ex))
		})
	}
	t.Run("without submit-failed-job the JobManager exits", func(t *testing.T) {
		c := newCluster(t, fakeflink.Options{Program: fakeflink.Program{Throw: "java.lang.IllegalArgumentException: bad argument"}})
		jm := c.Start(fakeflink.Config{Properties: haProps()})
		assert.False(t, jm.Alive())
		_, err := restClient(t, jm.URL()).ListJobs(ctx)
		assert.Error(t, err)
	})
}

func TestFlink23Applications(t *testing.T) {
	ctx := context.Background()
	t.Run("main() throws after submitting: application FAILED, job CANCELED", func(t *testing.T) {
		c := newCluster(t, fakeflink.Options{Version: fakeflink.Version2_3, Program: fakeflink.Program{Throw: "java.lang.IllegalStateException: after execute", ThrowAfterSubmit: true}})
		jm := c.Start(fakeflink.Config{Properties: haProps()})
		fc := restClient(t, jm.URL())
		apps, err := fc.ListApplications(ctx)
		require.NoError(t, err)
		require.Len(t, apps, 1)
		assert.True(t, flinkclient.IsID(apps[0].ID), "32 hex characters: %s", apps[0].ID)
		assert.Equal(t, flinkclient.ApplicationStateFailed, apps[0].Status)
		assert.Equal(t, map[string]int{flinkclient.JobStateCanceled: 1}, apps[0].JobCounts)
		app, err := fc.GetApplication(ctx, apps[0].ID)
		require.NoError(t, err)
		require.Len(t, app.Jobs, 1)
		assert.Equal(t, jobID, app.Jobs[0].ID)
		ex, err := fc.GetApplicationExceptions(ctx, apps[0].ID)
		require.NoError(t, err)
		assert.Equal(t, "java.lang.IllegalStateException: after execute", flinkclient.Summary(ex))
		j, err := fc.GetJob(ctx, jobID)
		require.NoError(t, err)
		assert.Equal(t, apps[0].ID, j.ApplicationID)
	})
	t.Run("recovery waits for execute(): application RUNNING without a job", func(t *testing.T) {
		c := newCluster(t, fakeflink.Options{Version: fakeflink.Version2_3})
		old := c.Start(fakeflink.Config{Properties: haProps()})
		old.Kill()
		c.SetProgram(fakeflink.Program{BlockBeforeExecute: true})
		c.Advance(15 * time.Second)
		next := c.Start(fakeflink.Config{Properties: haProps()})
		require.True(t, next.Leads())
		fc := restClient(t, next.URL())
		apps, err := fc.ListApplications(ctx)
		require.NoError(t, err)
		require.Len(t, apps, 1)
		assert.Equal(t, flinkclient.ApplicationStateRunning, apps[0].Status)
		assert.Empty(t, apps[0].JobCounts)
		c.ReleaseMain()
		assert.Equal(t, flinkclient.JobStateRunning, next.JobState(jobID))
		assert.True(t, c.Executions()[1].Recovered)
	})
	t.Run("application cancel cancels its jobs", func(t *testing.T) {
		c := newCluster(t, fakeflink.Options{Version: fakeflink.Version2_3})
		jm := c.Start(fakeflink.Config{Properties: haProps()})
		fc := restClient(t, jm.URL())
		require.NoError(t, fc.CancelApplication(ctx, jm.ApplicationID()))
		assert.Equal(t, flinkclient.ApplicationStateCanceled, jm.ApplicationState())
		assert.Equal(t, flinkclient.JobStateCanceled, jm.JobState(jobID))
		assert.NoError(t, fc.CancelJob(ctx, jobID), "the job is already CANCELED")
		assert.Equal(t, flinkclient.JobStateCanceled, jm.JobState(jobID))
	})
}

func TestVersions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		version fakeflink.Version
		apps    bool
	}{
		{fakeflink.Version1_20, false}, {fakeflink.Version2_2, false}, {fakeflink.Version2_3, true},
	} {
		t.Run(string(tc.version), func(t *testing.T) {
			c := newCluster(t, fakeflink.Options{Version: tc.version})
			jm := c.Start(fakeflink.Config{Properties: haProps()})
			_, err := restClient(t, jm.URL()).ListApplications(ctx)
			if tc.apps {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, flinkclient.ErrNotFound, "before 2.3, 404")
			}
		})
	}
}

func TestCancel(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, fakeflink.Options{})
	jm := c.Start(fakeflink.Config{Properties: haProps()})
	fc := restClient(t, jm.URL())
	require.NoError(t, fc.CancelJob(ctx, jobID))
	assert.Equal(t, flinkclient.JobStateCanceled, jm.JobState(jobID))
	require.NoError(t, fc.CancelJob(ctx, jobID), "cancelling a CANCELED job again is accepted")

	jm.SetJobs(flinkclient.Job{ID: jobID, State: flinkclient.JobStateFinished})
	var herr *flinkclient.HTTPError
	require.ErrorAs(t, fc.CancelJob(ctx, jobID), &herr)
	assert.Equal(t, http.StatusConflict, herr.StatusCode)
}

func TestUnavailableAndSlow(t *testing.T) {
	c := newCluster(t, fakeflink.Options{})
	jm := c.Start(fakeflink.Config{Properties: haProps()})
	fc := restClient(t, jm.URL())

	jm.SetUnavailable(true)
	var herr *flinkclient.HTTPError
	_, err := fc.ListJobs(context.Background())
	require.ErrorAs(t, err, &herr)
	assert.Equal(t, http.StatusServiceUnavailable, herr.StatusCode)
	jm.SetUnavailable(false)

	jm.Hold()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = fc.ListJobs(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "a held call ends with the caller's deadline")
	jm.Release()
	_, err = fc.ListJobs(context.Background())
	assert.NoError(t, err)

	jm.Kill()
	_, err = restClient(t, c.URL()).ListJobs(context.Background())
	require.ErrorAs(t, err, &herr, "the Service has no endpoint left")
	assert.Equal(t, http.StatusBadGateway, herr.StatusCode)
}

func TestExitCleansUpHA(t *testing.T) {
	c := newCluster(t, fakeflink.Options{})
	jm := c.Start(fakeflink.Config{Properties: haProps(fakeflink.PropJRSDeleteOnCommit, "false")})
	jm.SetJobState(jobID, flinkclient.JobStateFinished)
	names, err := c.HAConfigMaps()
	require.NoError(t, err)
	assert.Equal(t, []string{flinkha.ClusterConfigMapName(clusterID)}, names, "the job's ConfigMap is cleaned up with the job")
	jm.Exit()
	names, err = c.HAConfigMaps()
	require.NoError(t, err)
	assert.Empty(t, names, "the application's end deletes the HA data")
	assert.True(t, c.HasResult(jm.JobResultStorePath(), jobID), "the job result store is not HA data")
}

func TestShutdownClusterEndsTheProcess(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		jobState string
	}{
		// DELETE /cluster shuts the cluster down as SUCCEEDED: the exit code says nothing
		// of how the job ended.
		"a FINISHED job: exit 0":            {jobState: flinkclient.JobStateFinished},
		"a FAILED job: exit 0 all the same": {jobState: flinkclient.JobStateFailed},
	} {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, fakeflink.Options{})
			jm := c.Start(fakeflink.Config{Properties: haProps(fakeflink.PropJRSDeleteOnCommit, "false", "execution.shutdown-on-application-finish", "false")})
			jm.SetJobState(jobID, tc.jobState)
			fc := restClient(t, jm.URL())
			_, ok := jm.ExitStatus()
			require.False(t, ok, "with shutdown-on-application-finish false the process outlives its job")

			require.NoError(t, fc.ShutdownCluster(ctx))
			assert.False(t, jm.Alive())
			st, ok := jm.ExitStatus()
			require.True(t, ok)
			assert.Equal(t, fakeflink.ExitSucceeded, st.Code)
			names, err := c.HAConfigMaps()
			require.NoError(t, err)
			assert.Empty(t, names, "the shutdown cleans up the cluster's HA data")
			assert.True(t, c.HasResult(jm.JobResultStorePath(), jobID), "the job result store is kept")
			_, err = fc.ListJobs(ctx)
			assert.Error(t, err, "the REST API is gone with the process")
		})
	}
}

func TestCancelThatTakesTime(t *testing.T) {
	ctx := context.Background()
	t.Run("job: CANCELLING until Flink is done", func(t *testing.T) {
		c := newCluster(t, fakeflink.Options{})
		jm := c.Start(fakeflink.Config{Properties: haProps()})
		jm.SetCancelHold(true)
		fc := restClient(t, jm.URL())
		require.NoError(t, fc.CancelJob(ctx, jobID))
		j, err := fc.GetJob(ctx, jobID)
		require.NoError(t, err)
		assert.Equal(t, flinkclient.JobStateCancelling, j.State, "accepted is not done")
		require.NoError(t, fc.CancelJob(ctx, jobID), "a repeated cancel is accepted")
		jm.CompleteCancels()
		assert.Equal(t, flinkclient.JobStateCanceled, jm.JobState(jobID))
	})
	t.Run("2.3 application: CANCELLING with its jobs until Flink is done", func(t *testing.T) {
		c := newCluster(t, fakeflink.Options{Version: fakeflink.Version2_3})
		jm := c.Start(fakeflink.Config{Properties: haProps()})
		jm.SetCancelHold(true)
		fc := restClient(t, jm.URL())
		require.NoError(t, fc.CancelApplication(ctx, jm.ApplicationID()))
		app, err := fc.GetApplication(ctx, jm.ApplicationID())
		require.NoError(t, err)
		assert.Equal(t, flinkclient.ApplicationStateCancelling, app.Status)
		assert.Equal(t, map[string]int{flinkclient.JobStateCancelling: 1}, app.JobCounts)
		jm.CompleteCancels()
		assert.Equal(t, flinkclient.ApplicationStateCanceled, jm.ApplicationState())
		assert.Equal(t, flinkclient.JobStateCanceled, jm.JobState(jobID))
	})
}
