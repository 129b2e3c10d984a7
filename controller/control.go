package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

func controlInFlight(ctl *v1beta1.FlinkClusterControlStatus) bool {
	return ctl != nil && (ctl.State == v1beta1.ControlStateRequested || ctl.State == v1beta1.ControlStateInProgress)
}

// acceptControl takes the user-control annotation into status.control. The annotation is
// removed once the status is written; while a control is in flight a new one is ignored.
func (c *cycle) acceptControl(context.Context) error {
	name, ok := c.fc.Annotations[v1beta1.ControlAnnotation]
	if !ok {
		return nil
	}
	c.out.removeControl = true
	if controlInFlight(c.st.Control) {
		c.out.controlIgnored = true
		return nil
	}
	c.st.Control = &v1beta1.FlinkClusterControlStatus{Name: name, State: v1beta1.ControlStateRequested, UpdateTime: state.Time(c.now)}
	switch name {
	case v1beta1.ControlNameSavepoint, v1beta1.ControlNameJobCancel:
		c.event(corev1.EventTypeNormal, ReasonControlAccepted, "Control", "user control %s requested", name)
	default:
		c.controlDone(v1beta1.ControlStateFailed, fmt.Sprintf("unknown user control %q: use %s or %s", name, v1beta1.ControlNameSavepoint, v1beta1.ControlNameJobCancel))
	}
	return nil
}

// controlDone ends the control in flight.
func (c *cycle) controlDone(ctlState, message string) {
	ctl := c.st.Control
	ctl.State, ctl.Message, ctl.UpdateTime = ctlState, message, state.Time(c.now)
	if ctlState == v1beta1.ControlStateSucceeded {
		c.event(corev1.EventTypeNormal, ReasonControlSucceeded, "Control", "user control %s succeeded: %s", ctl.Name, message)
		return
	}
	c.event(corev1.EventTypeWarning, ReasonControlFailed, "Control", "user control %s failed: %s", ctl.Name, message)
}

// cancelPending reports whether the job is to be cancelled: the job-cancel control, or
// spec.job.cancelRequested on a job that has not ended.
func (c *cycle) cancelPending() bool {
	if ctl := c.st.Control; controlInFlight(ctl) && ctl.Name == v1beta1.ControlNameJobCancel {
		return true
	}
	j := c.fc.Spec.Job
	return j.CancelRequested != nil && *j.CancelRequested && !c.finished()
}

// cancelStopping reports whether a cancel's stop-with-savepoint of the current job is in
// flight: it finishes before an update starts, which would otherwise replace its savepoint
// record and take the job's FINISHED, after the cancel's stop, for a success.
func (c *cycle) cancelStopping() bool {
	return c.cancelPending() && c.job().State != v1beta1.JobStateUpdating && stopInFlight(c.st, SavepointReasonJobCancel)
}

// cancel stops the job with a savepoint and records it Cancelled once Flink confirms that the
// job ended (FINISHED after the stop, CANCELED) or the JobManager is gone; afterJobCancelled
// applies on the next reconcile. When the savepoint cannot be taken, the user's cancel
// request still stands: the job is cancelled without one (PATCH /jobs/:id?mode=cancel, or on
// Flink 2.3 the application's cancel), and a job that is not running has its JobManager
// removed.
func cancel(ctx context.Context, a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus) (out flowOut, err error) {
	job, ctl := st.Components.Job, st.Control
	byControl := controlInFlight(ctl) && ctl.Name == v1beta1.ControlNameJobCancel
	sp := st.Savepoint
	cancelling := sp != nil && sp.TriggerReason == SavepointReasonJobCancel && sp.JobID == job.ID

	if !cancelling {
		if job.State != v1beta1.JobStateRunning {
			if byControl {
				a.controlDone(v1beta1.ControlStateFailed, fmt.Sprintf("job is %s, not Running", job.State))
				return out, nil
			}
			// cancelRequested on a job that is not running: nothing to save; stop it.
			err = cancelWithoutSavepoint(ctx, a, in, st, &out, "cancelRequested before the job ran")
			return out, err
		}
		a.requestSavepoint(SavepointReasonJobCancel)
		if byControl {
			ctl.State, ctl.UpdateTime = v1beta1.ControlStateInProgress, state.Time(in.now)
		}
	}
	ph, err := a.driveSavepoint(ctx, &out, true)
	if err != nil {
		return out, err
	}
	switch ph {
	case pending:
		return out, nil
	case succeeded:
		if !stopCompleted(st) && !in.jobEnded() {
			out.waitFor(ConditionReasonWaitingForJobCancel, "job %s was stopped with savepoint %s: waiting for Flink to report it ended", job.ID, job.SavepointLocation)
			return out, nil
		}
		if err := cancelled(a, in, st, &out, "stopped with savepoint "+job.SavepointLocation, byControl); err != nil {
			return out, err
		}
		if byControl {
			ctl.Details = map[string]string{"savepointLocation": job.SavepointLocation}
		}
		return out, nil
	}
	err = cancelWithoutSavepoint(ctx, a, in, st, &out, "the savepoint could not be taken: "+st.Savepoint.Message)
	return out, err
}

// jobEnded reports whether Flink (or the JobManager's absence) confirms the job ended.
func (in flowIn) jobEnded() bool {
	if f := in.obs.flink; f != nil && f.Job != nil && flinkclient.IsTerminalJobState(f.Job.State) {
		return true
	}
	if w := in.obs.wl; w != nil && (w.Complete || w.Failed) {
		return true
	}
	return (in.obs.wl == nil || in.obs.wl.Deleting) && len(in.obs.pods) == 0
}

