package simulation_test

import (
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/flinkcluster"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// Last-state upgrades and recovery from HA past the Lost timeout in the simulation: the
// generator's options, the invariants, and directed tests.
//
// Invariants, checked as each execution starts (checkLastStateRestore):
//   - main() under a job ID that ran before, restoring from the kept checkpoint store (a
//     last-state redeploy), restores the job's newest completed checkpoint or savepoint —
//     never an older one;
//   - no JobManager recovers a job graph that a process of another revision submitted.

// drawUpgradeMode draws the cluster's upgradeMode and checkpoint age bound from a generator
// of its own (seeded from the world's seed), so that the other draws of a seed stay as they
// were: last-state for a third of the clusters that support it, with a max checkpoint age for
// a third of those.
func drawUpgradeMode(seed int64, fc *v1beta1.FlinkCluster) {
	rng := rand.New(rand.NewSource(seed ^ 0x1a575747e))
	if !flinkcluster.LastStateSupported(&fc.Spec) || rng.Intn(3) != 0 {
		return
	}
	fc.Spec.Job.UpgradeMode = ptr.To(v1beta1.UpgradeModeLastState)
	if rng.Intn(3) == 0 {
		fc.Spec.FlinkProperties[flinkcluster.PropertyLastStateMaxCheckpointAge] = []string{"1 min", "10 min", "1h"}[rng.Intn(3)]
	}
}

// completeCheckpoint completes a checkpoint of every job the leader runs.
func (w *world) completeCheckpoint() {
	l := w.fl.Leader()
	if l == nil {
		return
	}
	for _, id := range l.JobIDs() {
		if path := l.CompleteCheckpoint(id); path != "" {
			w.log("job %s: checkpoint %s", id, path)
		}
	}
}

// CheckpointCompleted implements fakeflink.CheckpointObserver.
func (w *world) CheckpointCompleted(_ *fakeflink.JobManager, jobID string, _ int64, path string) {
	w.newestSnapshot[jobID], w.snapshotAt[jobID] = path, w.clock.Now()
}

// checkLastStateRestore checks an execution's start against the invariants above.
func (w *world) checkLastStateRestore(_ *fakeflink.JobManager, e fakeflink.Execution, t *truth) {
	if e.Recovered && e.Revision != e.ProcessRevision {
		w.violate("the JobManager of revision %s recovered job %s's graph of revision %s from HA", e.ProcessRevision, e.JobID, e.Revision)
	}
	if !e.Recovered && t.ran && e.RestoredCheckpoint && e.RestoredFrom != w.newestSnapshot[e.JobID] {
		w.violate("last-state redeploy of job %s restored %q, not its newest checkpoint or savepoint %q", e.JobID, e.RestoredFrom, w.newestSnapshot[e.JobID])
	}
}

// executionsOf lists the executions of a job ID, in start order.
func (w *world) executionsOf(id string) []fakeflink.Execution {
	var out []fakeflink.Execution
	for _, e := range w.fl.Executions() {
		if e.JobID == id {
			out = append(out, e)
		}
	}
	return out
}

// noted reports whether an Event note with reason was recorded.
func (w *world) noted(reason string) bool {
	for _, n := range w.rec.notes {
		if strings.Contains(n, reason) {
			return true
		}
	}
	return false
}

func lastStateWorld(t *testing.T, seed int64, build func(fc *v1beta1.FlinkCluster)) *world {
	return newWorldWith(t, seed, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, build: func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Job.UpgradeMode = ptr.To(v1beta1.UpgradeModeLastState)
		if build != nil {
			build(fc)
		}
	}})
}

// runningRevisionOtherThan waits until the job runs a revision other than old, the one the spec asks for.
func (w *world) runningRevisionOtherThan(t *testing.T, what, old string) *v1beta1.FlinkCluster {
	t.Helper()
	return w.until(t, what, 60, func(fc *v1beta1.FlinkCluster) bool {
		u := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionUpdating)
		return jobIs(v1beta1.JobStateRunning)(fc) && fc.Status.Revision.CurrentRevision == fc.Status.Revision.NextRevision &&
			fc.Status.Revision.CurrentRevision != old &&
			u != nil && u.Reason == controller.ConditionReasonUpToDate
	})
}

