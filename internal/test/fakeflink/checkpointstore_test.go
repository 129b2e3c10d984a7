package fakeflink_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// removeJobGraphs does what a last-state redeploy does to the cluster ConfigMap: it removes
// the job graph entries and leaves the rest (FlinkUtils.deleteJobGraphInKubernetesHA).
func removeJobGraphs(t *testing.T, ha fakeflink.HAStore) {
	t.Helper()
	ctx := context.Background()
	cm, err := ha.Get(ctx, flinkha.ClusterConfigMapName(clusterID))
	require.NoError(t, err)
	require.NotNil(t, cm)
	for k := range cm.Data {
		if flinkha.IsJobGraphKey(k) {
			delete(cm.Data, k)
		}
	}
	require.NoError(t, ha.Put(ctx, cm))
}

// TestCheckpointStoreLayout: the entries hold Java-serialized state handles, as Flink's
// KubernetesStateHandleStore writes them, never the state or the checkpoint's path; the
// store keeps state.checkpoints.num-retained checkpoints and the counter goes on.
func TestCheckpointStoreLayout(t *testing.T) {
	ha := &fakeflink.MemoryHA{}
	c := newCluster(t, fakeflink.Options{HA: ha})
	jm := c.Start(fakeflink.Config{Properties: haProps(fakeflink.PropNumRetained, "2")})
	for range 3 {
		require.NotEmpty(t, jm.CompleteCheckpoint(jobID))
	}
	cm, err := ha.Get(context.Background(), flinkha.JobConfigMapName(clusterID, jobID))
	require.NoError(t, err)
	assert.Equal(t, []int64{2, 3}, flinkha.CheckpointIDs(cm), "two retained, the oldest subsumed")
	assert.Equal(t, "4", cm.Data[flinkha.CheckpointCounterKey])
	for _, id := range flinkha.CheckpointIDs(cm) {
		v := cm.Data[flinkha.CheckpointKey(id)]
		assert.True(t, strings.HasPrefix(v, "rO0AB"), "a Java-serialized handle: %q", v)
		raw, err := base64.StdEncoding.DecodeString(v)
		require.NoError(t, err)
		assert.Contains(t, string(raw), "s3://bucket/ha/"+clusterID+"/completedCheckpoint", "the handle points into high-availability.storageDir")
		assert.NotContains(t, string(raw), "chk-", "the checkpoint's path is in the file, not the ConfigMap")
	}
	graph, err := ha.Get(context.Background(), flinkha.ClusterConfigMapName(clusterID))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(graph.Data[flinkha.ExecutionPlanKey(jobID)], "rO0AB"))
}

// TestLastStateRedeploy: with the job graph removed and the checkpoint store kept, a
// JobManager of the next revision runs main() under the same job ID and restores the newest
// completed checkpoint, whatever its savepoint path says; left in place, the graph of the
// old revision is recovered instead of the new spec.
func TestLastStateRedeploy(t *testing.T) {
	for _, tc := range []struct {
		name         string
		removeGraph  bool
		wantRevision string
		wantRecover  bool
	}{
		{name: "job graph removed: main() of the new revision restores the newest checkpoint", removeGraph: true, wantRevision: "rev-2"},
		{name: "job graph left: the old revision's graph is recovered", wantRevision: "rev-1", wantRecover: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ha := &fakeflink.MemoryHA{}
			c := newCluster(t, fakeflink.Options{HA: ha})
			old := c.Start(fakeflink.Config{Properties: haProps(), FromSavepoint: "s3://sp/first", Revision: "rev-1"})
			old.CompleteCheckpoint(jobID)
			newest := old.CompleteCheckpoint(jobID)
			old.Stop() // SIGTERM: the job is suspended, its HA data stays
			if tc.removeGraph {
				removeJobGraphs(t, ha)
			}
			next := c.Start(fakeflink.Config{Properties: haProps(), FromSavepoint: "s3://sp/first", Revision: "rev-2"})
			c.Advance(time.Second)
			require.True(t, next.Leads())
			assert.Equal(t, newest, next.RestoredFrom(jobID), "the newest completed checkpoint, not the savepoint path")
			ex := c.Executions()
			require.Len(t, ex, 2)
			assert.Equal(t, tc.wantRecover, ex[1].Recovered)
			assert.True(t, ex[1].RestoredCheckpoint)
			assert.Equal(t, tc.wantRevision, ex[1].Revision)
			assert.Equal(t, "rev-2", ex[1].ProcessRevision)
			assert.Equal(t, "file:/checkpoints/"+jobID+"/chk-3", next.CompleteCheckpoint(jobID), "checkpoint IDs go on from the store's counter")
			assert.Empty(t, c.Violations())
		})
	}
}

// TestSavepointAdvancesTheCheckpointCounter: a savepoint takes its ID from the job's
// CheckpointIDCounter, which lives in the job's ConfigMap.
func TestSavepointAdvancesTheCheckpointCounter(t *testing.T) {
	ha := &fakeflink.MemoryHA{}
	c := newCluster(t, fakeflink.Options{HA: ha})
	jm := c.Start(fakeflink.Config{Properties: haProps()})
	jm.CompleteCheckpoint(jobID)
	fc := restClient(t, jm.URL())
	_, err := fc.TriggerSavepoint(context.Background(), jobID, flinkclient.SavepointRequest{TriggerID: triggerID})
	require.NoError(t, err)
	st, err := fc.SavepointStatus(context.Background(), jobID, triggerID)
	require.NoError(t, err)
	require.True(t, st.Succeeded())
	cm, err := ha.Get(context.Background(), flinkha.JobConfigMapName(clusterID, jobID))
	require.NoError(t, err)
	assert.Equal(t, "3", cm.Data[flinkha.CheckpointCounterKey], "checkpoint 1, savepoint 2: next is 3")
}
