package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// cleanup applies to a job that ended. The JobManager Deployment is scaled to 0 and kept; a
// JobManager Job is ended and kept, Complete (endJobManager); then the cleanup policy of the
// end state applies. A job that ended unobserved keeps everything (cleanupAction): its
// JobManager pod holds the log that says how it ended.
func cleanup(ctx context.Context, a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus) (out flowOut, err error) {
	if in.derived.endedUnobserved {
		return out, nil
	}
	if err := a.scaleJobManager(ctx, 0); err != nil {
		return out, err
	}
	if ended, err := endJobManager(ctx, a, in, st, &out); err != nil || !ended {
		return out, err
	}
	job, o := st.Components.Job, in.obs
	action := cleanupAction(in.fc, job, in.derived)
	switch action {
	case v1beta1.CleanupActionDeleteCluster:
		objects := (o.wl != nil && !o.wl.Deleting) || o.tmExists || o.serviceExists || o.configMapExists
		if objects {
			a.event(corev1.EventTypeNormal, ReasonCleanup, "Cleanup", "job %s: %s", job.State, action)
		}
		if objects || o.wl != nil || len(o.pods) > 0 {
			// Deleted objects may still terminate: look again until they are gone.
			if err := a.deleteAll(ctx, &out); err != nil {
				return out, fmt.Errorf("deleting the cluster's objects: %w", err)
			}
			out.lookAgain()
		}
	case v1beta1.CleanupActionDeleteTaskManager:
		if o.tmExists {
			a.event(corev1.EventTypeNormal, ReasonCleanup, "Cleanup", "job %s: %s", job.State, action)
			err = out.act(a.deleteTaskManagers(ctx))
			return out, err
		}
	}
	return out, nil
}

// endJobManager ends the JobManager of a Job-mode job that ended, once the stored status says
// how it ended (or that the Lost timeout ended it). The JobManager outlives its job
// (execution.shutdown-on-application-finish false) so that the controller can read the job's
// end and an update's or a cancel's savepoint first. It is asked to shut down (DELETE
// /cluster), which removes the HA data and ends the Job Complete whatever the job's end; one
// that does not answer within the wait bound, or a Lost job whose HA store still holds its
// graph or checkpoints (a shutdown would remove them), has its Job deleted instead. It
// reports whether the cleanup policy may apply: the JobManager ended, or is left alone
// (Deployment mode, or a job or application Flink reports not globally terminal).
func endJobManager(ctx context.Context, a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus, out *flowOut) (bool, error) {
	job := st.Components.Job
	lost := in.derived.lostTimedOut && !flinkcluster.Terminal(job.State)
	if in.jobManagerLeftAlone(job, lost) {
		return true, nil
	}
	how := job.State
	if lost {
		how = fmt.Sprintf("Lost (not reported within --lost-job-timeout %s)", in.opts.LostTimeout)
	}
	if !endRecorded(in.read, job, lost) {
		// The end is recorded by this reconcile: the shutdown is asked on the next, once the
		// stored status says how the job ended. The Job then ends Complete whatever the end,
		// and the shutdown removes the HA data, so nothing else would tell a failure apart.
		out.waitFor(ConditionReasonWaitingForJobManagerShutdown, "job %s ended %s: its JobManager is shut down once the end is on record", job.ID, how)
		return false, nil
	}
	if lost && in.haHoldsJob(job.ID) {
		a.event(corev1.EventTypeNormal, ReasonCleanup, "Cleanup",
			"job %s ended %s, and Flink's HA store still holds its graph or checkpoints: deleting JobManager Job %s (SIGTERM keeps the HA data, a shutdown would remove it)", job.ID, how, in.obs.jmJob.Name)
		if err := out.act(a.deleteJobManager(ctx, out)); err != nil {
			return false, err
		}
		out.waitFor(ConditionReasonWaitingForJobManagerShutdown, "job %s ended %s: its JobManager Job was deleted, keeping the HA data: waiting for its pods to be gone", job.ID, how)
		return false, nil
	}
	return false, shutDownJobManager(ctx, a, in, st, out, how, lost)
}

