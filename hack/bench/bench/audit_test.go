package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// auditSample is a kube-apiserver audit log at the Metadata level, trimmed to the fields the
// attribution reads and a few it does not.
const auditSample = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"1","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/b/configmaps/c0000-ha","verb":"get","user":{"username":"flink-admission-controller","groups":["system:masters","system:authenticated"]},"userAgent":"flink-admission/v0.0.0 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"configmaps","namespace":"b","name":"c0000-ha","apiVersion":"v1"},"responseStatus":{"code":200}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"2","stage":"ResponseComplete","verb":"patch","user":{"username":"flink-admission-controller"},"userAgent":"flink-admission/v0.0.0","objectRef":{"resource":"flinkclusters","subresource":"status","apiGroup":"flinkoperator.k8s.io"}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"3","stage":"ResponseStarted","verb":"watch","user":{"username":"flink-admission-controller"},"userAgent":"flink-admission/v0.0.0","objectRef":{"resource":"pods"}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"3","stage":"ResponseComplete","verb":"watch","user":{"username":"flink-admission-controller"},"userAgent":"flink-admission/v0.0.0","objectRef":{"resource":"pods"}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"4","stage":"ResponseComplete","verb":"update","user":{"username":"bench-simulated-flink"},"userAgent":"bench/v0.0.0","objectRef":{"resource":"configmaps"}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"5","stage":"ResponseComplete","verb":"create","user":{"username":"admin"},"userAgent":"kube-controller-manager/v1.37.0 (linux/amd64) kubernetes/abc/system:serviceaccount:kube-system:replicaset-controller","objectRef":{"resource":"pods"}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"6","stage":"ResponseComplete","verb":"create","user":{"username":"admin"},"userAgent":"bench/v0.0.0","objectRef":{"resource":"flinkclusters","apiGroup":"flinkoperator.k8s.io"}}
{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"7","stage":"ResponseComplete","verb":"get","user":{"username":"system:apiserver"},"userAgent":"kube-apiserver/v1.37.0","requestURI":"/readyz"}
`

func TestAuditLogAttributesEachRequestOnceToItsClient(t *testing.T) {
	r, err := parseAuditLog(strings.NewReader(auditSample))
	require.NoError(t, err)
	assert.Equal(t, auditRequests{
		clientController:     {"GET configmaps": 1, "PATCH flinkclusters/status": 1, "WATCH pods": 1},
		clientSimulatedFlink: {"PUT configmaps": 1},
		clientControlPlane:   {"POST pods": 1, "GET (non-resource)": 1},
		clientBench:          {"POST flinkclusters": 1},
	}, r, "a watch counts when it starts, not again when it ends")

	a := r.attribute(2, 0.5)
	assert.InDelta(t, 1.5, a.ControllerRequestsPerCluster, 1e-9)
	assert.Equal(t, map[string]float64{"GET configmaps": 0.5, "PATCH flinkclusters/status": 0.5, "WATCH pods": 0.5}, a.ControllerRequestsByKind)
	assert.Equal(t, map[string]float64{clientController: 1.5, clientSimulatedFlink: 0.5, clientControlPlane: 1, clientBench: 0.5}, a.RequestsPerClusterByClient)
	assert.Empty(t, r.attribute(4, 0.5).ControllerRequestsByKind, "kinds under the threshold are left out of the split, not the total")
	assert.Equal(t, "controller 1.5, controlPlane 1.0, bench 0.5, simulatedFlink 0.5", clientRequests(a))
}

func TestAuditLogSpanEndsAtTheLastCompleteLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	log := auditLog{path: path}
	off, err := log.offset()
	require.NoError(t, err)
	assert.Zero(t, off, "no log yet: nothing logged")

	lines := strings.SplitAfter(auditSample, "\n")
	first := strings.Join(lines[:2], "")
	require.NoError(t, os.WriteFile(path, []byte(first+lines[2][:40]), 0o600))
	mid, err := log.offset()
	require.NoError(t, err)
	assert.Equal(t, int64(len(first)), mid, "an event half written belongs to the next span")

	require.NoError(t, os.WriteFile(path, []byte(auditSample), 0o600))
	end, err := log.offset()
	require.NoError(t, err)
	before, err := log.between(0, mid)
	require.NoError(t, err)
	after, err := log.between(mid, end)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"GET configmaps": 1, "PATCH flinkclusters/status": 1}, before[clientController])
	assert.Equal(t, map[string]float64{"WATCH pods": 1}, after[clientController])
}

func TestSteadyRequestsArePerClusterPerMinute(t *testing.T) {
	var s ControllerSteady
	s.setRequests(RequestAttribution{ControllerRequestsPerCluster: 0.3, ControllerRequestsByKind: map[string]float64{"GET pods": 0.1, "PUT leases": 0.2},
		RequestsPerClusterByClient: map[string]float64{clientController: 0.3, clientControlPlane: 3}}, 100, 120)
	assert.InDelta(t, 0.15, s.ControllerRequestsPerClusterMinute, 1e-9)
	assert.InDelta(t, 0.05, s.ControllerRequestsByKind["GET pods"], 1e-9)
	assert.InDelta(t, 0.05, s.ControllerClusterRequestsPerClusterMinute, 1e-9, "the shard Leases are a cost per replica")
	assert.InDelta(t, 10, s.ControllerLeaseRequestsPerMinute, 1e-9, "20 renewals in 2 minutes")
	assert.InDelta(t, 1.5, s.RequestsPerClusterMinuteByClient[clientControlPlane], 1e-9)
}
