package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/state"
)

func controlInFlight(ctl *v1beta1.FlinkClusterControlStatus) bool {
	return ctl != nil && (ctl.State == v1beta1.ControlStateRequested || ctl.State == v1beta1.ControlStateInProgress)
}

// acceptControl takes the user-control annotation into status.control. The annotation is
// removed once the status is written; while a control is in flight a new one is ignored.
func (c *cycle) acceptControl() {
	name, ok := c.fc.Annotations[v1beta1.ControlAnnotation]
	if !ok {
		return
	}
	c.removeControl = true
	if controlInFlight(c.st.Control) {
		return
	}
	c.st.Control = &v1beta1.FlinkClusterControlStatus{Name: name, State: v1beta1.ControlStateRequested, UpdateTime: state.Time(c.now)}
	switch name {
	case v1beta1.ControlNameSavepoint, v1beta1.ControlNameJobCancel:
		c.event(corev1.EventTypeNormal, ReasonControlAccepted, "Control", "user control %s requested", name)
	default:
		c.controlDone(v1beta1.ControlStateFailed, fmt.Sprintf("unknown user control %q: use %s or %s", name, v1beta1.ControlNameSavepoint, v1beta1.ControlNameJobCancel))
	}
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

func (c *cycle) removeControlAnnotation(ctx context.Context) error {
	if !c.removeControl {
		return nil
	}
	patch := client.MergeFromWithOptions(c.fc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	delete(c.fc.Annotations, v1beta1.ControlAnnotation)
	return c.r.Client.Patch(ctx, c.fc, patch)
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

// cancel stops the job with a savepoint and records it Cancelled; afterJobCancelled applies
// on the next reconcile.
func (c *cycle) cancel(ctx context.Context) error {
	job, ctl := c.job(), c.st.Control
	byControl := controlInFlight(ctl) && ctl.Name == v1beta1.ControlNameJobCancel
	sp := c.st.Savepoint
	cancelling := sp != nil && sp.TriggerReason == SavepointReasonJobCancel &&
		(sp.State == SavepointStateRequested || sp.State == SavepointStateInProgress)

	if !cancelling {
		if job.State != v1beta1.JobStateRunning {
			if byControl {
				c.controlDone(v1beta1.ControlStateFailed, fmt.Sprintf("job is %s, not Running", job.State))
				return nil
			}
			// cancelRequested on a job that is not running: nothing to save.
			c.setJobState(v1beta1.JobStateCancelled, "", "cancelRequested before the job ran", c.now)
			return nil
		}
		c.requestSavepoint(SavepointReasonJobCancel)
		if byControl {
			ctl.State, ctl.UpdateTime = v1beta1.ControlStateInProgress, state.Time(c.now)
		}
	}
	ph, err := c.driveSavepoint(ctx, true)
	if err != nil {
		return err
	}
	switch ph {
	case succeeded:
		c.setJobState(v1beta1.JobStateCancelled, "", "stopped with savepoint "+job.SavepointLocation, c.now)
		if byControl {
			ctl.Details = map[string]string{"savepointLocation": job.SavepointLocation}
			c.controlDone(v1beta1.ControlStateSucceeded, "job stopped with savepoint "+job.SavepointLocation)
		}
		c.poll()
	case failed:
		if w := c.obs.wl; w != nil && w.Complete {
			// Job mode: the JobManager stopped the job and exited before its savepoint
			// location could be read. The job did stop.
			msg := "job stopped, but the savepoint location was not read: " + c.st.Savepoint.Message
			c.setJobState(v1beta1.JobStateCancelled, "", msg, c.now)
			if byControl {
				c.controlDone(v1beta1.ControlStateSucceeded, msg)
			}
			return nil
		}
		if byControl {
			c.controlDone(v1beta1.ControlStateFailed, c.st.Savepoint.Message)
		} else {
			c.poll() // cancelRequested stays: try again
		}
	}
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
		c.requestSavepoint(SavepointReasonUser)
		ctl.State, ctl.UpdateTime = v1beta1.ControlStateInProgress, state.Time(c.now)
	}
	if sp := c.st.Savepoint; sp == nil || sp.TriggerReason != SavepointReasonUser {
		c.controlDone(v1beta1.ControlStateFailed, "superseded by another savepoint")
		return nil
	}
	ph, err := c.driveSavepoint(ctx, false)
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
