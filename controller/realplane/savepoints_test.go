package realplane_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Savepoints on the real control plane: the scheduled and the on-request savepoints
// of a running Deployment-mode job, with savepoint disposal. The rows step the shared fake
// clock by an hour, so they run one at a time, after TestRealControlPlane's parallel rows
// (a top-level test starts once the previous one's subtests ended). They use the harness of
// realplane_test.go as it is on main (newHarness, runJob, get, job, eventually).
func TestSavepointsOnRealControlPlane(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, h *harness)
	}{
		{"autoSavepointSeconds: none before the interval, a scheduled savepoint after it, the job running on under its ID", scheduledSavepoint},
		{"an update naming a new fromSavepoint: no savepoint taken, the next deploy restores it (as the webhook admits it)", updateFromSavepoint},
		{"savepointGeneration raised as the webhook admits it: a savepoint, the status's generation follows; savepointsToKeep 1 disposes of the older one", requestedSavepoint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newHarness(t, depMode, nil))
		})
	}
}

// editSpec changes the stored cluster's job spec, on its latest version (the controller
// writes the status in between), and returns the generation it made.
func (h *harness) editSpec(mutate func(j *v1beta1.JobSpec)) int64 {
	h.t.Helper()
	var gen int64
	require.NoError(h.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fc := h.get()
		mutate(fc.Spec.Job)
		if err := k8s.Update(h.ctx, fc); err != nil {
			return err
		}
		gen = fc.Generation
		return nil
	}))
	return gen
}

// observed waits until the controller reconciled generation gen.
func (h *harness) observed(gen int64) {
	h.t.Helper()
	h.eventually("the controller to observe the spec", func() bool { return h.get().Status.ObservedGeneration >= gen })
}

func scheduledSavepoint(t *testing.T, h *harness) {
	h.runJob()
	id := h.jobID()
	started, err := time.Parse(time.RFC3339, h.job().StartTime)
	require.NoError(t, err)
	// Half the interval passes, then the schedule is set: the reconcile that observes it
	// finds no savepoint due.
	fakeClock.Step(30 * time.Minute)
	h.observed(h.editSpec(func(j *v1beta1.JobSpec) { j.AutoSavepointSeconds = ptr.To[int32](3600) }))
	assert.Nil(t, h.get().Status.Savepoint, "no savepoint before the interval")

	fakeClock.Step(31 * time.Minute)
	h.eventually("the scheduled savepoint taken", func() bool {
		sp := h.get().Status.Savepoint
		return sp != nil && sp.TriggerReason == flinkcluster.SavepointReasonScheduled && sp.State == "Succeeded"
	})
	fc := h.get()
	j := fc.Status.Components.Job
	assert.Equal(t, v1beta1.JobStateRunning, j.State, "the job runs on")
	assert.Equal(t, id, j.ID, "under its job ID")
	assert.False(t, j.FinalSavepoint)
	require.Len(t, fc.Status.SavepointHistory, 1)
	assert.Equal(t, j.SavepointLocation, fc.Status.SavepointHistory[0].Location)
	taken, err := time.Parse(time.RFC3339, j.SavepointTime)
	require.NoError(t, err)
	assert.False(t, taken.Before(started.Add(time.Hour)), "taken an interval after the start")
	assert.True(t, h.flink.SavepointExists(j.SavepointLocation))
}

func requestedSavepoint(t *testing.T, h *harness) {
	h.runJob()
	id := h.jobID()
	h.editSpec(func(j *v1beta1.JobSpec) { j.SavepointsToKeep = ptr.To[int32](1) })
	var locations []string
	for gen := int32(1); gen <= 2; gen++ {
		// The webhook admits the raise (the rule it decides by; package policy's tests
		// check that it does).
		require.Equal(t, gen, flinkcluster.NextSavepointGeneration(h.get().Status.Components.Job))
		h.editSpec(func(j *v1beta1.JobSpec) { j.SavepointGeneration = gen })
		h.eventually("the status's savepointGeneration to follow", func() bool {
			return h.job().SavepointGeneration == gen
		})
		j := h.job()
		assert.Equal(t, v1beta1.JobStateRunning, j.State)
		assert.Equal(t, id, j.ID)
		assert.Equal(t, flinkcluster.SavepointReasonGeneration, h.get().Status.Savepoint.TriggerReason)
		locations = append(locations, j.SavepointLocation)
	}
	require.NotEqual(t, locations[0], locations[1])
	h.eventually("the older savepoint disposed of", func() bool {
		hist := h.get().Status.SavepointHistory
		return len(hist) == 1 && hist[0].Location == locations[1]
	})
	assert.False(t, h.flink.SavepointExists(locations[0]), "disposed of through Flink")
	assert.True(t, h.flink.SavepointExists(locations[1]), "the newest kept")
}

func updateFromSavepoint(t *testing.T, h *harness) {
	h.runJob()
	id := h.jobID()
	chosen := "file:///savepoints/chosen"
	old := h.get()
	h.editSpec(func(j *v1beta1.JobSpec) { j.Args = []string{"--v2"}; j.FromSavepoint = &chosen })
	require.True(t, flinkcluster.UpdateReady(old.Status.Components.Job, h.get().Spec.Job, fakeClock.Now()),
		"the webhook's rule admits the update without a savepoint")
	h.eventually("the next revision's job Running under a new job ID", func() bool {
		j := h.job()
		return j.State == v1beta1.JobStateRunning && j.ID != id && j.ID != ""
	})
	fc := h.get()
	assert.Equal(t, chosen, fc.Status.Components.Job.FromSavepoint, "restored the named savepoint")
	assert.Equal(t, chosen, fc.Status.Components.Job.SpecFromSavepoint)
	assert.Nil(t, fc.Status.Savepoint, "no savepoint of the old job taken")
	assert.Empty(t, fc.Status.SavepointHistory)
	for _, c := range fc.Status.Conditions {
		if c.Type == "SavepointRequired" {
			assert.Equal(t, "False", string(c.Status), "no SavepointRequired stop")
		}
	}
}
