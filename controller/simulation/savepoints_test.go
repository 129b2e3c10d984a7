package simulation_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Savepoints on a schedule and on request, spec.job.fromSavepoint on an update, the
// savepoint history and its disposal, and the webhook and the controller agreeing on the
// restore source. The clock is the world's fake clock: an hour
// passes in steps, never in real time.

// advance moves the world on by d in steps of step, the model and the controller running
// after each.
func (w *world) advance(d, step time.Duration) {
	for end := w.clock.Now().Add(d); w.clock.Now().Before(end); {
		w.clock.Step(step)
		w.kube()
		w.flink()
		w.reconcileAtOnce()
	}
}

// triggered counts the controller's SavepointTriggered Events whose note says reason.
func (w *world) triggered(reason string) int {
	n := 0
	for _, note := range w.rec.notes {
		if strings.Contains(note, controller.ReasonSavepointTriggered+":") && strings.Contains(note, "("+reason+")") {
			n++
		}
	}
	return n
}

func eventsWith(w *world, reason string) int {
	n := 0
	for _, note := range w.rec.notes {
		if strings.Contains(note, " "+reason+": ") {
			n++
		}
	}
	return n
}

// admit applies an update of the stored cluster that the validating webhook's rules admit,
// and returns the denial otherwise. It judges by the domain functions those rules decide by
// (package flinkcluster: the savepointGeneration raise, and UpdateReady for an update that
// takes no savepoint first) — the controller's tests do not import package policy, whose own
// tests check that the rules use them (TestLayers).
func (w *world) admit(t *testing.T, mutate func(fc *v1beta1.FlinkCluster)) error {
	t.Helper()
	old := w.cluster()
	require.NotNil(t, old)
	fc := old.DeepCopy()
	mutate(fc)
	status, spec := old.Status.Components.Job, fc.Spec.Job
	if spec.SavepointGeneration != old.Spec.Job.SavepointGeneration {
		if next := flinkcluster.NextSavepointGeneration(status); spec.SavepointGeneration != next {
			return fmt.Errorf("spec.job.savepointGeneration: can only be set to %d", next)
		}
	} else if rev(t, old) != rev(t, fc) && (!flinkcluster.TakesSavepointOnUpdate(spec) || flinkcluster.Stopped(status)) &&
		!flinkcluster.UpdateReady(status, spec, w.clock.Now()) {
		return fmt.Errorf("spec.job: no savepoint will be taken before this update and none is fresh or named")
	}
	w.must(w.cl.Update(bg, fc))
	return nil
}

func rev(t *testing.T, fc *v1beta1.FlinkCluster) string {
	t.Helper()
	r, err := resources.Revision(fc)
	require.NoError(t, err)
	return r
}

func deploymentWorld(t *testing.T, build func(fc *v1beta1.FlinkCluster)) *world {
	w := newWorldWith(t, 1, &setup{mode: v1beta1.JobManagerDeploymentTypeDeployment, build: build})
	w.until(t, "running", 20, jobIs(v1beta1.JobStateRunning))
	return w
}

