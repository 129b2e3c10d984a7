package flinksim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// TestJobAnnotationMovesTheJob: every value of JobAnnotation, from the state a job may be in
// when the user sets it, moves the job as Flink would, and records a failure in the job's
// exception history where Flink's JobMaster does.
func TestJobAnnotationMovesTheJob(t *testing.T) {
	const id = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
	for _, tc := range []struct {
		name, value, from, want string
		moved, exception        bool
	}{
		{"RESTARTING: a failover, recorded as an exception", "RESTARTING", flinkclient.JobStateRunning, flinkclient.JobStateRestarting, true, true},
		{"RUNNING after a failover", "RUNNING", flinkclient.JobStateRestarting, flinkclient.JobStateRunning, true, false},
		{"lower case is the same value", "restarting", flinkclient.JobStateRunning, flinkclient.JobStateRestarting, true, true},
		{"FAILING: failing without a restart left, recorded as an exception", "FAILING", flinkclient.JobStateRunning, flinkclient.JobStateFailing, true, true},
		{"FAILED, recorded as an exception", "FAILED", flinkclient.JobStateFailing, flinkclient.JobStateFailed, true, true},
		{"CANCELLING stays cancelling", "CANCELLING", flinkclient.JobStateRunning, flinkclient.JobStateCancelling, true, false},
		{"CANCELED after CANCELLING", "CANCELED", flinkclient.JobStateCancelling, flinkclient.JobStateCanceled, true, false},
		{"FINISHED", "FINISHED", flinkclient.JobStateRunning, flinkclient.JobStateFinished, true, false},
		{"SUSPENDED", "SUSPENDED", flinkclient.JobStateRunning, flinkclient.JobStateSuspended, true, false},
		{"CREATED: the adaptive scheduler waiting for slots", "CREATED", flinkclient.JobStateRestarting, flinkclient.JobStateCreated, true, false},
		{"INITIALIZING", "INITIALIZING", flinkclient.JobStateCreated, flinkclient.JobStateInitializing, true, false},
		{"a job that ended stays ended", "RUNNING", flinkclient.JobStateFailed, flinkclient.JobStateFailed, false, false},
		{"a SUSPENDED job's JobMaster is gone: it stays SUSPENDED", "RUNNING", flinkclient.JobStateSuspended, flinkclient.JobStateSuspended, false, false},
		{"the state the job is in: nothing to do", "RUNNING", flinkclient.JobStateRunning, flinkclient.JobStateRunning, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			move, ok := jobMoves[normalizeJobValue(tc.value)]
			require.True(t, ok, "a known value")
			jm := fakeflink.New()
			defer jm.Close()
			jm.SetJobState(id, tc.from)
			assert.Equal(t, tc.moved, moveJob(jm, id, move))
			assert.Equal(t, tc.want, jm.JobState(id))
			ex, err := flinkclient.New(jm.URL(), jm.HTTPClient())
			require.NoError(t, err)
			got, err := ex.GetExceptions(t.Context(), id)
			require.NoError(t, err)
			assert.Equal(t, tc.exception, len(got) > 0, "exception history: %v", got)
		})
	}
	for _, v := range []string{"RECONCILING", "BOGUS", ""} {
		_, ok := jobMoves[normalizeJobValue(v)]
		assert.False(t, ok, "%q is no value to act on", v)
	}
}
