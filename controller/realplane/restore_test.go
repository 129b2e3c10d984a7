package realplane_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// TestRealControlPlaneAllowNonRestoredStateInDeploymentMode checks allowNonRestoredState on the real
// control plane, Flink 2.2, Deployment mode: the first container restores a savepoint that
// holds a removed operator's state, through --fromSavepoint $(FLINK_ADMISSION_RESTORE_PATH)
// --allowNonRestoredState; once the job ran, a container restart reads the ConfigMap's new
// entry (ResumeFromHAOnly) and recovers the job from HA, with the same pod template.
func TestRealControlPlaneAllowNonRestoredStateInDeploymentMode(t *testing.T) {
	t.Parallel()
	const sp = "file:///savepoints/with-removed-operator"
	h := newHarness(t, depMode, func(w *builder.FlinkClusterWrapper) {
		w.FlinkVersion("2.2").FromSavepoint(sp).AllowNonRestoredState(true)
	}, func(h *harness) { h.flink.SetUnclaimedState(sp, "removed-map") })
	wl, pod := h.runJob()
	id := h.jobID()
	first := h.process(pod)
	assert.Equal(t, sp, first.Config().FromSavepoint, "the first container restores the savepoint from its command line")
	assert.True(t, first.Config().AllowNonRestoredState)

	h.savepointLeavesConfiguration(wl)
	cm := &corev1.ConfigMap{}
	require.NoError(t, k8s.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: resources.ConfigMapName(h.name)}, cm))
	assert.Equal(t, controller.ResumeFromHAOnly, cm.Data[resources.KeyRestorePath], "the variable's entry follows the configuration")

	// A checkpoint after the restore: the recovery must take it, not the savepoint.
	first.CompleteCheckpoint(id)
	first.Kill()
	h.eventually("the container restarted", func() bool {
		cur, ok := h.podNow(pod)
		return ok && len(cur.Status.ContainerStatuses) == 1 && cur.Status.ContainerStatuses[0].RestartCount >= 1
	})
	h.recoveredOn(id)
	again := h.process(pod)
	assert.Equal(t, controller.ResumeFromHAOnly, again.Config().FromSavepoint,
		"the restarted container's command line has the ConfigMap's new value")
	assert.Equal(t, v1beta1.JobStateRunning, h.jobState())
	var restored []string
	for _, e := range h.flink.Executions() {
		if e.JobID == id {
			restored = append(restored, e.RestoredFrom)
		}
	}
	require.Len(t, restored, 2, "the first run and the recovery")
	assert.Equal(t, sp, restored[0])
	assert.NotEqual(t, sp, restored[1], "recovered from the checkpoint in HA, not rewound to the savepoint")
}
