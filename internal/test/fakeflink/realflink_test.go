package fakeflink_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// What real Flink 2.2.1 showed the differential test (e2e/differential), which the fake
// follows since.

// A job's HA ConfigMap is created when its JobMaster starts and never again: once deleted,
// every periodic checkpoint fails (counted, the job runs on), and a savepoint or a stop fails
// with the checkpoint ID counter's error, the job still RUNNING.
func TestJobConfigMapDeletedFailsEveryCheckpointAndSavepoint(t *testing.T) {
	ha := &fakeflink.MemoryHA{}
	c := newCluster(t, fakeflink.Options{HA: ha})
	jm := c.Start(fakeflink.Config{Properties: haProps(fakeflink.PropCheckpointInterval, "10 s")})
	require.True(t, jm.Leads())
	ctx := context.Background()
	name := flinkha.JobConfigMapName(clusterID, jobID)
	names, err := c.HAConfigMaps()
	require.NoError(t, err)
	assert.Contains(t, names, name, "created as the JobMaster starts, before any checkpoint")
	cluster, err := ha.Get(ctx, flinkha.ClusterConfigMapName(clusterID))
	require.NoError(t, err)
	assert.Contains(t, cluster.Data, flinkha.LeaderKeyPrefix+"job-"+jobID, "the JobMaster's leader information")

	c.Advance(25 * time.Second)
	require.Equal(t, int64(2), checkpoints(t, jm).Counts.Completed)
	require.NoError(t, ha.Delete(ctx, name))
	c.Advance(30 * time.Second)
	cps := checkpoints(t, jm)
	assert.Equal(t, int64(2), cps.Counts.Completed, "no checkpoint completes without the ID counter")
	assert.Equal(t, int64(3), cps.Counts.Failed)
	gone, err := ha.Get(ctx, name)
	require.NoError(t, err)
	assert.Nil(t, gone, "nothing creates the ConfigMap again")

	fc := restClient(t, jm.URL())
	for _, stop := range []bool{false, true} {
		tid := flinkclient.NewID()
		req := flinkclient.SavepointRequest{TriggerID: tid}
		if stop {
			_, err = fc.StopWithSavepoint(ctx, jobID, req)
		} else {
			_, err = fc.TriggerSavepoint(ctx, jobID, req)
		}
		require.NoError(t, err)
		st, err := fc.SavepointStatus(ctx, jobID, tid)
		require.NoError(t, err)
		require.False(t, st.Succeeded(), "stop %v", stop)
		assert.Contains(t, st.FailureCause, "Trigger checkpoint failure")
		assert.Equal(t, flinkclient.JobStateRunning, jm.JobState(jobID), "the job runs on")
	}
}

// Savepoints are where Flink puts them, spelled as it reports them; a job restored from one
// reports its checkpoint ID, and its next checkpoint IDs go on from there.
func TestSavepointLocationsAndRestoredIDsAreFlinks(t *testing.T) {
	c := newCluster(t, fakeflink.Options{})
	jm := c.Start(fakeflink.Config{Properties: haProps(fakeflink.PropSavepointsDir, "file:///data/savepoints/", fakeflink.PropCheckpointsDir, "/data/checkpoints")})
	require.True(t, jm.Leads())
	jm.CompleteCheckpoint(jobID)
	ctx := context.Background()
	fc := restClient(t, c.URL())
	tid := flinkclient.NewID()
	_, err := fc.StopWithSavepoint(ctx, jobID, flinkclient.SavepointRequest{TriggerID: tid})
	require.NoError(t, err)
	st, err := fc.SavepointStatus(ctx, jobID, tid)
	require.NoError(t, err)
	require.True(t, st.Succeeded())
	assert.Regexp(t, regexp.MustCompile(`^file:/data/savepoints/savepoint-`+jobID[:6]+`-[0-9a-f]{12}$`), st.Location)

	// The next deploy: a new job ID, from the stop's savepoint.
	jm.Kill()
	const next = "1b2c3d4e5f60718293a4b5c6d7e8f90a"
	restored := c.Start(fakeflink.Config{Properties: haProps(fakeflink.PropCheckpointsDir, "file:///data/checkpoints", fakeflink.PropJobID, next),
		FromSavepoint: st.Location})
	c.Advance(time.Minute)
	require.True(t, restored.Leads())
	cps, err := fc.GetCheckpoints(ctx, next)
	require.NoError(t, err)
	require.NotNil(t, cps.Latest.Restored)
	assert.Equal(t, int64(2), cps.Latest.Restored.ID, "the savepoint's checkpoint ID, after checkpoint 1")
	assert.Equal(t, st.Location, cps.Latest.Restored.ExternalPath)
	assert.Equal(t, "file:/data/checkpoints/"+next+"/chk-3", restored.CompleteCheckpoint(next), "IDs go on from the savepoint's")
	assert.Equal(t, "file:/x/y", fakeflink.QualifyPath("file:///x/y/"))
	assert.Equal(t, "file:/x/y", fakeflink.QualifyPath("/x/y"))
	assert.Equal(t, "s3://b/x", fakeflink.QualifyPath("s3://b/x"))
}

