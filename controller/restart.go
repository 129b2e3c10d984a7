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
func restart(ctx context.Context, a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus) (out flowOut, err error) {
	job := st.Components.Job
	if job.State != v1beta1.JobStateRestarting {
		job.RestartCount++
		a.event(corev1.EventTypeNormal, ReasonRestarting, "Restart", "restarting failed job %s from savepoint %s (restart %d)",
			job.ID, job.SavepointLocation, job.RestartCount)
		if err := a.setJobState(state.EventRestart, "", fmt.Sprintf("restartPolicy %s", v1beta1.JobRestartPolicyFromSavepointOnFailure), in.now); err != nil {
			return out, fmt.Errorf("recording the restart: %w", err)
		}
	}
	ready, err := replaceJobManager(ctx, a, in, &out, false)
	if err != nil || !ready {
		return out, err
	}
	err = a.newDeploy(ctx, &out, job.SavepointLocation)
	return out, err
}

// replaceJobManager removes the current JobManager before a new deploy: it deletes the
// workload, waits until no old JobManager pod may still lead, then deletes the cluster's HA
// ConfigMaps so that the new JobManager cannot recover the old job graph — or, with
// keepCheckpoints (a last-state redeploy), removes only the job graphs and keeps the
// checkpoint stores. ready reports whether the new deploy may be created.
func replaceJobManager(ctx context.Context, a flowActs, in flowIn, out *flowOut, keepCheckpoints bool) (ready bool, err error) {
	if wl := in.obs.wl; wl != nil && !wl.Deleting {
		if err := out.act(a.deleteJobManager(ctx, out)); err != nil {
			return false, fmt.Errorf("deleting the old JobManager: %w", err)
		}
		out.haltUpdate(waitCondition(ConditionReasonWaitingForJobManagerPods, "deleted the JobManager of revision %s: waiting for its pods to be gone: %s",
			wl.Revision, podNames(in.obs.pods)))
		return false, nil
	}
	if w, err := a.waitForNoLeader(ctx); err != nil || w != nil {
		if w != nil {
			out.haltUpdate(w)
		}
		return false, err
	}
	if in.obs.wl != nil {
		out.haltUpdate(waitCondition(ConditionReasonWaitingForJobManagerDeletion, "waiting for the old JobManager workload (revision %s) to be deleted", in.obs.wl.Revision))
		return false, nil
	}
	if keepCheckpoints {
		gone, err := a.removeJobGraphs(ctx, out)
		if err == nil && !gone {
			out.waitFor(ConditionReasonWaitingForJobManagerPods, "waiting for the old deploy's job graph to be removed from the HA ConfigMaps")
		}
		return gone && err == nil, err
	}
	gone, err := a.deleteHAConfigMaps(ctx)
	if err != nil || !gone {
		if err == nil {
			out.waitFor(ConditionReasonWaitingForJobManagerPods, "waiting for the HA ConfigMaps of the old deploy to be deleted")
		}
		return false, err
	}
	return true, nil
}
