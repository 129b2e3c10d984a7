package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/events"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// The cycle moves the job only by the job state machine: an event its table does not list
// for the job's state is refused — the state stays, a Warning Event UnlistedTransition says
// so and the error ends the flow — and a listed one is applied with its Event, unless the act
// that caused it records its own (toldByItsAct).
func TestSetJobStateRefusesUnlistedTransitions(t *testing.T) {
	const jobID = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name    string
		from    string
		ev      state.Event
		want    string
		refused bool
		// told: the act records the transition's Event; setJobState records none.
		told bool
	}{
		{"a failure is never turned into a cancel", v1beta1.JobStateFailed, state.EventCancelConfirmed, v1beta1.JobStateFailed, true, false},
		{"a created JobManager does not revive a succeeded job", v1beta1.JobStateSucceeded, state.EventJobManagerCreated, v1beta1.JobStateSucceeded, true, false},
		{"a spec reverted mid-update applies only to an updating job", v1beta1.JobStateDeploying, state.EventSpecRevertedRunning, v1beta1.JobStateDeploying, true, false},
		{"a running job Flink reports is Running", v1beta1.JobStateDeploying, state.EventReportedRunning, v1beta1.JobStateRunning, false, false},
		{"a spec change moves a running job to Updating", v1beta1.JobStateRunning, state.EventSpecChanged, v1beta1.JobStateUpdating, false, true},
		{"a new deploy leaves a terminal state", v1beta1.JobStateFailed, state.EventNewDeploy, v1beta1.JobStatePending, false, true},
		{"a created JobManager deploys a pending job", v1beta1.JobStatePending, state.EventJobManagerCreated, v1beta1.JobStateDeploying, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := builder.MakeAppCluster("wc").Deployment().Obj()
			fc.Status.Components.Job = &v1beta1.JobStatus{ID: jobID, State: tc.from}
			rec := events.NewFakeRecorder(10)
			c := &cycle{r: &Reconciler{Recorder: rec}, fc: fc, st: &fc.Status, now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}

			err := c.setJobState(tc.ev, "", "", c.now)
			assert.Equal(t, tc.want, c.job().State)
			if tc.told {
				assert.NoError(t, err)
				assert.Empty(t, rec.Events, "the act's own Event tells it")
				return
			}
			require.Len(t, rec.Events, 1)
			got := <-rec.Events
			if tc.refused {
				assert.ErrorIs(t, err, errUnlistedTransition)
				assert.Contains(t, got, "Warning "+ReasonUnlistedTransition)
				assert.Empty(t, c.job().FailureReasons)
				return
			}
			assert.NoError(t, err)
			assert.NotContains(t, got, ReasonUnlistedTransition)
		})
	}
}
