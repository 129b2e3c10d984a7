package state_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

var jobStates = []string{
	v1beta1.JobStatePending, v1beta1.JobStateUpdating, v1beta1.JobStateRestarting, v1beta1.JobStateDeploying,
	v1beta1.JobStateDeployFailed, v1beta1.JobStateRunning, v1beta1.JobStateSucceeded, v1beta1.JobStateCancelled,
	v1beta1.JobStateFailed, v1beta1.JobStateLost,
}

// The table names only job states of the API, never a row from a state to itself, and leaves
// a terminal state only by a new deploy, a last-state redeploy or a restart.
func TestTransitionsTableIsWellFormed(t *testing.T) {
	for _, tr := range state.Transitions {
		assert.Contains(t, jobStates, tr.To, "row %q", tr.Event)
		assert.NotEmpty(t, tr.Event)
		for _, from := range tr.From {
			assert.Contains(t, jobStates, from, "row %q", tr.Event)
			assert.NotEqual(t, from, tr.To, "row %q moves nowhere", tr.Event)
			if flinkcluster.Terminal(from) {
				assert.Contains(t, []state.Step{state.StepNewDeploy, state.StepLastStateDeploy, state.StepRestart}, tr.Step,
					"row %q leaves terminal %s by %s", tr.Event, from, tr.Step)
			}
		}
	}
	// Every non-terminal state is left by some row, and every state is reached by one.
	for _, s := range jobStates {
		assert.True(t, slices.ContainsFunc(state.Transitions, func(tr state.Transition) bool { return tr.To == s }), "nothing reaches %s", s)
	}
}

func TestAllowed(t *testing.T) {
	cases := []struct {
		from, to string
		step     state.Step
		want     bool
	}{
		{v1beta1.JobStatePending, v1beta1.JobStateDeploying, state.StepCreateJobManager, true},
		{v1beta1.JobStateRunning, v1beta1.JobStateFailed, state.StepDerive, true},
		{v1beta1.JobStateRunning, v1beta1.JobStateDeployFailed, state.StepDerive, false},
		{v1beta1.JobStateFailed, v1beta1.JobStateCancelled, state.StepCancelled, false},
		{v1beta1.JobStateSucceeded, v1beta1.JobStatePending, state.StepNewDeploy, true},
		{v1beta1.JobStateSucceeded, v1beta1.JobStatePending, state.StepDerive, false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, state.Allowed(tc.from, tc.to, tc.step), "%s -> %s by %s", tc.from, tc.to, tc.step)
		if tc.want {
			assert.True(t, state.Listed(tc.from, tc.to))
		}
	}
	assert.False(t, state.Listed(v1beta1.JobStateFailed, v1beta1.JobStateCancelled), "a failure is never turned into a cancel")
}
