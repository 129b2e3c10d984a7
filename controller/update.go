package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/state"
)

// update rolls the job to the next revision: stop-with-savepoint, delete the old JobManager
// workload, wait until every old JobManager pod is gone, then create the next revision from
// the savepoint (Updating -> Deploying).
func (c *cycle) update(ctx context.Context) error {
	job := c.job()
	if job.State != v1beta1.JobStateUpdating {
		c.startUpdate()
	}

	if sp := c.st.Savepoint; sp != nil && sp.TriggerReason == SavepointReasonUpdate &&
		(sp.State == SavepointStateRequested || sp.State == SavepointStateInProgress) {
		ph, err := c.driveSavepoint(ctx, true)
		if err != nil {
			return err
		}
		switch ph {
		case pending:
			c.updateStepf(ConditionReasonStoppingWithSavepoint, "stopping job %s with a savepoint to update to revision %s",
				job.ID, c.st.Revision.NextRevision)
			return nil
		case failed:
			if c.flinkReportsRunning() {
				// The job still runs: try again rather than lose its state.
				c.requestSavepoint(SavepointReasonUpdate)
				c.updateStepf(ConditionReasonStoppingWithSavepoint, "the savepoint failed (%s), the job still runs: stopping job %s with a savepoint again",
					c.st.Savepoint.Message, job.ID)
				c.poll()
				return nil
			}
		}
	}

	if c.obs.wl != nil && !c.obs.wl.Deleting && c.obs.wl.Revision == c.st.Revision.NextRevision {
		// The next revision's workload exists already: it was created, but recording that
		// failed. Adopt it rather than restart it.
		c.st.Revision.CurrentRevision = c.st.Revision.NextRevision
		c.setJobState(v1beta1.JobStateDeploying, "", "next revision's JobManager exists", c.now)
		c.updateStepf(ConditionReasonDeployingNextRevision, "the JobManager of revision %s exists", c.st.Revision.CurrentRevision)
		c.poll()
		return nil
	}
	if c.obs.wl != nil && !c.obs.wl.Deleting {
		if err := c.deleteJobManager(ctx); err != nil {
			return err
		}
		c.updateStepf(ConditionReasonWaitingForJobManagerPods, "deleted the JobManager of revision %s: waiting for its pods to be gone: %s",
			c.obs.wl.Revision, podNames(c.obs.pods))
		c.poll()
		return nil
	}
	none, err := c.waitForNoJobManagerPods(ctx)
	if err != nil {
		return err
	}
	if !none {
		c.updateStepf(ConditionReasonWaitingForJobManagerPods, "waiting for the old JobManager pods to be gone: %s", podNames(c.obs.pods))
		return nil
	}
	if c.obs.wl != nil {
		// The old workload is still being deleted.
		c.updateStepf(ConditionReasonWaitingForJobManagerPods, "waiting for the old JobManager %s to be deleted", c.obs.wl.Revision)
		c.poll()
		return nil
	}

	c.st.Revision.CurrentRevision = c.st.Revision.NextRevision
	if err := c.applyComponents(ctx); err != nil {
		return err
	}
	from := c.restoreFrom()
	if err := c.createJobManager(ctx, from); err != nil {
		return err
	}
	if from == "" {
		from = "none"
	}
	c.updateStepf(ConditionReasonDeployingNextRevision, "deploying revision %s, restoring savepoint %s", c.st.Revision.CurrentRevision, from)
	return nil
}

// startUpdate moves the job to Updating and, when it runs, asks for its final savepoint.
func (c *cycle) startUpdate() {
	job := c.job()
	prev := job.State
	takeSavepoint := c.fc.Spec.Job.TakeSavepointOnUpdate == nil || *c.fc.Spec.Job.TakeSavepointOnUpdate
	if ctl := c.st.Control; controlInFlight(ctl) && ctl.Name == v1beta1.ControlNameSavepoint {
		c.controlDone(v1beta1.ControlStateFailed, "superseded by an update")
	}
	c.event(corev1.EventTypeNormal, ReasonUpdateStarted, "Update", "spec changed: updating from revision %s to %s",
		c.st.Revision.CurrentRevision, c.st.Revision.NextRevision)
	c.setJobState(v1beta1.JobStateUpdating, "", fmt.Sprintf("was %s", prev), c.now)
	if prev == v1beta1.JobStateRunning && takeSavepoint && c.obs.wl != nil {
		c.requestSavepoint(SavepointReasonUpdate)
	}
}

func (c *cycle) flinkReportsRunning() bool {
	return c.obs.flink != nil && c.obs.flink.Job != nil && c.obs.flink.Job.State == flinkclient.JobStateRunning
}

// restoreFrom is the savepoint a new run restores: the update's or cancel's final
// savepoint, else the latest savepoint young enough, else spec.job.fromSavepoint.
func (c *cycle) restoreFrom() string {
	job := c.job()
	if job.FinalSavepoint && job.SavepointLocation != "" {
		return job.SavepointLocation
	}
	if state.SavepointFresh(&c.fc.Spec, job, c.now) {
		return job.SavepointLocation
	}
	if c.fc.Spec.Job.FromSavepoint != nil {
		return *c.fc.Spec.Job.FromSavepoint
	}
	return ""
}