// A savepoint trigger for a job the JobManager does not run is accepted; its operation fails
// with FlinkJobNotFoundException, as the Dispatcher looks for the job only then.
func TestSavepointOfAnUnknownJobIsAcceptedAndFails(t *testing.T) {
	c := newCluster(t, fakeflink.Options{})
	jm := c.Start(fakeflink.Config{Properties: haProps()})
	require.True(t, jm.Leads())
	ctx := context.Background()
	fc := restClient(t, jm.URL())
	unknown, tid := flinkclient.NewID(), flinkclient.NewID()
	_, err := fc.TriggerSavepoint(ctx, unknown, flinkclient.SavepointRequest{TriggerID: tid})
	require.NoError(t, err, "202")
	st, err := fc.SavepointStatus(ctx, unknown, tid)
	require.NoError(t, err)
	require.False(t, st.Succeeded())
	assert.True(t, strings.HasPrefix(st.FailureCause, "java.util.concurrent.CompletionException: org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job ("+unknown+")"), st.FailureCause)
	resp, err := http.Post(jm.URL()+"/jobs/not-a-job-id/savepoints", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "a path that is no job ID")
}

// A main() that throws before Flink 2.3 is a fatal error: the JobManager exits 2 after its
// leader election service removed the leaders' addresses (the lock annotation stays).
func TestMainThrowingExitsTwoAndLeavesNoLeaderAddress(t *testing.T) {
	ha := &fakeflink.MemoryHA{}
	c := newCluster(t, fakeflink.Options{HA: ha, Program: fakeflink.Program{Throw: "java.lang.IllegalArgumentException: bad"}})
	jm := c.Start(fakeflink.Config{Properties: haProps()})
	st, ok := jm.ExitStatus()
	require.True(t, ok)
	assert.Equal(t, fakeflink.ExitRuntimeFailure, st.Code)
	assert.Equal(t, fakeflink.MainMethodError+"java.lang.IllegalArgumentException: bad", st.Message)
	cm, err := ha.Get(context.Background(), flinkha.ClusterConfigMapName(clusterID))
	require.NoError(t, err)
	assert.Empty(t, cm.Data)
	assert.Contains(t, cm.Annotations, flinkha.LeaderAnnotation)
}

// Flink 1.20 labels its HA ConfigMaps configmap-type=high-availability beside type and app;
// Flink 2 drops that label (seen by the differential test on both).
func TestHAConfigMapsAreLabelledAsTheReleaseLabelsThem(t *testing.T) {
	for _, tc := range []struct {
		version fakeflink.Version
		want    string
	}{{fakeflink.Version1_20, flinkha.LabelConfigMapTypeHA}, {fakeflink.Version2_2, ""}, {fakeflink.Version2_3, ""}} {
		t.Run(string(tc.version), func(t *testing.T) {
			ha := &fakeflink.MemoryHA{}
			c := newCluster(t, fakeflink.Options{HA: ha, Version: tc.version})
			require.True(t, c.Start(fakeflink.Config{Properties: haProps()}).Leads())
			for _, name := range []string{flinkha.ClusterConfigMapName(clusterID), flinkha.JobConfigMapName(clusterID, jobID)} {
				cm, err := ha.Get(context.Background(), name)
				require.NoError(t, err)
				require.NotNil(t, cm, name)
				assert.Equal(t, tc.want, cm.Labels[flinkha.LabelConfigMapType], name)
				assert.Equal(t, clusterID, cm.Labels[flinkha.LabelApp], name)
			}
		})
	}
}
