package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/state"
)

// phase is where a savepoint request stands.
type phase int

const (
	pending phase = iota
	succeeded
	failed
)

// requestSavepoint records a new savepoint request with the trigger ID it will be made
// under; driveSavepoint writes it to the status before it calls Flink, so that a retry after
// a lost answer or a lost status write asks about the same operation (Flink's triggerId
// idempotency) instead of stopping a job that already stopped.
func (c *cycle) requestSavepoint(reason string) {
	c.st.Savepoint = &v1beta1.SavepointStatus{
		JobID:         c.job().ID,
		TriggerID:     c.r.Options.NewID(),
		TriggerReason: reason,
		RequestTime:   state.Time(c.now),
		State:         SavepointStateRequested,
	}
}

func (c *cycle) savepointRequest() flinkclient.SavepointRequest {
	req := flinkclient.SavepointRequest{TriggerID: c.st.Savepoint.TriggerID}
	if j := c.fc.Spec.Job; j != nil {
		if j.SavepointsDir != nil {
			req.TargetDirectory = *j.SavepointsDir
		}
		if j.SavepointFormatType != nil {
			req.FormatType = string(*j.SavepointFormatType)
		}
	}
	return req
}

// driveSavepoint moves the recorded savepoint request one step: trigger it through a trusted
// JobManager, then poll it. stop takes the savepoint with stop-with-savepoint.
func (c *cycle) driveSavepoint(ctx context.Context, stop bool) (phase, error) {
	sp := c.st.Savepoint
	if sp == nil {
		return failed, nil
	}
	switch sp.State {
	case SavepointStateSucceeded:
		return succeeded, nil
	case SavepointStateFailed, SavepointStateUnknown:
		return failed, nil
	case SavepointStateRequested:
		return c.triggerSavepoint(ctx, stop)
	}
	return c.pollSavepoint(ctx, stop)
}

func (c *cycle) triggerSavepoint(ctx context.Context, stop bool) (phase, error) {
	sp := c.st.Savepoint
	if c.job().State != v1beta1.JobStateRunning && c.job().State != v1beta1.JobStateUpdating {
		return c.savepointFailed(fmt.Sprintf("job is %s, not Running", c.job().State)), nil
	}
	if c.obs.flink == nil {
		// The JobManager is restarting or an old one may still lead: wait.
		c.waitFor(ConditionReasonWaitingForFlinkAPI, "to trigger the %s savepoint of job %s: %s", sp.TriggerReason, sp.JobID, c.obs.untrusted)
		return pending, nil
	}
	if fj := c.obs.flink.Job; fj == nil || fj.State != flinkclient.JobStateRunning {
		reported := "not listed"
		if fj != nil {
			reported = fj.State
		}
		// A call made before (its answer lost) may have taken effect: the trigger ID tells.
		if sp.TriggerTime != "" {
			return c.pollSavepoint(ctx, stop)
		}
		return c.savepointFailed(fmt.Sprintf("Flink reports the job %s, not RUNNING", reported)), nil
	}
	// The trigger ID is in the status before Flink hears of it.
	if sp.TriggerTime == "" {
		sp.TriggerTime = state.Time(c.now)
	}
	if err := c.persist(ctx); err != nil {
		return pending, err
	}
	cl, err := c.flinkClient(ctx)
	if err != nil {
		return pending, err
	}
	ctx, cancel := context.WithTimeout(ctx, flinkCallTimeout)
	defer cancel()
	var trigger string
	if stop {
		trigger, err = cl.StopWithSavepoint(ctx, sp.JobID, c.savepointRequest())
	} else {
		trigger, err = cl.TriggerSavepoint(ctx, sp.JobID, c.savepointRequest())
	}
	if err != nil {
		sp.Message = err.Error()
		c.event(corev1.EventTypeWarning, ReasonSavepointFailed, "Savepoint", "triggering the %s savepoint of job %s: %v", sp.TriggerReason, sp.JobID, err)
		c.waitFor(ConditionReasonWaitingForSavepoint, "triggering the %s savepoint of job %s (trigger %s): %v", sp.TriggerReason, sp.JobID, sp.TriggerID, err)
		return pending, nil
	}
	sp.TriggerID, sp.State, sp.Message = trigger, SavepointStateInProgress, ""
	verb := "savepoint"
	if stop {
		verb = "stop-with-savepoint"
	}
	c.event(corev1.EventTypeNormal, ReasonSavepointTriggered, "Savepoint", "triggered %s of job %s (%s), trigger %s", verb, sp.JobID, sp.TriggerReason, trigger)
	c.waitFor(ConditionReasonWaitingForSavepoint, "%s of job %s (trigger %s) in progress", verb, sp.JobID, trigger)
	return pending, nil
}