// cancelled records the job Cancelled and ends a job-cancel control. A job that ended on its
// own before the cancel took effect (Flink reported it FAILED meanwhile) keeps its end: the
// job state machine leaves a terminal state only by a new deploy or a restart, and a
// failure recorded as a cancel would skip afterJobFails and hide the failure.
func cancelled(a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus, out *flowOut, how string, byControl bool) error {
	job := st.Components.Job
	if flinkcluster.Terminal(job.State) && job.State != v1beta1.JobStateCancelled {
		a.event(corev1.EventTypeNormal, ReasonJobCancelled, "Cancel", "job %s ended %s before the cancel took effect", job.ID, job.State)
		if byControl {
			a.controlDone(v1beta1.ControlStateFailed, "the job ended "+job.State+" before the cancel took effect")
		}
		out.lookAgain()
		return nil
	}
	if err := a.setJobState(state.EventCancelConfirmed, "", how, in.now); err != nil {
		return fmt.Errorf("recording the confirmed cancel: %w", err)
	}
	a.event(corev1.EventTypeNormal, ReasonJobCancelled, "Cancel", "job %s cancelled: %s", job.ID, how)
	if byControl {
		a.controlDone(v1beta1.ControlStateSucceeded, "job "+how)
	}
	out.lookAgain()
	return nil
}

// cancelWithoutSavepoint cancels a job whose savepoint cannot be taken: Flink cancels a job
// it runs; a JobManager that cannot be asked is removed. Cancelled is recorded once the job
// is confirmed ended.
func cancelWithoutSavepoint(ctx context.Context, a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus, out *flowOut, why string) error {
	ctl, job := st.Control, st.Components.Job
	byControl := controlInFlight(ctl) && ctl.Name == v1beta1.ControlNameJobCancel
	if flinkcluster.Terminal(job.State) && job.State != v1beta1.JobStateCancelled {
		// The job ended on its own before the cancel took effect (a failure, such as a
		// restore refused on ResumeFromHAOnly): that end stands, a cancel would hide it.
		if byControl {
			a.controlDone(v1beta1.ControlStateFailed, fmt.Sprintf("job %s ended %s before the cancel took effect", job.ID, job.State))
		}
		return nil
	}
	if in.jobEnded() {
		return cancelled(a, in, st, out, "cancelled without a savepoint ("+why+")", byControl)
	}
	if f := in.obs.flink; f != nil && f.Job != nil {
		cl, err := a.flinkClient(ctx)
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, flinkCallTimeout)
		defer cancel()
		if app := f.Application; app != nil {
			err = cl.CancelApplication(cctx, app.ID)
		} else {
			err = cl.CancelJob(cctx, f.Job.ID)
		}
		if err != nil {
			out.waitFor(ConditionReasonWaitingForJobCancel, "cancelling job %s without a savepoint (%s): %v", f.Job.ID, why, err)
			return nil
		}
		out.waitFor(ConditionReasonWaitingForJobCancel, "cancelled job %s without a savepoint (%s): waiting for Flink to report it CANCELED", f.Job.ID, why)
		return nil
	}
	// The REST API does not answer for the job: stop the JobManager, whose absence confirms
	// the cancel.
	if err := out.act(a.deleteJobManager(ctx, out)); err != nil {
		return fmt.Errorf("stopping the JobManager to cancel the job: %w", err)
	}
	out.waitFor(ConditionReasonWaitingForJobCancel, "cancelling job %s (%s): waiting for the JobManager to be gone", job.ID, why)
	return nil
}

// savepointControl takes a savepoint that leaves the job running: the JobManager workload
// and pod are untouched.
func (c *cycle) savepointControl(ctx context.Context) error {
	ctl := c.st.Control
	if !controlInFlight(ctl) || ctl.Name != v1beta1.ControlNameSavepoint {
		return nil
	}
	if ctl.State == v1beta1.ControlStateRequested {
		if c.job().State != v1beta1.JobStateRunning || c.updatePending() || c.cancelPending() {
			c.controlDone(v1beta1.ControlStateFailed, fmt.Sprintf("job is %s, not Running", c.job().State))
			return nil
		}
		if savepointInFlight(c.st) {
			// A savepoint spec.job asked for (scheduled, savepointGeneration) is under way:
			// its record is the only trace of a savepoint that may complete, which an
			// update's last-state check reads. The user's waits for it rather than replace
			// it (a replaced record let a last-state redeploy restore an older checkpoint).
			c.poll()
			return nil
		}
		c.requestSavepoint(SavepointReasonUser)
		ctl.State, ctl.UpdateTime = v1beta1.ControlStateInProgress, state.Time(c.now)
	}
	if sp := c.st.Savepoint; sp == nil || sp.TriggerReason != SavepointReasonUser {
		c.controlDone(v1beta1.ControlStateFailed, "superseded by another savepoint")
		return nil
	}
	ph, err := c.driveSavepoint(ctx, &c.out.flowOut, false)
	if err != nil {
		return err
	}
	switch ph {
	case succeeded:
		loc := c.job().SavepointLocation
		ctl.Details = map[string]string{"savepointLocation": loc}
		c.controlDone(v1beta1.ControlStateSucceeded, "savepoint taken: "+loc)
	case failed:
		c.controlDone(v1beta1.ControlStateFailed, c.st.Savepoint.Message)
	}
	return nil
}
