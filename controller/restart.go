package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// restart (Job mode, restartPolicy FromSavepointOnFailure) replaces a failed job's JobManager
// Job with one that restores the latest savepoint.
func (c *cycle) restart(ctx context.Context) error {
	job := c.job()
	if job.State != v1beta1.JobStateRestarting {
		job.RestartCount++
		c.event(corev1.EventTypeNormal, ReasonRestarting, "Restart", "restarting failed job %s from savepoint %s (restart %d)",
			job.ID, job.SavepointLocation, job.RestartCount)
		c.setJobState(v1beta1.JobStateRestarting, "", fmt.Sprintf("restartPolicy %s", v1beta1.JobRestartPolicyFromSavepointOnFailure), c.now)
	}
	if c.obs.wl != nil && !c.obs.wl.Deleting {
		if err := c.deleteJobManager(ctx); err != nil {
			return err
		}
		c.poll()
		return nil
	}
	if none, err := c.waitForNoJobManagerPods(ctx); err != nil || !none {
		return err
	}
	if c.obs.wl != nil {
		c.poll()
		return nil
	}
	if err := c.applyComponents(ctx); err != nil {
		return err
	}
	return c.createJobManager(ctx, job.SavepointLocation)
}
