package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// Issue 17 hole 6: what in the HA ConfigMaps shows that a job ended globally. Only the HA
// data a job's end leaves counts: the job's graph and checkpoint ConfigMap gone, the cluster
// ConfigMap kept from before the JobManager's current container. HA ConfigMaps deleted by
// someone come back created by the running JobManager, after its start: they say nothing.
func TestEndedInHAReadsWhatTheJobsEndLeaves(t *testing.T) {
	const jobID = "0123456789abcdef0123456789abcdef"
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	started := t0.Add(time.Hour) // the JobManager's current container
	fc := builder.MakeAppCluster("wc").Deployment().Obj()
	fc.Status.Components.Job = &v1beta1.JobStatus{ID: jobID, State: v1beta1.JobStateRunning}
	clusterID := resources.HAClusterID(fc)
	clusterCM := func(created time.Time, graphs ...string) corev1.ConfigMap {
		cm := flinkha.NewConfigMap(fc.Namespace, flinkha.ClusterConfigMapName(clusterID), clusterID)
		cm.CreationTimestamp = metav1.NewTime(created)
		cm.Data = map[string]string{}
		for _, id := range graphs {
			cm.Data[flinkha.JobGraphKey(id)] = "graph"
		}
		return *cm
	}
	jobCM := *flinkha.NewConfigMap(fc.Namespace, flinkha.JobConfigMapName(clusterID, jobID), clusterID)
	pod := builder.SetRunning(builder.Pod("wc", "wc-jobmanager-1", "wc-r1", t0), started)

	for _, tc := range []struct {
		name  string
		cms   []corev1.ConfigMap
		ended bool
	}{
		{"graph and checkpoint ConfigMap gone, the cluster ConfigMap older than the container: ended", []corev1.ConfigMap{clusterCM(t0)}, true},
		{"the job graph is still stored: it may be recovered", []corev1.ConfigMap{clusterCM(t0, jobID)}, false},
		{"the checkpoint ConfigMap is still there: it may be recovered", []corev1.ConfigMap{clusterCM(t0), jobCM}, false},
		{"the cluster ConfigMap created after the container started: HA deleted by someone", []corev1.ConfigMap{clusterCM(started.Add(time.Second))}, false},
		{"the cluster ConfigMap created as the container started: not known to be older", []corev1.ConfigMap{clusterCM(started)}, false},
		{"no HA ConfigMap at all", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &cycle{fc: fc, st: &fc.Status, mode: v1beta1.JobManagerDeploymentTypeDeployment,
				obs: observed{pod: pod, ha: haView{configMaps: tc.cms}}}
			got := c.endedInHA()
			assert.Equal(t, tc.ended, got != "", got)
			if tc.ended {
				assert.Contains(t, got, flinkha.JobConfigMapName(clusterID, jobID))
			}
		})
	}

	t.Run("ZooKeeper HA: the controller cannot see its data, nothing counts", func(t *testing.T) {
		zk := fc.DeepCopy()
		zk.Spec.FlinkProperties["high-availability.type"] = "zookeeper"
		c := &cycle{fc: zk, st: &zk.Status, mode: v1beta1.JobManagerDeploymentTypeDeployment,
			obs: observed{pod: pod, ha: haView{configMaps: []corev1.ConfigMap{clusterCM(t0)}}}}
		assert.Empty(t, c.endedInHA())
	})
}

// Issue 37, found on real Flink 2.2.1: what in the HA ConfigMaps shows that the HA data of
// the job was deleted behind it: endedInHA's other half, a cluster ConfigMap created by the
// JobManager's current container.
func TestHAMetadataGoneReadsTheClusterConfigMapCreatedAgain(t *testing.T) {
	const jobID = "0123456789abcdef0123456789abcdef"
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	started := t0.Add(time.Hour) // the JobManager's current container
	build := func(mode v1beta1.JobManagerDeploymentType) *v1beta1.FlinkCluster {
		w := builder.MakeAppCluster("wc")
		if mode == v1beta1.JobManagerDeploymentTypeDeployment {
			w = w.Deployment()
		}
		fc := w.Obj()
		fc.Status.Components.Job = &v1beta1.JobStatus{ID: jobID, State: v1beta1.JobStateRunning}
		return fc
	}
	dep := v1beta1.JobManagerDeploymentTypeDeployment
	clusterID := resources.HAClusterID(build(dep))
	clusterCM := func(created time.Time, graphs ...string) corev1.ConfigMap {
		cm := flinkha.NewConfigMap("default", flinkha.ClusterConfigMapName(clusterID), clusterID)
		cm.CreationTimestamp = metav1.NewTime(created)
		cm.Data = map[string]string{}
		for _, id := range graphs {
			cm.Data[flinkha.JobGraphKey(id)] = "graph"
		}
		return *cm
	}
	jobCM := *flinkha.NewConfigMap("default", flinkha.JobConfigMapName(clusterID, jobID), clusterID)
	pod := builder.SetRunning(builder.Pod("wc", "wc-jobmanager-1", "wc-r1", t0), started)
	recreated := clusterCM(started.Add(5 * time.Second))
	for _, tc := range []struct {
		name string
		mode v1beta1.JobManagerDeploymentType
		pod  *corev1.Pod
		cms  []corev1.ConfigMap
		gone bool
	}{
		{"graph and checkpoint ConfigMap gone, the cluster ConfigMap created by the current container: gone", dep, pod, []corev1.ConfigMap{recreated}, true},
		{"the cluster ConfigMap older than the container: the job ended globally (endedInHA), not deleted", dep, pod, []corev1.ConfigMap{clusterCM(t0)}, false},
		{"the cluster ConfigMap created in the second the container started: not known", dep, pod, []corev1.ConfigMap{clusterCM(started)}, false},
		{"the job graph stored again: recoverable", dep, pod, []corev1.ConfigMap{clusterCM(started.Add(5*time.Second), jobID)}, false},
		{"the checkpoint ConfigMap there: a last-state deploy's store, recoverable", dep, pod, []corev1.ConfigMap{recreated, jobCM}, false},
		{"no cluster ConfigMap yet (the JobManager restarting): not known", dep, pod, nil, false},
		{"no JobManager pod: nothing to compare with", dep, nil, []corev1.ConfigMap{recreated}, false},
		{"Job mode: its JobManager is never restarted to rerun main()", v1beta1.JobManagerDeploymentTypeJob, pod, []corev1.ConfigMap{recreated}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := build(tc.mode)
			c := &cycle{fc: fc, st: &fc.Status, mode: tc.mode, obs: observed{pod: tc.pod, ha: haView{configMaps: tc.cms}}}
			got := c.haMetadataGone()
			assert.Equal(t, tc.gone, got != "", got)
			if tc.gone {
				assert.Contains(t, got, "deleted behind the job")
			}
		})
	}
}
