//go:build long

package bench

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller"
)

// TestRunControllerRecoversEveryJobAndSurvivesAReplicasKill runs section 6 small, on the
// real control plane, with two replicas (the servers are this test binary acting as serve):
// the floor and the Flink floor (the same without the controller) are measured; every job reaches Running through the proxy to the simulated Flink;
// after every JobManager pod is deleted, every job runs again, led by a new pod's process,
// with its job ID kept; every cluster's update completes though a replica is killed
// mid-way, no job run twice; and the quiet window counts the Flink calls. It takes minutes
// (the control plane, the JobManagers' preStop delay, a quiet window of a poll cycle) and
// what it proves of the controller, controller/realplane proves too: it runs in make
// test-long (-tags long), not in make test.
func TestRunControllerRecoversEveryJobAndSurvivesAReplicasKill(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	t.Setenv(helperServeEnv, "1")
	res, err := RunController(t.Context(), ControllerOptions{
		Binary: self, Clusters: 3, Replicas: 2, Wait: 3 * time.Minute, SteadyWindow: controller.DefaultSteadyPollInterval + 2*time.Second, LogDir: t.TempDir(),
	})
	require.NoError(t, err)
	assert.Equal(t, 3, res.Clusters)
	assert.Equal(t, 2, res.Replicas)
	assert.Equal(t, 2, res.Nodes, "room for every pod of 3 clusters, and a node to spare (nodesFor)")
	require.Len(t, res.Phases, 3)
	assert.Empty(t, res.Skipped)
	for _, p := range res.Phases {
		assert.Equal(t, 3, p.Done, "%s: every cluster", p.Name)
		assert.Zero(t, p.IDsChanged, "%s: job IDs kept, no job run twice", p.Name)
		assert.Positive(t, p.ReconcilesPerCluster, p.Name)
		assert.Positive(t, p.RSSKiB, p.Name)
	}
	assert.Positive(t, res.Phases[0].FloorSeconds)
	assert.Equal(t, 3, res.Phases[0].FloorDone)
	require.NotNil(t, res.Phases[0].FlinkFloor)
	assert.Equal(t, 3, res.Phases[0].FlinkFloor.Done, "without the controller, every job runs on the simulated Flink")
	assert.Positive(t, res.Phases[0].FlinkFloor.Requests.RequestsPerClusterByClient[clientSimulatedFlink], "the Flink floor's Flink writes its HA ConfigMaps")
	assert.Contains(t, res.Phases[2].Killed, "sharing the fleet")
	require.NotNil(t, res.Steady)
	assert.Equal(t, 3, res.Steady.Running)
	assert.Equal(t, 1, res.Steady.Replicas, "the killed replica is not measured")
	assert.Positive(t, res.Steady.FlinkCallsPerClusterMinute, "the controller polls Flink while the jobs run")
}