// A last-state update of a running Deployment-mode job: no savepoint, the same job ID, the
// next revision's main() restoring the newest checkpoint of the kept store.
func TestLastStateUpgradeOfARunningJob(t *testing.T) {
	w := lastStateWorld(t, 31, nil)
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id, rev1 := fc.Status.Components.Job.ID, fc.Status.Revision.CurrentRevision
	w.completeCheckpoint()
	w.completeCheckpoint()
	newest := w.newestSnapshot[id]
	require.NotEmpty(t, newest)

	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	fc = w.runningRevisionOtherThan(t, "running the next revision", rev1)
	assert.NotEqual(t, rev1, fc.Status.Revision.CurrentRevision)
	assert.Equal(t, id, fc.Status.Components.Job.ID, "last-state keeps the job ID: its checkpoint store is keyed by it")
	assert.Empty(t, w.savepoints, "no savepoint taken")
	ex := w.executionsOf(id)
	last := ex[len(ex)-1]
	assert.False(t, last.Recovered, "main() of the new revision ran: the old job graph was removed")
	assert.True(t, last.RestoredCheckpoint)
	assert.Equal(t, newest, last.RestoredFrom, "the newest completed checkpoint")
	assert.Equal(t, fc.Status.Revision.CurrentRevision, last.Revision)
	assert.True(t, w.noted(controller.ReasonLastStateRedeploy), "a LastStateRedeploy event says so")
	noViolations(t, w)
}

// A job that ran and then crash-loops stays Lost past --lost-job-timeout while its HA data is
// kept (savepoint mode, the default): no scale-down, no afterJobFails. An update then cannot
// take a savepoint, and falls back to last-state: the next revision restores the newest
// checkpoint — no SavepointRequired stop.
func TestCrashLoopPastTheLostTimeoutResumesFromHA(t *testing.T) {
	w := newWorldWith(t, 19, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id, rev1 := fc.Status.Components.Job.ID, fc.Status.Revision.CurrentRevision
	w.completeCheckpoint()
	newest := w.newestSnapshot[id]
	pr := w.leader()
	w.stop(pr.pod, false, 1, "java.io.IOException: storage unavailable")
	pr.crashing = 1 << 20
	w.until(t, "Lost", 20, jobIs(v1beta1.JobStateLost))
	w.during(t, 15*time.Minute, "Lost, kept and scaled up past the Lost timeout", func(fc *v1beta1.FlinkCluster) bool {
		wl := w.workload()
		return fc.Status.Components.Job.State == v1beta1.JobStateLost && wl != nil && wl.replicas == 1 && !wl.deleting
	})
	fc = w.cluster()
	require.True(t, conditionIs(controller.ConditionLost, controller.ConditionReasonLostRecoverable)(fc), "the Lost condition says why the job is kept\n%s", w.dump())

	// The user fixes what crashes (a new pod template, whose pod starts): the update cannot
	// stop the job with a savepoint and falls back to last-state.
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--fixed"} })
	fc = w.runningRevisionOtherThan(t, "running the fixed revision", rev1)
	assert.Equal(t, id, fc.Status.Components.Job.ID)
	assert.False(t, meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired))
	ex := w.executionsOf(id)
	assert.Equal(t, newest, ex[len(ex)-1].RestoredFrom, "the newest checkpoint, kept in HA")
	noViolations(t, w)
}

// A too-old checkpoint is refused: with a max checkpoint age of one minute and the newest
// checkpoint five minutes old, the last-state update of the running job stops it with a
// savepoint and deploys a new job ID from it.
func TestLastStateRefusesATooOldCheckpoint(t *testing.T) {
	w := lastStateWorld(t, 32, func(fc *v1beta1.FlinkCluster) {
		fc.Spec.FlinkProperties[flinkcluster.PropertyLastStateMaxCheckpointAge] = "1 min"
	})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id, rev1 := fc.Status.Components.Job.ID, fc.Status.Revision.CurrentRevision
	w.completeCheckpoint()
	w.clock.Step(5 * time.Minute)
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	w.until(t, "stopping with a savepoint", 20, conditionIs(controller.ConditionUpdating, controller.ConditionReasonStoppingWithSavepoint))
	w.finishTriggers(false)
	fc = w.runningRevisionOtherThan(t, "running the next revision", rev1)
	assert.NotEqual(t, id, fc.Status.Components.Job.ID, "a savepoint deploy: a new job ID")
	require.NotEmpty(t, w.savepoints)
	assert.Equal(t, w.newestSavepoint(), fc.Status.Components.Job.FromSavepoint)
	assert.True(t, w.noted(controller.ReasonLastStateRefused))
	noViolations(t, w)
}