// autoSavepointSeconds: the first scheduled savepoint comes one interval after the job
// started, the next one interval after it; none while one is in flight; the status records
// each (status.savepoint, the job's savepointTime, the history); the job keeps running.
func TestScheduledSavepointsComeEveryInterval(t *testing.T) {
	w := deploymentWorld(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.AutoSavepointSeconds = ptr.To[int32](3600) })
	started := w.clock.Now()

	w.advance(55*time.Minute, time.Minute)
	assert.Zero(t, w.triggered(flinkcluster.SavepointReasonScheduled), "no scheduled savepoint before the interval\n%s", w.dump())

	w.advance(6*time.Minute, time.Minute)
	require.Equal(t, 1, w.triggered(flinkcluster.SavepointReasonScheduled), "one scheduled savepoint an interval after the start\n%s", w.dump())
	// Left in progress (within --savepoint-timeout): no second one meanwhile.
	w.advance(10*time.Minute, 5*time.Minute)
	assert.Equal(t, 1, w.triggered(flinkcluster.SavepointReasonScheduled), "none while one is in progress")

	w.finishTriggers(false)
	fc := w.until(t, "the scheduled savepoint recorded", 10, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Savepoint != nil && fc.Status.Savepoint.State == controller.SavepointStateSucceeded
	})
	require.Len(t, w.savepoints, 1)
	job := fc.Status.Components.Job
	assert.Equal(t, v1beta1.JobStateRunning, job.State, "a scheduled savepoint leaves the job running")
	assert.Equal(t, w.savepoints[0], job.SavepointLocation)
	assert.False(t, job.FinalSavepoint)
	assert.Equal(t, flinkcluster.SavepointReasonScheduled, fc.Status.Savepoint.TriggerReason)
	require.Len(t, fc.Status.SavepointHistory, 1)
	assert.Equal(t, w.savepoints[0], fc.Status.SavepointHistory[0].Location)
	assert.Equal(t, job.SavepointTime, fc.Status.SavepointHistory[0].Time)
	taken, err := time.Parse(time.RFC3339, job.SavepointTime)
	require.NoError(t, err)
	assert.True(t, taken.After(started.Add(time.Hour)), "taken after the interval")

	// The next is counted from that savepoint.
	w.advance(55*time.Minute, 5*time.Minute)
	assert.Equal(t, 1, w.triggered(flinkcluster.SavepointReasonScheduled), "the next one counts from the last savepoint")
	w.advance(10*time.Minute, time.Minute)
	assert.Equal(t, 2, w.triggered(flinkcluster.SavepointReasonScheduled), "the next one an interval after the last savepoint")
	noViolations(t, w)
}

// A failed scheduled savepoint is retried SavepointRetryInterval after it failed, not on
// every poll and not only an interval later.
func TestFailedScheduledSavepointIsRetried(t *testing.T) {
	w := deploymentWorld(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.AutoSavepointSeconds = ptr.To[int32](600) })
	w.advance(11*time.Minute, time.Minute)
	require.Equal(t, 1, w.triggered(flinkcluster.SavepointReasonScheduled))
	w.finishTriggers(true)
	w.until(t, "the failure recorded", 5, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Savepoint != nil && fc.Status.Savepoint.State == controller.SavepointStateFailed
	})
	w.advance(4*time.Second, 2*time.Second)
	assert.Equal(t, 1, w.triggered(flinkcluster.SavepointReasonScheduled), "not retried within the retry interval")
	w.advance(10*time.Second, 2*time.Second)
	assert.Equal(t, 2, w.triggered(flinkcluster.SavepointReasonScheduled), "retried after it\n%s", w.dump())
	noViolations(t, w)
}

// savepointGeneration: a bump the webhook admits (status + 1) triggers one savepoint that
// leaves the job running; status.components.job.savepointGeneration follows once it is taken,
// so the webhook admits the next bump, and denies one that skips a generation.
func TestSavepointGenerationBumpTakesASavepoint(t *testing.T) {
	w := deploymentWorld(t, nil)
	require.NoError(t, w.admit(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.SavepointGeneration = 1 }))
	w.settle(2)
	require.Equal(t, 1, w.triggered(flinkcluster.SavepointReasonGeneration), w.dump())
	require.Error(t, w.admit(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.SavepointGeneration = 2 }),
		"the next bump waits for the status to follow")
	w.finishTriggers(false)
	fc := w.until(t, "the generation followed", 10, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Components.Job.SavepointGeneration == 1
	})
	assert.Equal(t, v1beta1.JobStateRunning, fc.Status.Components.Job.State)
	require.Len(t, w.savepoints, 1)
	assert.Equal(t, w.savepoints[0], fc.Status.Components.Job.SavepointLocation)
	w.settle(5)
	assert.Equal(t, 1, w.triggered(flinkcluster.SavepointReasonGeneration), "one savepoint per bump")

	assert.Error(t, w.admit(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.SavepointGeneration = 3 }), "a bump that skips a generation")
	require.NoError(t, w.admit(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.SavepointGeneration = 2 }))
	w.settle(2)
	w.finishTriggers(false)
	w.until(t, "the second generation", 10, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Components.Job.SavepointGeneration == 2
	})
	assert.Equal(t, 2, w.triggered(flinkcluster.SavepointReasonGeneration))
	assert.Len(t, w.cluster().Status.SavepointHistory, 2)
	noViolations(t, w)
}

