package realplane_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/flinkcluster"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// Last-state rows: upgradeMode on the real control plane. The
// HA ConfigMaps (job graphs, checkpoint stores) are real ConfigMaps the fake Flink writes.

// newLastStateHarness is newHarness for a Deployment-mode cluster that build adjusts before
// it is created (newHarness creates its cluster as it is).
func newLastStateHarness(t *testing.T, build func(fc *v1beta1.FlinkCluster)) *harness {
	t.Helper()
	h := newRow(t, depMode, "laststate")
	fc := builder.MakeAppCluster(h.name).Namespace(h.ns).UID("").Deployment().Shutdown(1, 20).Obj()
	build(fc)
	h.newFlink(fc)
	require.NoError(t, k8s.Create(h.ctx, fc))
	return h
}

// updateArgs changes the job's arguments: a new revision.
func (h *harness) updateArgs(args ...string) string {
	h.t.Helper()
	var rev string
	require.NoError(h.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fc := h.get()
		rev = fc.Status.Revision.CurrentRevision
		fc.Spec.Job.Args = args
		return k8s.Update(h.ctx, fc)
	}))
	return rev
}

// runsNextRevision waits until the job runs a revision other than old, and returns its status.
func (h *harness) runsNextRevision(old string) v1beta1.JobStatus {
	h.t.Helper()
	h.eventually("the job Running on the next revision", func() bool {
		fc := h.get()
		j := fc.Status.Components.Job
		return j != nil && j.State == v1beta1.JobStateRunning && fc.Status.Revision.CurrentRevision != old &&
			fc.Status.Revision.CurrentRevision == fc.Status.Revision.NextRevision
	})
	return h.job()
}

// lastExecution is the newest execution of a job ID in the fake Flink.
func (h *harness) lastExecution(id string) fakeflink.Execution {
	var last fakeflink.Execution
	for _, e := range h.flink.Executions() {
		if e.JobID == id {
			last = e
		}
	}
	return last
}

// hasEvent reports whether the cluster has an Event with reason whose note contains text.
func (h *harness) hasEvent(reason, text string) bool {
	list := &corev1.EventList{}
	if err := k8s.List(h.ctx, list); err != nil {
		return false
	}
	for _, e := range list.Items {
		if e.Namespace == h.ns && e.Reason == reason && strings.Contains(e.Message, text) {
			return true
		}
	}
	return false
}

func TestLastStateOnTheRealControlPlane(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"a last-state upgrade of a running Deployment-mode job: no savepoint, the same job ID, the newest checkpoint restored by the next revision", lastStateUpgrade},
		{"a crash-looping job recovered by last-state: the update cannot take a savepoint and restores the newest checkpoint kept in HA", crashLoopRecoveredByLastState},
		{"a checkpoint older than the max checkpoint age is refused: the running job is stopped with a savepoint instead", tooOldCheckpointRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

func lastStateUpgrade(t *testing.T) {
	h := newLastStateHarness(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.UpgradeMode = ptr.To(v1beta1.UpgradeModeLastState) })
	pod, jm, id := h.runningJob()
	jm.CompleteCheckpoint(id)
	newest := jm.CompleteCheckpoint(id)
	require.NotEmpty(t, newest)
	old := h.updateArgs("--v2")
	j := h.runsNextRevision(old)
	assert.Equal(t, id, j.ID, "last-state keeps the job ID")
	assert.Empty(t, j.SavepointLocation, "no savepoint taken")
	_, njm := h.runningPod(pod.UID)
	assert.Equal(t, newest, njm.RestoredFrom(id), "the next revision's main() restored the newest checkpoint")
	e := h.lastExecution(id)
	assert.True(t, e.RestoredCheckpoint && !e.Recovered, "from the kept checkpoint store, not the old job graph: %+v", e)
	assert.True(t, h.hasEvent(controller.ReasonLastStateRedeploy, id))
}

func crashLoopRecoveredByLastState(t *testing.T) {
	h := newLastStateHarness(t, func(*v1beta1.FlinkCluster) {}) // savepoint mode: last-state is its fallback
	pod, jm, id := h.runningJob()
	newest := jm.CompleteCheckpoint(id)
	// The old pod's container keeps crashing (its process killed as soon as it starts).
	h.keepCrashing(pod)
	h.waitJob(v1beta1.JobStateLost)
	old := h.updateArgs("--fixed")
	// The next revision's JobManager leads once the dead one's lease ran out on Flink's clock.
	h.recoveredOn(id, pod.UID)
	j := h.runsNextRevision(old)
	assert.Equal(t, id, j.ID, "the last-state fallback keeps the job ID")
	fc := h.get()
	for _, c := range fc.Status.Conditions {
		if c.Type == controller.ConditionSavepointRequired {
			assert.Equal(t, metav1.ConditionFalse, c.Status, "no SavepointRequired stop: %s", c.Message)
		}
	}
	_, njm := h.runningPod(pod.UID)
	assert.Equal(t, newest, njm.RestoredFrom(id))
	assert.True(t, h.hasEvent(controller.ReasonLastStateRedeploy, "fallback"))
}

func tooOldCheckpointRefused(t *testing.T) {
	h := newLastStateHarness(t, func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Job.UpgradeMode = ptr.To(v1beta1.UpgradeModeLastState)
		fc.Spec.FlinkProperties[flinkcluster.PropertyLastStateMaxCheckpointAge] = "1 s"
	})
	_, jm, id := h.runningJob()
	jm.CompleteCheckpoint(id)
	// The controller's and Flink's clock: the checkpoint is now 2 s old. (Other rows step it
	// too; 2 s moves no timer of theirs past a bound.)
	fakeClock.Step(2 * time.Second)
	old := h.updateArgs("--v2")
	j := h.runsNextRevision(old)
	assert.NotEqual(t, id, j.ID, "a savepoint deploy: a new job ID")
	assert.NotEmpty(t, j.FromSavepoint, "restored from the stop's savepoint")
	assert.Equal(t, j.FromSavepoint, h.lastExecution(j.ID).RestoredFrom)
	assert.True(t, h.hasEvent(controller.ReasonLastStateRefused, "older than"))
}
