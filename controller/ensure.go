package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/state"
)

// ensure keeps an active job's objects in place: the components of the current deploy and
// the JobManager workload, created when the deploy has none yet, or again when a JobManager
// Deployment went missing and the job can resume from HA.
func (c *cycle) ensure(ctx context.Context) error {
	job := c.job()
	if c.obs.wl == nil {
		if job.State != v1beta1.JobStatePending {
			// A Job that disappeared is Lost, not resubmitted (package state); its timeout
			// applies.
			if err := c.out.act(c.applyComponents(ctx)); err != nil {
				return err
			}
			c.poll()
			return nil
		}
		if w, err := c.waitForNoLeader(ctx); err != nil || w != nil {
			if w != nil {
				c.out.wait(w)
			}
			return err
		}
		if job.DeployTime == "" {
			// A deploy not created yet: the first one, or one whose creation failed.
			from := job.FromSavepoint
			if job.ID == "" && c.fc.Spec.Job.FromSavepoint != nil {
				from = *c.fc.Spec.Job.FromSavepoint
			}
			if job.ID == "" {
				return c.newDeploy(ctx, from)
			}
			if err := c.recordedBeforeActing(); err != nil {
				return err
			}
			return c.out.act(c.createJobManager(ctx))
		}
		return c.resume(ctx)
	}
	if err := c.out.act(c.applyComponents(ctx)); err != nil {
		return err
	}
	if c.obs.wl.Deleting {
		c.out.waitFor(ConditionReasonWaitingForJobManagerDeletion, "the JobManager workload is being deleted")
		return nil
	}
	if c.mode == v1beta1.JobManagerDeploymentTypeDeployment {
		if err := c.scaleJobManager(ctx, 1); err != nil {
			return err
		}
	}
	c.idle()
	return nil
}

// resume creates the missing JobManager Deployment of the current deploy again, under the
// same job ID. A deploy whose job ran (or was submitted: ranOrSubmitted) resumes only from HA: the JobManager recovers the job
// graph and the latest checkpoint, and the deploy's savepoint is not passed again (it is
// older than the job's state). When the HA metadata is gone, restoring any savepoint would
// rewind the job silently: the deployment fails with a clear reason and the user chooses.
func (c *cycle) resume(ctx context.Context) error {
	job := c.job()
	if !c.ranOrSubmitted() {
		return c.out.act(c.createJobManager(ctx))
	}
	// HA services other than Kubernetes HA (unsupportedHA) keep the job graph where the
	// controller cannot look: the JobManager is created again and recovers the job if its
	// graph is there; if not, main() finds ResumeFromHAOnly and fails instead of starting
	// from empty state (state.Flink.RestoreRefused).
	if c.kubernetesHA() && !c.obs.ha.jobGraphStored(job.ID) {
		reason := fmt.Sprintf("the JobManager Deployment of job %s is missing and the HA metadata the job would recover from is gone (no job graph in the ConfigMaps of cluster ID %s): restoring savepoint %q would lose the state acknowledged since",
			job.ID, resources.HAClusterID(c.fc), job.SavepointLocation)
		if err := c.setJobState(state.EventDeploymentAndHAMissing, reason, reason, c.now); err != nil {
			return fmt.Errorf("recording the missing JobManager Deployment: %w", err)
		}
		c.setCondition(condition(ConditionDeploymentFailed, metav1.ConditionTrue, ConditionReasonHAMetadataMissing, reason))
		c.event(corev1.EventTypeWarning, ReasonHAMetadataMissing, "Deploy", "%s", reason)
		c.out.requireSavepoint(ConditionReasonHAMetadataMissing, "%s", reason)
		return nil
	}
	job.FromSavepoint = ""
	if err := c.recordedBeforeActing(); err != nil {
		return err
	}
	return c.out.act(c.createJobManager(ctx))
}