// With takeSavepointOnUpdate false and no fresh savepoint, the webhook
// denies an update that names no savepoint and admits one that names a new fromSavepoint —
// which the controller then deploys from, without stopping at SavepointRequired.
func TestUpdateWithNewFromSavepointIsAdmittedAndRestored(t *testing.T) {
	w := deploymentWorld(t, func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Job.TakeSavepointOnUpdate = ptr.To(false)
		fc.Spec.Job.MaxStateAgeToRestoreSeconds = ptr.To[int32](60)
	})
	w.advance(5*time.Minute, time.Minute)
	assert.Error(t, w.admit(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} }),
		"no fresh savepoint and none named: denied")
	chosen := "file:///savepoints/chosen"
	require.NoError(t, w.admit(t, func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Job.Args = []string{"--v2"}
		fc.Spec.Job.FromSavepoint = &chosen
	}))
	firstJob := w.cluster().Status.Components.Job.ID
	fc := w.until(t, "the next deploy", 40, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Components.Job.ID != firstJob && fc.Status.Components.Job.State == v1beta1.JobStateRunning
	})
	assert.False(t, meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired), "no SavepointRequired stop")
	assert.Equal(t, chosen, w.fromOf[fc.Status.Components.Job.ID], "the deploy restored the savepoint the update names")
	assert.Equal(t, chosen, fc.Status.Components.Job.FromSavepoint)
	assert.Equal(t, chosen, fc.Status.Components.Job.SpecFromSavepoint, "the running revision's fromSavepoint is recorded")
	noViolations(t, w)
}

// As with the operator, an update that names a new fromSavepoint takes no savepoint of the
// running job (takeSavepointOnUpdate true): it deploys from the named one.
func TestUpdateWithNewFromSavepointTakesNoSavepoint(t *testing.T) {
	w := deploymentWorld(t, nil)
	chosen := "file:///savepoints/chosen"
	require.NoError(t, w.admit(t, func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Job.Args = []string{"--v2"}
		fc.Spec.Job.FromSavepoint = &chosen
	}))
	firstJob := w.cluster().Status.Components.Job.ID
	fc := w.until(t, "the next deploy", 40, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Components.Job.ID != firstJob && fc.Status.Components.Job.State == v1beta1.JobStateRunning
	})
	assert.Zero(t, w.triggered(controller.SavepointReasonUpdate), "no stop-with-savepoint")
	assert.Empty(t, w.savepoints)
	assert.Equal(t, chosen, w.fromOf[fc.Status.Components.Job.ID])
	noViolations(t, w)
}

// A fromSavepoint left as the cluster was created with is not restored again on a later
// update (it would rewind the job to it): the update stops the job with a savepoint and
// restores that; the webhook judges the same way (with takeSavepointOnUpdate false it denies
// the update rather than admit one the controller would stop).
func TestUnchangedFromSavepointIsNotRestoredAgain(t *testing.T) {
	initial := "file:///savepoints/initial"
	w := deploymentWorld(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.FromSavepoint = &initial })
	firstJob := w.cluster().Status.Components.Job.ID
	require.Equal(t, initial, w.fromOf[firstJob], "the first deploy restores it")
	w.settle(2)
	require.Equal(t, initial, w.cluster().Status.Components.Job.SpecFromSavepoint)

	require.NoError(t, w.admit(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v2"} }))
	w.reconcileAtOnce()
	w.finishTriggers(false)
	require.Len(t, w.savepoints, 1, "the update stopped the job with a savepoint")
	fc := w.until(t, "the next deploy", 40, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Components.Job.ID != firstJob && fc.Status.Components.Job.State == v1beta1.JobStateRunning
	})
	assert.Equal(t, w.savepoints[0], w.fromOf[fc.Status.Components.Job.ID], "restored the final savepoint, not the initial one")

	// With no savepoint taken and no fresh one, the unchanged fromSavepoint does not make
	// the webhook admit an update.
	w.patchCluster(func(fc *v1beta1.FlinkCluster) {
		fc.Spec.Job.TakeSavepointOnUpdate = ptr.To(false)
		fc.Spec.Job.MaxStateAgeToRestoreSeconds = ptr.To[int32](60)
	})
	w.advance(5*time.Minute, time.Minute)
	assert.Error(t, w.admit(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{"--v3"} }))
	noViolations(t, w)
}

