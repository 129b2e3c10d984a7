package realplane_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// TestRealControlPlaneHA has the HA rows on the real control plane.
func TestRealControlPlaneHA(t *testing.T) {
	dep := v1beta1.JobManagerDeploymentTypeDeployment
	for _, tc := range []struct {
		mode v1beta1.JobManagerDeploymentType
		name string
		run  func(t *testing.T, h *harness)
	}{
		{dep, "the HA ConfigMaps deleted under the leader: it exits, the kubelet restarts the container, main() fails on ResumeFromHAOnly instead of starting empty, SavepointRequired", haDeletedUnderTheLeader},
	} {
		t.Run(string(tc.mode)+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newHarness(t, tc.mode, nil))
		})
	}
}

func haDeletedUnderTheLeader(t *testing.T, h *harness) {
	pod, jm, id := h.runningJob()
	require.NoError(t, h.flink.LoseHA())
	st, ok := jm.ExitStatus()
	require.True(t, ok, "the leader exits")
	assert.Equal(t, fakeflink.ExitHALost, st.Code)

	h.eventually("the container restarted", func() bool {
		cur, ok := h.podNow(pod)
		return ok && len(cur.Status.ContainerStatuses) == 1 && cur.Status.ContainerStatuses[0].RestartCount >= 1
	})
	h.eventually("the job Failed with SavepointRequired=True/HAMetadataMissing", func() bool {
		fc := h.get()
		c := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionSavepointRequired)
		return h.job().State == v1beta1.JobStateFailed && c != nil && c.Status == "True" && c.Reason == controller.ConditionReasonHAMetadataMissing
	})
	c := meta.FindStatusCondition(h.get().Status.Conditions, controller.ConditionDeploymentFailed)
	require.NotNil(t, c)
	assert.Equal(t, controller.ConditionReasonHAMetadataMissing, c.Reason)
	assert.Contains(t, c.Message, controller.ResumeFromHAOnly)
	runs := 0
	for _, e := range h.flink.Executions() {
		if e.JobID == id {
			runs++
		}
	}
	assert.Equal(t, 1, runs, "main() never started the job again from empty state")
}