// upgradeMode stateless deploys from empty state on purpose, and says so.
func TestStatelessUpgrade(t *testing.T) {
	w := newWorldWith(t, 33, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, build: func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Job.UpgradeMode = ptr.To(v1beta1.UpgradeModeStateless)
	}})
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id, rev1 := fc.Status.Components.Job.ID, fc.Status.Revision.CurrentRevision
	w.completeCheckpoint()
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	fc = w.runningRevisionOtherThan(t, "running the next revision", rev1)
	assert.NotEqual(t, id, fc.Status.Components.Job.ID)
	assert.Empty(t, w.savepoints)
	ex := w.executionsOf(fc.Status.Components.Job.ID)
	require.NotEmpty(t, ex)
	assert.Empty(t, ex[0].RestoredFrom, "empty state")
	assert.True(t, w.noted(controller.ReasonStatelessRedeploy))
	noViolations(t, w)
}

// A savepoint newer than every stored checkpoint wins: a job that does not run, in
// last-state mode, is redeployed from its savepoint (the newest state), not from the store.
func TestLastStatePrefersANewerSavepoint(t *testing.T) {
	w := lastStateWorld(t, 34, nil)
	w.manualSavepoints = true
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id, rev1 := fc.Status.Components.Job.ID, fc.Status.Revision.CurrentRevision
	w.completeCheckpoint()
	w.annotate(v1beta1.ControlAnnotation, v1beta1.ControlNameSavepoint)
	w.until(t, "savepoint triggered", 20, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Savepoint != nil && fc.Status.Savepoint.TriggerID != ""
	})
	w.finishTriggers(false)
	fc = w.until(t, "savepoint recorded with its checkpoint ID", 20, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Components.Job.SavepointCheckpointID != 0
	})
	sp := fc.Status.Components.Job.SavepointLocation
	pr := w.leader()
	w.stop(pr.pod, false, 1, "java.io.IOException: storage unavailable")
	pr.crashing = 1 << 20
	w.until(t, "Lost", 20, jobIs(v1beta1.JobStateLost))
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--fixed"} })
	fc = w.runningRevisionOtherThan(t, "running the fixed revision", rev1)
	assert.NotEqual(t, id, fc.Status.Components.Job.ID, "restored from the savepoint under a new job ID")
	assert.Equal(t, sp, fc.Status.Components.Job.FromSavepoint)
	noViolations(t, w)
}

