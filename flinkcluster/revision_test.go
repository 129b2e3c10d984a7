package flinkcluster_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// revisionSpec is a job cluster with every part that the revision rules look into.
func revisionSpec() *v1beta1.FlinkClusterSpec {
	return &v1beta1.FlinkClusterSpec{
		FlinkVersion:    "2.2.1",
		Image:           v1beta1.ImageSpec{Name: "flink:2.2.1"},
		FlinkProperties: map[string]string{"taskmanager.numberOfTaskSlots": "2"},
		JobManager:      &v1beta1.JobManagerSpec{},
		TaskManager:     &v1beta1.TaskManagerSpec{Replicas: ptr.To[int32](2)},
		Job:             &v1beta1.JobSpec{JarFile: ptr.To("/opt/job.jar"), SavepointsDir: ptr.To("s3://sp")},
	}
}

func TestRedeployNeeded(t *testing.T) {
	cases := []struct {
		name   string
		change func(*v1beta1.FlinkClusterSpec)
		want   bool
	}{
		{"redeploy: a flinkProperties value", func(s *v1beta1.FlinkClusterSpec) { s.FlinkProperties["a"] = "1" }, true},
		{"redeploy: the image", func(s *v1beta1.FlinkClusterSpec) { s.Image.Name = "flink:2.3.0" }, true},
		{"redeploy: the job arguments", func(s *v1beta1.FlinkClusterSpec) { s.Job.Args = []string{"x"} }, true},
		{"redeploy: the upgrade mode", func(s *v1beta1.FlinkClusterSpec) { s.Job.UpgradeMode = ptr.To(v1beta1.UpgradeModeStateless) }, true},
		{"no redeploy: cancelRequested", func(s *v1beta1.FlinkClusterSpec) { s.Job.CancelRequested = ptr.To(true) }, false},
		{"no redeploy: savepointGeneration", func(s *v1beta1.FlinkClusterSpec) { s.Job.SavepointGeneration = 3 }, false},
		{"no redeploy: scheduled savepoints and their disposal", func(s *v1beta1.FlinkClusterSpec) {
			s.Job.AutoSavepointSeconds = ptr.To[int32](60)
			s.Job.SavepointsToKeep = ptr.To[int32](3)
		}, false},
		{"no redeploy: takeSavepointOnUpdate, maxStateAgeToRestoreSeconds", func(s *v1beta1.FlinkClusterSpec) {
			s.Job.TakeSavepointOnUpdate = ptr.To(false)
			s.Job.MaxStateAgeToRestoreSeconds = ptr.To[int32](60)
		}, false},
		{"no redeploy: restart and cleanup policies", func(s *v1beta1.FlinkClusterSpec) {
			s.Job.RestartPolicy = ptr.To(v1beta1.JobRestartPolicyFromSavepointOnFailure)
			s.Job.CleanupPolicy = &v1beta1.CleanupPolicy{}
		}, false},
		{"no redeploy: TaskManager replicas", func(s *v1beta1.FlinkClusterSpec) { s.TaskManager.Replicas = ptr.To[int32](9) }, false},
		{"no redeploy: an Ingress, a PodDisruptionBudget, an autoscaler", func(s *v1beta1.FlinkClusterSpec) {
			s.JobManager.Ingress = &v1beta1.JobManagerIngressSpec{HostFormat: ptr.To("x")}
			s.PodDisruptionBudget = &policyv1.PodDisruptionBudgetSpec{}
			s.TaskManager.HorizontalPodAutoscaler = &v1beta1.HorizontalPodAutoscalerSpec{MaxReplicas: 3}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := revisionSpec(), revisionSpec()
			tc.change(cur)
			got, err := flinkcluster.RedeployNeeded(old, cur)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			h0, err := flinkcluster.RevisionHash(old)
			require.NoError(t, err)
			h1, err := flinkcluster.RevisionHash(cur)
			require.NoError(t, err)
			assert.Equal(t, tc.want, h0 != h1, "RevisionHash names a new revision exactly when RedeployNeeded says so")
		})
	}
}

// TestRevisionHashLeavesTheSpecAlone: the fields left out of the hash stay in the spec the
// caller passed (the controller hashes the cluster it then reconciles).
func TestRevisionHashLeavesTheSpecAlone(t *testing.T) {
	s := revisionSpec()
	s.Job.CancelRequested = ptr.To(true)
	s.JobManager.Ingress = &v1beta1.JobManagerIngressSpec{}
	want := s.DeepCopy()
	_, err := flinkcluster.RevisionHash(s)
	require.NoError(t, err)
	assert.Equal(t, want, s)
}

// TestRevisionHashIsStable: a stored cluster's recorded revision keeps its name across
// releases, or every controller upgrade would redeploy every job.
func TestRevisionHashIsStable(t *testing.T) {
	h, err := flinkcluster.RevisionHash(revisionSpec())
	require.NoError(t, err)
	assert.Equal(t, "e4f2f1a93a", h)
}