// shutDownJobManager asks the JobManager of an ended job whose end is on record to shut down,
// and deletes its Job once it does not exit within its grace period of accepting, or does not
// answer within the wait bound from the job's end.
func shutDownJobManager(ctx context.Context, a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus, out *flowOut, how string, lost bool) error {
	job, jmJob, waitBound := st.Components.Job, in.obs.jmJob, in.opts.WaitBound
	if since, ok := shutdownAccepted(in.read); ok {
		// Flink 2.2.1's JobManager may never exit after an accepted shutdown (its job's HA
		// cleanup is scheduled on an executor the shutdown already stopped): it is given what
		// a SIGTERM would get, its pod's termination grace period, not the whole wait bound.
		bound := terminationGrace(in.obs.pod)
		if !out.pastDeadline(in.now, since, bound) {
			out.waitFor(ConditionReasonWaitingForJobManagerExit, "job %s ended %s: its JobManager accepted the shutdown (DELETE /cluster) and is exiting; if it has not exited %s (its pod's termination grace period) after that, its Job is deleted",
				job.ID, how, bound)
			return nil
		}
		a.event(corev1.EventTypeWarning, ReasonJobManagerShutdownUnanswered, "Cleanup",
			"job %s ended %s: its JobManager accepted the shutdown but had not exited %s later (its pod's termination grace period): deleting JobManager Job %s", job.ID, how, bound, jmJob.Name)
		if err := out.act(a.deleteJobManager(ctx, out)); err != nil {
			return err
		}
		out.waitFor(ConditionReasonWaitingForJobManagerShutdown, "job %s ended %s: its JobManager did not exit within %s of accepting the shutdown, its Job was deleted: waiting for its pods to be gone",
			job.ID, how, bound)
		return nil
	}
	ended := in.now
	switch {
	case lost:
		if since := lostSince(st.Conditions); !since.IsZero() {
			ended = since.Add(in.opts.LostTimeout)
		}
	case job.CompletionTime != nil:
		ended = job.CompletionTime.Time
	}
	why := in.obs.untrusted
	if why == "" {
		why = "its REST API does not answer"
	}
	if in.obs.flink != nil {
		cl, err := a.flinkClient(ctx)
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, flinkCallTimeout)
		err = cl.ShutdownCluster(cctx)
		cancel()
		if err == nil {
			a.event(corev1.EventTypeNormal, ReasonJobManagerShutdown, "Cleanup",
				"job %s ended %s: asked JobManager Job %s to shut down (DELETE /cluster); the Job ends Complete whatever the job's end", job.ID, how, jmJob.Name)
			out.waitFor(ConditionReasonWaitingForJobManagerExit, "job %s ended %s: its JobManager accepted the shutdown (DELETE /cluster) and is exiting", job.ID, how)
			return nil
		}
		ctrl.LoggerFrom(ctx).V(1).Info("Flink did not take the shutdown", "error", err.Error())
		why = "the shutdown (DELETE /cluster) failed: " + err.Error()
	}
	if !out.pastDeadline(in.now, ended, waitBound) {
		out.waitFor(ConditionReasonWaitingForJobManagerShutdown, "job %s ended %s: its JobManager is to be shut down, but %s; past the wait bound (%s from the job's end) its Job is deleted instead",
			job.ID, how, why, waitBound)
		return nil
	}
	a.event(corev1.EventTypeWarning, ReasonJobManagerShutdownUnanswered, "Cleanup",
		"job %s ended %s, but its JobManager did not take the shutdown within %s (%s): deleting JobManager Job %s", job.ID, how, waitBound, why, jmJob.Name)
	if err := out.act(a.deleteJobManager(ctx, out)); err != nil {
		return err
	}
	out.waitFor(ConditionReasonWaitingForJobManagerShutdown, "job %s ended %s: its JobManager did not take the shutdown within %s, its Job was deleted: waiting for its pods to be gone",
		job.ID, how, waitBound)
	return nil
}

// jobManagerLeftAlone reports whether the cleanup policy applies without ending the
// JobManager: Deployment mode, a job that did not end, a JobManager already ended or being
// deleted, no JobManager process running, or one that reports the job (or its application) not
// globally terminal, which the shutdown, suspending it and removing its HA data, would lose.
func (in flowIn) jobManagerLeftAlone(job *v1beta1.JobStatus, lost bool) bool {
	w := in.obs.wl
	if in.fc.Spec.GetDeploymentType() != v1beta1.JobManagerDeploymentTypeJob || !(flinkcluster.Terminal(job.State) || lost) ||
		w == nil || w.Deleting || w.Complete || w.Failed {
		return true
	}
	if !slices.ContainsFunc(in.obs.pods, func(p corev1.Pod) bool { return state.ProcessRunning(&p) }) {
		// Its container ended, the pod is going, or it never started: nothing to shut down.
		return true
	}
	if f := in.obs.flink; f != nil {
		if j := f.Job; j != nil && !flinkclient.IsTerminalJobState(j.State) {
			return true
		}
		if a := f.Application; a != nil && !flinkclient.IsTerminalApplicationState(a.Status) {
			return true
		}
	}
	return false
}

// shutdownAccepted reports whether the recorded status says that the JobManager accepted the
// shutdown (Waiting=True/WaitingForJobManagerExit), and since when.
func shutdownAccepted(read *v1beta1.FlinkClusterStatus) (time.Time, bool) {
	w := meta.FindStatusCondition(read.Conditions, ConditionWaiting)
	if w == nil || w.Status != metav1.ConditionTrue || w.Reason != ConditionReasonWaitingForJobManagerExit {
		return time.Time{}, false
	}
	return w.LastTransitionTime.Time, true
}

// terminationGrace is the pod's termination grace period: Kubernetes' default (30 s) when
// unset or when no pod is known.
func terminationGrace(pod *corev1.Pod) time.Duration {
	if pod != nil && pod.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return corev1.DefaultTerminationGracePeriodSeconds * time.Second
}

// endRecorded reports whether the stored status, as this reconcile read it, holds the end of
// the current job: its terminal state, or, for a job ended by the Lost timeout (lost), the
// Lost condition with reason LostTimeout.
func endRecorded(read *v1beta1.FlinkClusterStatus, job *v1beta1.JobStatus, lost bool) bool {
	rec := read.Components.Job
	if rec == nil || rec.ID != job.ID {
		return false
	}
	if !lost {
		return flinkcluster.Terminal(rec.State)
	}
	l := meta.FindStatusCondition(read.Conditions, ConditionLost)
	return rec.State == v1beta1.JobStateLost && l != nil && l.Status == metav1.ConditionTrue && l.Reason == ConditionReasonLostTimeout
}

// haHoldsJob reports whether Flink's HA store holds the job's graph or its checkpoint
// ConfigMap: what Flink's HA cleanup at a shutdown would remove.
func (in flowIn) haHoldsJob(id string) bool {
	if in.obs.ha.jobGraphStored(id) {
		return true
	}
	name := flinkha.JobConfigMapName(resources.HAClusterID(in.fc), id)
	return slices.ContainsFunc(in.obs.ha.configMaps, func(cm corev1.ConfigMap) bool { return cm.Name == name })
}