// savepointsToKeep: once the history holds more savepoints than it keeps, the older ones
// are disposed of through Flink (gone from the savepoint storage) and leave the history; the
// newest ones, and the one the running deploy started from, stay.
func TestSavepointsToKeepDisposesOfOlderSavepoints(t *testing.T) {
	w := deploymentWorld(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.SavepointsToKeep = ptr.To[int32](2) })
	for gen := int32(1); gen <= 4; gen++ {
		require.NoError(t, w.admit(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.SavepointGeneration = gen }))
		w.settle(1)
		w.finishTriggers(false)
		w.until(t, "the savepoint", 10, func(fc *v1beta1.FlinkCluster) bool {
			return fc.Status.Components.Job.SavepointGeneration == gen
		})
	}
	require.Len(t, w.savepoints, 4)
	fc := w.until(t, "the older savepoints disposed of", 20, func(fc *v1beta1.FlinkCluster) bool {
		return len(fc.Status.SavepointHistory) == 2
	})
	assert.Equal(t, w.savepoints[2], fc.Status.SavepointHistory[0].Location)
	assert.Equal(t, w.savepoints[3], fc.Status.SavepointHistory[1].Location)
	for i, sp := range w.savepoints {
		assert.Equal(t, i >= 2, w.fl.SavepointExists(sp), "savepoint %d (%s) on the storage", i, sp)
	}
	assert.Equal(t, 2, eventsWith(w, controller.ReasonSavepointDisposed))
	assert.Zero(t, eventsWith(w, controller.ReasonSavepointDisposalFailed))
	noViolations(t, w)
}

// Without savepointsToKeep nothing is disposed of, and the history keeps the last 10.
func TestSavepointHistoryKeepsTheLastTen(t *testing.T) {
	w := deploymentWorld(t, nil)
	for gen := int32(1); gen <= 12; gen++ {
		require.NoError(t, w.admit(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.SavepointGeneration = gen }))
		w.settle(1)
		w.finishTriggers(false)
		w.until(t, "the savepoint", 10, func(fc *v1beta1.FlinkCluster) bool {
			return fc.Status.Components.Job.SavepointGeneration == gen
		})
	}
	h := w.cluster().Status.SavepointHistory
	require.Len(t, h, flinkcluster.MaxSavepointHistory)
	assert.Equal(t, w.savepoints[2], h[0].Location, "the oldest two left the history")
	assert.Equal(t, w.savepoints[11], h[9].Location)
	for _, sp := range w.savepoints {
		assert.True(t, w.fl.SavepointExists(sp), "nothing disposed of: %s", sp)
	}
	noViolations(t, w)
}

// A savepoint whose result never comes (a hung checkpoint storage) is not polled for ever:
// past --savepoint-timeout from its trigger its outcome is unknown, said in status and an
// Event, and the schedule goes on.
func TestSavepointWithoutAResultIsUnknownPastTheTimeout(t *testing.T) {
	w := deploymentWorld(t, func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.AutoSavepointSeconds = ptr.To[int32](3600) })
	w.advance(61*time.Minute, time.Minute)
	require.Equal(t, 1, w.triggered(flinkcluster.SavepointReasonScheduled))
	fc := w.cluster()
	require.Equal(t, controller.SavepointStateInProgress, fc.Status.Savepoint.State)
	w.advance(controller.DefaultSavepointTimeout-2*time.Minute, time.Minute)
	require.Equal(t, controller.SavepointStateInProgress, w.cluster().Status.Savepoint.State, "within the timeout")
	w.advance(3*time.Minute, time.Minute)
	assert.True(t, w.noted("outcome unknown: no result within --savepoint-timeout"), "a Warning Event says so\n%s", w.dump())
	assert.Equal(t, 2, w.triggered(flinkcluster.SavepointReasonScheduled), "the schedule goes on: the next savepoint is triggered")
	fc = w.cluster()
	assert.Equal(t, v1beta1.JobStateRunning, fc.Status.Components.Job.State, "the job runs on")
	noViolations(t, w)
}