// pollSavepoint asks for the trigger's result. It asks whichever JobManager answers: a
// trigger ID is only known to the JobManager that took it, so an answer about it is never
// another execution's. A result Flink no longer has (expired after rest.async.store-duration,
// or the JobManager restarted) is recovered from the job's checkpoint statistics when the
// leader reports a savepoint newer than the last one known; otherwise the outcome is unknown,
// and an unknown final savepoint is never replaced by an older one silently.
func (c *cycle) pollSavepoint(ctx context.Context, stop bool) (phase, error) {
	sp := c.st.Savepoint
	cl, err := c.flinkClient(ctx)
	if err != nil {
		return pending, err
	}
	ctx, cancel := context.WithTimeout(ctx, flinkCallTimeout)
	defer cancel()
	st, err := cl.SavepointStatus(ctx, sp.JobID, sp.TriggerID)
	switch {
	case errors.Is(err, flinkclient.ErrNotFound):
		if loc, ok := c.recoverSavepoint(ctx, cl); ok {
			return c.savepointSucceeded(loc, stop, "recovered from the checkpoint statistics"), nil
		}
		if c.obs.flink == nil {
			c.waitFor(ConditionReasonWaitingForFlinkAPI, "to recover the result of trigger %s from the leader's checkpoint statistics: %s", sp.TriggerID, c.obs.untrusted)
			return pending, nil
		}
		return c.savepointUnknown("Flink no longer knows trigger " + sp.TriggerID + " (its result expired or the JobManager restarted) and reports no newer savepoint"), nil
	case err != nil:
		if w := c.obs.wl; w == nil || w.Complete || w.Failed {
			return c.savepointUnknown("the JobManager exited before the savepoint result was read"), nil
		}
		c.waitFor(ConditionReasonWaitingForSavepoint, "reading the result of trigger %s of job %s: %v", sp.TriggerID, sp.JobID, err)
		return pending, nil
	case !st.Completed():
		c.waitFor(ConditionReasonWaitingForSavepoint, "savepoint of job %s (trigger %s) in progress", sp.JobID, sp.TriggerID)
		return pending, nil
	case !st.Succeeded():
		return c.savepointFailed(st.FailureCause), nil
	}
	return c.savepointSucceeded(st.Location, stop, ""), nil
}

// MaxClockSkew is how far Flink's clock may be behind the controller's for a savepoint that
// Flink timestamped before the recorded trigger time still to count as this trigger's
// (recoverSavepoint). It also covers the status's one-second resolution. A larger skew makes
// a recovered result unknown (SavepointRequired), never another savepoint taken for it.
const MaxClockSkew = 30 * time.Second

// recoverSavepoint reads the latest savepoint from the leader's checkpoint statistics: one
// of the trigger's job, externally addressable, not the last one already known, and
// triggered at or after the recorded trigger time (less MaxClockSkew) — a savepoint triggered
// before this trigger (a user's, or an earlier one whose result also expired) is another
// operation's, and never the final savepoint of this one. Whether the job ended is checked
// before the JobManager is replaced (confirmStopEnded): a stop-with-savepoint whose
// savepoint completed may have failed to end the job.
func (c *cycle) recoverSavepoint(ctx context.Context, cl flinkclient.Client) (string, bool) {
	sp := c.st.Savepoint
	if c.obs.flink == nil || sp.JobID != c.jobID() {
		return "", false
	}
	cps, err := cl.GetCheckpoints(ctx, sp.JobID)
	if err != nil {
		return "", false
	}
	latest := cps.LatestSavepoint()
	if latest == nil || latest.ExternalPath == c.job().SavepointLocation {
		return "", false
	}
	if since := state.ParseTime(sp.TriggerTime); since.IsZero() || time.UnixMilli(latest.TriggerTimestamp).Before(since.Add(-MaxClockSkew)) {
		c.event(corev1.EventTypeWarning, ReasonSavepointFailed, "Savepoint",
			"the latest savepoint of job %s, %s, was triggered at %s, before trigger %s (%s): it is not this trigger's result",
			sp.JobID, latest.ExternalPath, time.UnixMilli(latest.TriggerTimestamp).UTC().Format(time.RFC3339), sp.TriggerID, orNone(sp.TriggerTime))
		return "", false
	}
	return latest.ExternalPath, true
}

func (c *cycle) savepointSucceeded(location string, stop bool, how string) phase {
	sp := c.st.Savepoint
	job := c.job()
	sp.State, sp.Message = SavepointStateSucceeded, how
	job.SavepointLocation, job.SavepointTime, job.FinalSavepoint = location, state.Time(c.now), stop
	job.SavepointGeneration = c.fc.Spec.Job.SavepointGeneration
	note := fmt.Sprintf("%s savepoint of job %s taken: %s", sp.TriggerReason, sp.JobID, location)
	if how != "" {
		note += " (" + how + ")"
	}
	c.event(corev1.EventTypeNormal, ReasonSavepointSucceeded, "Savepoint", "%s", note)
	return succeeded
}

func (c *cycle) savepointFailed(msg string) phase {
	sp := c.st.Savepoint
	sp.State, sp.Message = SavepointStateFailed, msg
	c.event(corev1.EventTypeWarning, ReasonSavepointFailed, "Savepoint", "%s savepoint of job %s failed: %s", sp.TriggerReason, sp.JobID, msg)
	return failed
}

// savepointUnknown records a savepoint whose outcome cannot be learnt: it may have been taken
// (and, for a stop, have stopped the job) or not.
func (c *cycle) savepointUnknown(msg string) phase {
	sp := c.st.Savepoint
	sp.State, sp.Message = SavepointStateUnknown, msg
	c.event(corev1.EventTypeWarning, ReasonSavepointFailed, "Savepoint", "%s savepoint of job %s: outcome unknown: %s", sp.TriggerReason, sp.JobID, msg)
	return failed
}
