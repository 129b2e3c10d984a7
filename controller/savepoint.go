package controller

import (
	"context"
	"errors"
	"fmt"

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

// requestSavepoint records a new savepoint request; driveSavepoint triggers it.
func (c *cycle) requestSavepoint(reason string) {
	c.st.Savepoint = &v1beta1.SavepointStatus{
		JobID:         c.job().ID,
		TriggerReason: reason,
		RequestTime:   state.Time(c.now),
		State:         SavepointStateRequested,
	}
}

func (c *cycle) savepointRequest() flinkclient.SavepointRequest {
	var req flinkclient.SavepointRequest
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
	case SavepointStateFailed:
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
		// The JobManager is restarting or an old one may still answer: wait.
		c.poll()
		return pending, nil
	}
	if fj := c.obs.flink.Job; fj == nil || fj.State != flinkclient.JobStateRunning {
		reported := "not listed"
		if fj != nil {
			reported = fj.State
		}
		return c.savepointFailed(fmt.Sprintf("Flink reports the job %s, not RUNNING", reported)), nil
	}
	cl, err := c.flinkClient()
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
		c.poll()
		return pending, nil
	}
	sp.TriggerID, sp.TriggerTime, sp.State, sp.Message = trigger, state.Time(c.now), SavepointStateInProgress, ""
	verb := "savepoint"
	if stop {
		verb = "stop-with-savepoint"
	}
	c.event(corev1.EventTypeNormal, ReasonSavepointTriggered, "Savepoint", "triggered %s of job %s (%s), trigger %s", verb, sp.JobID, sp.TriggerReason, trigger)
	c.poll()
	return pending, nil
}

// pollSavepoint asks for the trigger's result. It asks whichever JobManager answers: a
// trigger ID is only known to the JobManager that took it, so an answer about it is never
// another execution's.
func (c *cycle) pollSavepoint(ctx context.Context, stop bool) (phase, error) {
	sp := c.st.Savepoint
	cl, err := c.flinkClient()
	if err != nil {
		return pending, err
	}
	ctx, cancel := context.WithTimeout(ctx, flinkCallTimeout)
	defer cancel()
	st, err := cl.SavepointStatus(ctx, sp.JobID, sp.TriggerID)
	switch {
	case errors.Is(err, flinkclient.ErrNotFound):
		return c.savepointFailed("the JobManager does not know trigger " + sp.TriggerID + " (it restarted)"), nil
	case err != nil:
		if w := c.obs.wl; w != nil && (w.Complete || w.Failed) {
			return c.savepointFailed("the JobManager exited before the savepoint result was read"), nil
		}
		c.poll()
		return pending, nil
	case !st.Completed():
		c.poll()
		return pending, nil
	case !st.Succeeded():
		return c.savepointFailed(st.FailureCause), nil
	}
	job := c.job()
	sp.State, sp.Message = SavepointStateSucceeded, ""
	job.SavepointLocation, job.SavepointTime, job.FinalSavepoint = st.Location, state.Time(c.now), stop
	job.SavepointGeneration = c.fc.Spec.Job.SavepointGeneration
	c.event(corev1.EventTypeNormal, ReasonSavepointSucceeded, "Savepoint", "%s savepoint of job %s taken: %s", sp.TriggerReason, sp.JobID, st.Location)
	return succeeded, nil
}

func (c *cycle) savepointFailed(msg string) phase {
	sp := c.st.Savepoint
	sp.State, sp.Message = SavepointStateFailed, msg
	c.event(corev1.EventTypeWarning, ReasonSavepointFailed, "Savepoint", "%s savepoint of job %s failed: %s", sp.TriggerReason, sp.JobID, msg)
	return failed
}
