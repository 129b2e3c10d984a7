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
		assert.Contains(t, jobStates, tr.To, "row %s", tr.Event)
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

// Each event is one row: the event and the job's state decide the next state, with nothing
// else to choose between rows.
func TestEveryEventIsOneRow(t *testing.T) {
	seen := map[state.Event]bool{}
	for _, tr := range state.Transitions {
		assert.NotEmpty(t, tr.Event)
		assert.NotEmpty(t, tr.Means, "row %s", tr.Event)
		assert.False(t, seen[tr.Event], "event %s names two rows", tr.Event)
		seen[tr.Event] = true
	}
}

func TestNextRefusesUnlistedTransitions(t *testing.T) {
	cases := []struct {
		name   string
		from   string
		ev     state.Event
		want   string
		listed bool
	}{
		{"a created JobManager deploys a pending job", v1beta1.JobStatePending, state.EventJobManagerCreated, v1beta1.JobStateDeploying, true},
		{"Flink's FAILED fails a running job", v1beta1.JobStateRunning, state.EventJobFailed, v1beta1.JobStateFailed, true},
		{"a running job is not a failed deploy", v1beta1.JobStateRunning, state.EventDeployFailed, v1beta1.JobStateRunning, false},
		{"a failure is never turned into a cancel", v1beta1.JobStateFailed, state.EventCancelConfirmed, v1beta1.JobStateFailed, false},
		{"a new deploy leaves a terminal state", v1beta1.JobStateSucceeded, state.EventNewDeploy, v1beta1.JobStatePending, true},
		{"a created JobManager does not revive a succeeded job", v1beta1.JobStateSucceeded, state.EventJobManagerCreated, v1beta1.JobStateSucceeded, false},
		{"an event whose row ends where the job is moves nothing", v1beta1.JobStatePending, state.EventNewDeploy, v1beta1.JobStatePending, true},
		{"an unknown event is refused", v1beta1.JobStateRunning, state.Event("Teleported"), v1beta1.JobStateRunning, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := state.Next(tc.from, tc.ev)
			assert.Equal(t, tc.listed, ok)
			assert.Equal(t, tc.want, got, "a refused event leaves the state as it is")
			if ok && got != tc.from {
				assert.True(t, state.Listed(tc.from, got))
			}
		})
	}
	assert.False(t, state.Listed(v1beta1.JobStateFailed, v1beta1.JobStateCancelled), "a failure is never turned into a cancel")
}

// Derived names, for each pair of states DeriveJob may move the job between, the one derive
// row that lists it, and none for a pair no derive row lists.
func TestDerivedNamesTheDeriveRow(t *testing.T) {
	for _, from := range jobStates {
		for _, to := range jobStates {
			var rows []state.Event
			for _, tr := range state.Transitions {
				if tr.Step == state.StepDerive && tr.To == to && slices.Contains(tr.From, from) {
					rows = append(rows, tr.Event)
				}
			}
			assert.LessOrEqual(t, len(rows), 1, "%s -> %s is listed by derive rows %v", from, to, rows)
			ev, ok := state.Derived(from, to)
			assert.Equal(t, len(rows) == 1, ok, "%s -> %s", from, to)
			if ok {
				assert.Equal(t, rows[0], ev)
				next, listed := state.Next(from, ev)
				assert.True(t, listed)
				assert.Equal(t, to, next)
			}
		}
	}
	_, ok := state.Derived(v1beta1.JobStateSucceeded, v1beta1.JobStatePending)
	assert.False(t, ok, "only a new deploy leaves Succeeded")
}
