package controller

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// cleanup applies to a job that ended. The JobManager Deployment is scaled to 0 and kept; a
// JobManager Job is ended and kept, Complete (endJobManager); then the cleanup policy of the
// end state applies. A job that ended unobserved keeps everything (cleanupAction): its
// JobManager pod holds the log that says how it ended.
func (c *cycle) cleanup(ctx context.Context) error {
	if c.endedUnobserved {
		return nil
	}
	if err := c.scaleJobManager(ctx, 0); err != nil {
		return err
	}
	if ended, err := c.endJobManager(ctx); err != nil || !ended {
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

// endJobManager ends the JobManager of a Job-mode job that ended, once the controller has
// recorded the end. The JobManager runs with execution.shutdown-on-application-finish false
// (resources.FlinkConfiguration), so that it outlives its job until the controller read what
// it needs from the REST API: the job's terminal state and failure, an update's or a
// cancel's savepoint location. Flink's own exit at the application's end came before the
// controller could read a stop-with-savepoint's result, and the update waited forever.
//
// The controller asks Flink to shut down (DELETE /cluster): the entrypoint cleans up the
// cluster's HA data, as it does at the application's end, and exits 0 — Flink's
// shutDownCluster() ends the cluster as SUCCEEDED whatever the job's end — so the Kubernetes
// Job ends Complete, also for a job that FAILED: the FlinkCluster's status, recorded before
// the call, says how the job ended. A JobManager that does not answer within the wait bound
// from the job's end has its Job deleted instead (a Warning Event says so); until then the
// Waiting condition says what the controller waits for.
//
// It reports whether the cleanup policy may apply: the JobManager has ended, or is left
// alone — Deployment mode (scaled to 0 instead), a job ended only by the Lost timeout
// (whose JobManager ran on before too), or a JobManager that reports the job not globally
// terminal, which the shutdown, suspending the job and removing its HA data, would lose.
func (c *cycle) endJobManager(ctx context.Context) (bool, error) {
	job, w := c.job(), c.obs.wl
	if c.mode != v1beta1.JobManagerDeploymentTypeJob || !flinkcluster.Terminal(job.State) ||
		w == nil || w.Deleting || w.Complete || w.Failed {
		return true, nil
	}
	if !slices.ContainsFunc(c.obs.pods, func(p corev1.Pod) bool { return state.ProcessRunning(&p) }) {
		// No JobManager process runs (its container ended, the pod is going, or it never
		// started: an image that cannot be pulled): nothing for the shutdown to end.
		return true, nil
	}
	if f := c.obs.flink; f != nil {
		if j := f.Job; j != nil && !flinkclient.IsTerminalJobState(j.State) {
			return true, nil
		}
		if a := f.Application; a != nil && !flinkclient.IsTerminalApplicationState(a.Status) {
			return true, nil
		}
	}
	if rec := c.orig.Status.Components.Job; rec == nil || rec.ID != job.ID || !flinkcluster.Terminal(rec.State) {
		// The end is recorded by this reconcile: the shutdown is asked on the next, once the
		// stored status says how the job ended. The Job then ends Complete whatever the end,
		// and the shutdown removes the HA data, so nothing else would tell a failure apart.
		c.waitFor(ConditionReasonWaitingForJobManagerShutdown, "job %s ended %s: its JobManager is shut down once the end is on record", job.ID, job.State)
		return false, nil
	}
	ended := c.now
	if job.CompletionTime != nil {
		ended = job.CompletionTime.Time
	}
	why := c.obs.untrusted
	if why == "" {
		why = "its REST API does not answer"
	}
	if c.obs.flink != nil {
		cl, err := c.flinkClient(ctx)
		if err != nil {
			return false, err
		}
		cctx, cancel := context.WithTimeout(ctx, flinkCallTimeout)
		err = cl.ShutdownCluster(cctx)
		cancel()
		if err == nil {
			c.event(corev1.EventTypeNormal, ReasonJobManagerShutdown, "Cleanup",
				"job %s ended %s: asked JobManager Job %s to shut down (DELETE /cluster); the Job ends Complete whatever the job's end", job.ID, job.State, c.obs.jmJob.Name)
			c.waitFor(ConditionReasonWaitingForJobManagerShutdown, "job %s ended %s: its JobManager was asked to shut down and is exiting", job.ID, job.State)
			return false, nil
		}
		ctrl.LoggerFrom(ctx).V(1).Info("Flink did not take the shutdown", "error", err.Error())
		why = "the shutdown (DELETE /cluster) failed: " + err.Error()
	}
	if c.now.Sub(ended) <= c.r.Options.WaitBound {
		c.waitFor(ConditionReasonWaitingForJobManagerShutdown, "job %s ended %s: its JobManager is to be shut down, but %s; past the wait bound (%s from the job's end) its Job is deleted instead",
			job.ID, job.State, why, c.r.Options.WaitBound)
		c.after(ended.Add(c.r.Options.WaitBound).Sub(c.now) + time.Second)
		return false, nil
	}
	c.event(corev1.EventTypeWarning, ReasonJobManagerShutdownUnanswered, "Cleanup",
		"job %s ended %s, but its JobManager did not take the shutdown within %s (%s): deleting JobManager Job %s", job.ID, job.State, c.r.Options.WaitBound, why, c.obs.jmJob.Name)
	if err := c.deleteJobManager(ctx); err != nil {
		return false, err
	}
	c.waitFor(ConditionReasonWaitingForJobManagerShutdown, "job %s ended %s: its JobManager did not take the shutdown within %s, its Job was deleted: waiting for its pods to be gone",
		job.ID, job.State, c.r.Options.WaitBound)
	return false, nil
}
