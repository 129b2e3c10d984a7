package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
)

func TestFlinkCallKindGroupsCallsAcrossClusters(t *testing.T) {
	for _, tc := range []struct {
		name, method, path, want string
	}{
		{"the overview keeps its path", "GET", "/jobs/overview", "GET /jobs/overview"},
		{"a job ID is replaced", "GET", "/jobs/5a1f3e0c8d2b4a6f9e7c1d3b5a7f9e0c", "GET /jobs/:id"},
		{"job and trigger IDs are replaced", "GET", "/jobs/5a1f3e0c8d2b4a6f9e7c1d3b5a7f9e0c/savepoints/0f1e2d3c4b5a69788796a5b4c3d2e1f0", "GET /jobs/:id/savepoints/:id"},
		{"a checkpoint number is replaced", "GET", "/jobs/5a1f3e0c8d2b4a6f9e7c1d3b5a7f9e0c/checkpoints/details/42", "GET /jobs/:id/checkpoints/details/:n"},
		{"a dashed ID is replaced", "POST", "/jars/623e39fb-70c3-44f1-811f-561ec4a28d75/run", "POST /jars/:id/run"},
		{"a short hex word is kept", "GET", "/jobs/ab/config", "GET /jobs/ab/config"},
		{"the root stays the root", "GET", "/", "GET /"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, flinkCallKind(tc.method, tc.path))
		})
	}
}

func TestSteadyFiguresArePerClusterPerMinute(t *testing.T) {
	calls := map[string]int{"GET /jobs/overview": 200, "GET /jobs/:id": 100}
	// 100 clusters over 30 s: 3 CPU s are 0.06 CPU s per cluster per minute; 300 calls are 6.
	s := steadyFigures(100, 2, 100, 30, 3, calls)
	assert.InDelta(t, 0.06, s.CPUSecondsPerClusterMinute, 1e-9)
	assert.InDelta(t, 6.0, s.FlinkCallsPerClusterMinute, 1e-9)
	assert.InDelta(t, 1000.0, s.ClustersPerCore, 1e-6, "60 core-seconds a minute / 0.06")
	assert.Equal(t, calls, s.FlinkCalls)
	assert.Equal(t, 2, s.Replicas)
	assert.Equal(t, 100, s.Running)

	t.Run("no CPU used: no clusters-per-core figure", func(t *testing.T) {
		s := steadyFigures(100, 1, 100, 30, 0, nil)
		assert.Zero(t, s.ClustersPerCore)
		assert.Zero(t, s.FlinkCallsPerClusterMinute)
	})
	t.Run("no window: no per-minute figures", func(t *testing.T) {
		s := steadyFigures(100, 1, 100, 0, 3, calls)
		assert.Zero(t, s.CPUSecondsPerClusterMinute)
		assert.Zero(t, s.ClustersPerCore)
	})
}

func TestCallsSinceCountsOnlyTheNewCalls(t *testing.T) {
	c := &callCounter{}
	assert.Empty(t, callsSince(nil, c.snapshot()))
	before := map[string]int{"GET /jobs/overview": 5, "GET /config": 1}
	after := map[string]int{"GET /jobs/overview": 8, "GET /config": 1, "GET /jobs/:id": 2}
	assert.Equal(t, map[string]int{"GET /jobs/overview": 3, "GET /jobs/:id": 2}, callsSince(before, after))
}

func TestFloorObjectsAreTheControllersWorkloadsWithoutOwner(t *testing.T) {
	sample, err := benchCluster()
	require.NoError(t, err)
	objs, err := floorObjects(sample, 3, floorNamespace, false)
	require.NoError(t, err)
	require.Len(t, objs, 3)
	for i, cluster := range objs {
		fc := sample.DeepCopy()
		fc.Name, fc.Namespace = clusterName(i), floorNamespace
		require.Len(t, cluster, 4)
		for _, obj := range cluster {
			assert.Equal(t, floorNamespace, obj.GetNamespace())
			assert.Empty(t, obj.GetOwnerReferences(), "no FlinkCluster stands behind the floor")
		}
		cm, svc := cluster[0].(*corev1.ConfigMap), cluster[1].(*corev1.Service)
		assert.Equal(t, resources.ConfigMapName(fc.Name), cm.Name)
		assert.Equal(t, resources.JobManagerName(fc.Name), svc.Name)
		tm := cluster[2].(*appsv1.StatefulSet)
		assert.Equal(t, resources.TaskManagerName(fc.Name), tm.Name)
		assert.Equal(t, resources.TaskManagerReplicas(fc), *tm.Spec.Replicas, "the TaskManagers the cluster asks for")
		d := cluster[3].(*appsv1.Deployment)
		assert.Equal(t, resources.JobManagerName(fc.Name), d.Name)
		assert.Equal(t, int32(1), *d.Spec.Replicas)
		assert.Equal(t, resources.ComponentJobManager, d.Spec.Template.Labels[resources.LabelComponent])
		want := resources.JobManagerPodTemplate(fc, resources.Deploy{})
		assert.Equal(t, want.Spec.Containers[0].Resources, d.Spec.Template.Spec.Containers[0].Resources, "the JobManager's resources")
	}
	assert.NotEqual(t, objs[0][3].(*appsv1.Deployment).Spec.Template.Labels[resources.LabelJobID], objs[1][3].(*appsv1.Deployment).Spec.Template.Labels[resources.LabelJobID], "a job ID each")
	assert.Empty(t, clustersOf(objs), "no FlinkCluster in the control plane's floor")

	// The Flink floor: the FlinkCluster first, then the same objects.
	withCluster, err := floorObjects(sample, 3, floorNamespace, true)
	require.NoError(t, err)
	require.Len(t, withCluster, 3)
	for i, cluster := range withCluster {
		require.Len(t, cluster, 5)
		fc := cluster[0].(*v1beta1.FlinkCluster)
		assert.Equal(t, clusterName(i), fc.Name)
		assert.Equal(t, floorNamespace, fc.Namespace)
		assert.Equal(t, sample.Spec, fc.Spec, "the create phase's cluster")
		assert.Equal(t, objs[i], cluster[1:], "the same objects")
	}
	assert.Len(t, clustersOf(withCluster), 3)
}

func TestPodRunningNeedsRunningAndReady(t *testing.T) {
	ready := func(s corev1.ConditionStatus) []corev1.PodCondition {
		return []corev1.PodCondition{{Type: corev1.PodReady, Status: s}}
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"running and ready", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready(corev1.ConditionTrue)}}, true},
		{"running without a Ready condition", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, true},
		{"running, not ready", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready(corev1.ConditionFalse)}}, false},
		{"pending", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, false},
		{"being deleted", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready(corev1.ConditionTrue)}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, podRunning(&tc.pod))
		})
	}
}

func TestNodesLeaveRoomForEveryPodOfTheClusters(t *testing.T) {
	sample, err := benchCluster()
	require.NoError(t, err)
	require.EqualValues(t, 2, *sample.Spec.TaskManager.Replicas, "the sample's TaskManagers")
	// Two JobManagers (an update's old and next) and two TaskManagers a cluster.
	assert.Equal(t, 5, nodesFor(sample, 100))
	assert.Equal(t, 41, nodesFor(sample, 1000))
	assert.Equal(t, 2, nodesFor(sample, 1))
}
