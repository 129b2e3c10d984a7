package controller

import (
	"context"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// ensure keeps an active job's objects in place: the components of the current revision and
// the JobManager workload, created again when missing (once no JobManager pod is left).
func (c *cycle) ensure(ctx context.Context) error {
	if err := c.applyComponents(ctx); err != nil {
		return err
	}
	if c.obs.wl == nil {
		if c.job().State != v1beta1.JobStatePending {
			// A Job that disappeared is Lost, not resubmitted (package state); its timeout
			// applies.
			c.poll()
			return nil
		}
		if none, err := c.waitForNoJobManagerPods(ctx); err != nil || !none {
			return err
		}
		from := c.job().FromSavepoint
		if from == "" {
			from = c.restoreFrom()
		}
		return c.createJobManager(ctx, from)
	}
	if c.obs.wl.Deleting {
		c.poll()
		return nil
	}
	if c.mode == v1beta1.JobManagerDeploymentTypeDeployment {
		if err := c.scaleJobManager(ctx, 1); err != nil {
			return err
		}
	}
	c.poll()
	return nil
}
