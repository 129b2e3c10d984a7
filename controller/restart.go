package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/state"
)

// restart (Job mode, restartPolicy FromSavepointOnFailure) replaces a failed job's JobManager
// Job with a new deploy that restores the latest savepoint — the user's standing choice,
// bounded by maxStateAgeToRestoreSeconds.
func (c *cycle) restart(ctx context.Context) error {
	job := c.job()
	if job.State != v1beta1.JobStateRestarting {
		job.RestartCount++
		c.event(corev1.EventTypeNormal, ReasonRestarting, "Restart", "restarting failed job %s from savepoint %s (restart %d)",
			job.ID, job.SavepointLocation, job.RestartCount)
		if err := c.setJobState(state.EventRestart, "", fmt.Sprintf("restartPolicy %s", v1beta1.JobRestartPolicyFromSavepointOnFailure), c.now); err != nil {
			return fmt.Errorf("recording the restart: %w", err)
		}
	}
	ready, err := c.replaceJobManager(ctx, false)
	if err != nil || !ready {
		return err
	}
	return c.newDeploy(ctx, job.SavepointLocation)
}

// replaceJobManager removes the current JobManager before a new deploy: it deletes the
// workload, waits until no old JobManager pod may still lead, then deletes the cluster's HA
// ConfigMaps so that the new JobManager cannot recover the old job graph — or, with
// keepCheckpoints (a last-state redeploy), removes only the job graphs and keeps the
// checkpoint stores. ready reports whether the new deploy may be created.
func (c *cycle) replaceJobManager(ctx context.Context, keepCheckpoints bool) (ready bool, err error) {
	if c.obs.wl != nil && !c.obs.wl.Deleting {
		if err := c.out.act(c.deleteJobManager(ctx)); err != nil {
			return false, fmt.Errorf("deleting the old JobManager: %w", err)
		}
		c.out.haltUpdate(waitCondition(ConditionReasonWaitingForJobManagerPods, "deleted the JobManager of revision %s: waiting for its pods to be gone: %s",
			c.obs.wl.Revision, podNames(c.obs.pods)))
		return false, nil
	}
	if w, err := c.waitForNoLeader(ctx); err != nil || w != nil {
		if w != nil {
			c.out.haltUpdate(w)
		}
		return false, err
	}
	if c.obs.wl != nil {
		c.out.haltUpdate(waitCondition(ConditionReasonWaitingForJobManagerDeletion, "waiting for the old JobManager workload (revision %s) to be deleted", c.obs.wl.Revision))
		return false, nil
	}
	if keepCheckpoints {
		gone, err := c.removeJobGraphs(ctx)
		if err == nil && !gone {
			c.out.waitFor(ConditionReasonWaitingForJobManagerPods, "waiting for the old deploy's job graph to be removed from the HA ConfigMaps")
		}
		return gone && err == nil, err
	}
	gone, err := c.deleteHAConfigMaps(ctx)
	if err != nil || !gone {
		if err == nil {
			c.out.waitFor(ConditionReasonWaitingForJobManagerPods, "waiting for the HA ConfigMaps of the old deploy to be deleted")
		}
		return false, err
	}
	return true, nil
}
