package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// cleanup applies to a job that ended. The JobManager Deployment is scaled to 0 and kept,
// like a finished JobManager Job; then the cleanup policy of the end state applies. A job
// that ended unobserved keeps everything (cleanupAction): its JobManager pod holds the log
// that says how it ended.
func (c *cycle) cleanup(ctx context.Context) error {
	if c.endedUnobserved {
		return nil
	}
	if err := c.scaleJobManager(ctx, 0); err != nil {
		return err
	}
	action := c.cleanupAction()
	switch action {
	case v1beta1.CleanupActionDeleteCluster:
		objects := (c.obs.wl != nil && !c.obs.wl.Deleting) || c.obs.tmExists || c.obs.serviceExists || c.obs.configMapExists
		if objects {
			c.event(corev1.EventTypeNormal, ReasonCleanup, "Cleanup", "job %s: %s", c.job().State, action)
		}
		if objects || c.obs.wl != nil || len(c.obs.pods) > 0 {
			// Deleted objects may still terminate: look again until they are gone.
			if err := c.deleteAll(ctx); err != nil {
				return err
			}
			c.poll()
		}
	case v1beta1.CleanupActionDeleteTaskManager:
		if c.obs.tmExists {
			c.event(corev1.EventTypeNormal, ReasonCleanup, "Cleanup", "job %s: %s", c.job().State, action)
			return c.deleteTaskManagers(ctx)
		}
	}
	return nil
}
