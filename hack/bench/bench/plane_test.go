package bench

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const apiServerMetricsSample = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 900
apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="GET",version="v1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="flinkoperator.k8s.io",resource="flinkclusters",scope="resource",subresource="status",verb="PATCH",version="v1beta1"} 300
apiserver_request_total{code="201",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 2
# HELP kube_apiserver_clusterip_allocator_allocation_duration_seconds Duration in seconds to allocate a Cluster IP by ServiceCIDR
# TYPE kube_apiserver_clusterip_allocator_allocation_duration_seconds histogram
kube_apiserver_clusterip_allocator_allocation_duration_seconds_bucket{scope="dynamic",le="+Inf"} 100
kube_apiserver_clusterip_allocator_allocation_duration_seconds_sum{scope="dynamic"} 4.5
kube_apiserver_clusterip_allocator_allocation_duration_seconds_count{scope="dynamic"} 100
`

func TestAPIServerMetricsCountRequestsByVerbAndResource(t *testing.T) {
	r, err := parseAPIServerMetrics([]byte(apiServerMetricsSample))
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"GET configmaps": 1000, "PATCH flinkclusters/status": 300, "PUT leases": 2}, r.requests)
	assert.Equal(t, allocations{count: 100, seconds: 4.5}, r.alloc)
}

func TestPlaneUsageIsPerClusterAndListsOnlyKindsAboveTheThreshold(t *testing.T) {
	start := planeReading{cpu: map[string]float64{"kube-apiserver": 10, "etcd": 1},
		requests: map[string]float64{"GET configmaps": 100, "PUT leases": 1}}
	end := planeReading{cpu: map[string]float64{"kube-apiserver": 50, "etcd": 3},
		requests: map[string]float64{"GET configmaps": 1100, "PATCH flinkclusters/status": 300, "PUT leases": 3}}
	u := end.usageSince(start, 100)
	assert.Equal(t, map[string]float64{"kube-apiserver": 40, "etcd": 2}, u.CPUSeconds)
	assert.InDelta(t, 13.02, u.APIRequestsPerCluster, 1e-9, "every request counts in the total")
	assert.Equal(t, map[string]float64{"GET configmaps": 10, "PATCH flinkclusters/status": 3}, u.APIRequestsByKind, "2 lease renewals over 100 clusters are not the clusters'")
	assert.Equal(t, []string{"GET configmaps 10.0"}, u.topKinds(1))
	assert.Equal(t, "kube-apiserver 40.0 s, etcd 2.0 s", componentCPU(u))
}

func TestChildCPUSecondsCountsOnlyTheNamedChildren(t *testing.T) {
	busy := exec.Command("sh", "-c", "while :; do :; done")
	require.NoError(t, busy.Start())
	t.Cleanup(func() { _ = busy.Process.Kill(); _ = busy.Wait() })

	require.Eventually(t, func() bool {
		cpu, err := childCPUSeconds([]string{"sh"})
		return err == nil && cpu["sh"] > 0
	}, time.Minute, 50*time.Millisecond, "a busy child's CPU time shows")
	cpu, err := childCPUSeconds([]string{"kube-apiserver"})
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"kube-apiserver": 0}, cpu, "a child of another program is not counted")
}