// Found by TestInvariants once the exemptions went (seed 1796141203947690272): a savepoint
// on request was in flight when a last-state update began; the update's stop-with-savepoint
// replaced its record, the stop failed, and the last-state redeploy restored the stored
// checkpoint although the first savepoint had completed after it. Now the update waits for
// the savepoint in flight, records it, and the next revision starts from the job's newest
// state.
func TestUpdateWaitsForASavepointInFlight(t *testing.T) {
	w := lastStateWorld(t, 35, nil)
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id, rev1 := fc.Status.Components.Job.ID, fc.Status.Revision.CurrentRevision
	w.completeCheckpoint()
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.SavepointGeneration = 1 })
	fc = w.until(t, "savepoint in progress", 20, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Savepoint != nil && fc.Status.Savepoint.State == controller.SavepointStateInProgress
	})
	trigger := fc.Status.Savepoint.TriggerID
	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	fc = w.until(t, "the update waits for the savepoint in flight", 10, func(fc *v1beta1.FlinkCluster) bool {
		u := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionUpdating)
		return u != nil && strings.Contains(u.Message, "was in flight when the update began")
	})
	require.Equal(t, trigger, fc.Status.Savepoint.TriggerID, "the record of the savepoint in flight is kept")
	w.finishTriggers(false)
	fc = w.until(t, "the savepoint in flight recorded", 10, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Components.Job.SavepointLocation != ""
	})
	require.Equal(t, w.newestSavepoint(), fc.Status.Components.Job.SavepointLocation)
	fc = w.until(t, "running the next revision", 60, func(fc *v1beta1.FlinkCluster) bool {
		w.finishTriggers(false) // the update's stop, if it takes one
		return jobIs(v1beta1.JobStateRunning)(fc) && fc.Status.Revision.CurrentRevision != rev1 &&
			fc.Status.Revision.CurrentRevision == fc.Status.Revision.NextRevision
	})
	ex := w.executionsOf(fc.Status.Components.Job.ID)
	require.NotEmpty(t, ex)
	if fc.Status.Components.Job.ID == id {
		assert.Equal(t, w.newestSnapshot[id], ex[len(ex)-1].RestoredFrom, "last-state restores the newest state")
	} else {
		assert.Equal(t, w.newestSavepoint(), fc.Status.Components.Job.FromSavepoint, "a savepoint deploy restores the newest savepoint")
	}
	noViolations(t, w)
}

// A scheduled savepoint (here one savepointGeneration asked for) was in flight when its
// JobManager's node was lost; it completed there, unread. The update's stop-with-savepoint
// replaced its record and failed on the replacement JobManager, which then crash-looped.
// Flink never adds a savepoint to the checkpoint store (the fake neither), so a last-state
// fallback would restore the store's chk-1, older than the savepoint that completed (seed
// 1796139225380835489). The replaced record's trigger time is kept
// (status.components.job.unknownSavepointTime) and the update asks for a savepoint instead.
func TestLastStateFallbackAfterAReplacedUnreadSavepointAsksForASavepoint(t *testing.T) {
	w := lastStateWorld(t, 62, nil)
	fc := w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	id := fc.Status.Components.Job.ID
	w.completeCheckpoint()
	w.patchCluster(func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Job.SavepointGeneration = fc.Status.Components.Job.SavepointGeneration + 1
	})
	w.until(t, "the savepoint triggered", 10, func(fc *v1beta1.FlinkCluster) bool {
		sp := fc.Status.Savepoint
		return sp != nil && sp.JobID == id && sp.State == controller.SavepointStateInProgress
	})
	first := w.leader()
	first.jm.CompleteSavepoints()
	require.Len(t, w.savepoints, 1, "the savepoint completed in Flink")
	w.loseNode(first)

	w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} })
	w.until(t, "the update's stop triggered on the replacement", 400, func(fc *v1beta1.FlinkCluster) bool {
		sp := fc.Status.Savepoint
		return sp != nil && sp.JobID == id && sp.TriggerReason == controller.SavepointReasonUpdate && sp.State == controller.SavepointStateInProgress
	})
	assert.NotEmpty(t, w.cluster().Status.Components.Job.UnknownSavepointTime, "the replaced savepoint's trigger is kept")
	second := w.leader()
	require.NotNil(t, second)
	require.NotEqual(t, first, second)
	// The stop fails as the job fails over, and the JobManager then crash-loops: the job
	// runs nowhere, and cannot take a savepoint.
	second.jm.FailSavepoints("org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint Coordinator is suspending.")
	second.jm.SetJobState(id, flinkclient.JobStateRestarting)
	w.until(t, "the stop's failure read", 10, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Savepoint != nil && fc.Status.Savepoint.State == controller.SavepointStateFailed
	})
	w.stop(second.pod, false, 1, "java.io.IOException: storage unavailable")
	second.crashing = 8

	fc = w.until(t, "SavepointRequired", 400, func(fc *v1beta1.FlinkCluster) bool {
		return meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired)
	})
	assert.Equal(t, id, fc.Status.Components.Job.ID)
	assert.Len(t, w.executionsOf(id), 2, "no last-state redeploy started a third execution of the job")
	noViolations(t, w)
}
