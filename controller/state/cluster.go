package state

import (
	"time"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// CleanupAction is the cleanup policy that applies to a job that ended in state (Lost counts
// as failed once its timeout ran out). Unset policies take the CRD defaults.
func CleanupAction(spec *v1beta1.FlinkClusterSpec, state string) v1beta1.CleanupAction {
	var p *v1beta1.CleanupPolicy
	if spec.Job != nil {
		p = spec.Job.CleanupPolicy
	}
	switch state {
	case v1beta1.JobStateSucceeded:
		return p.GetAfterJobSucceeds()
	case v1beta1.JobStateCancelled:
		return p.GetAfterJobCancelled()
	default:
		return p.GetAfterJobFails()
	}
}

// ShouldRestart reports whether a failed job is restarted from its latest savepoint:
// restartPolicy FromSavepointOnFailure, a savepoint no older than maxStateAgeToRestoreSeconds,
// and Job mode. With a JobManager Deployment a failed job is never restored from a savepoint:
// Kubernetes recreates the pod and Flink HA recovers the state, and a savepoint would throw
// away what was acknowledged since it was taken.
func ShouldRestart(spec *v1beta1.FlinkClusterSpec, job *v1beta1.JobStatus, now time.Time) bool {
	if spec.GetDeploymentType() != v1beta1.JobManagerDeploymentTypeJob || spec.Job == nil || job == nil {
		return false
	}
	if spec.Job.RestartPolicy == nil || *spec.Job.RestartPolicy != v1beta1.JobRestartPolicyFromSavepointOnFailure {
		return false
	}
	if job.State != v1beta1.JobStateFailed || job.SavepointLocation == "" {
		return false
	}
	return SavepointFresh(spec, job, now)
}

// SavepointFresh reports whether the job's latest savepoint is young enough to restore:
// no older than maxStateAgeToRestoreSeconds, or any age when the limit is unset.
func SavepointFresh(spec *v1beta1.FlinkClusterSpec, job *v1beta1.JobStatus, now time.Time) bool {
	if job.SavepointLocation == "" {
		return false
	}
	if spec.Job == nil || spec.Job.MaxStateAgeToRestoreSeconds == nil {
		return true
	}
	taken := ParseTime(job.SavepointTime)
	if taken.IsZero() {
		return false
	}
	return now.Sub(taken) <= time.Duration(*spec.Job.MaxStateAgeToRestoreSeconds)*time.Second
}

// Components says which of a cluster's objects exist.
type Components struct {
	JobManager, TaskManager, Service, ConfigMap bool
	// JobManagerPods counts JobManager pods, terminating ones included.
	JobManagerPods int
}

// ClusterState derives status.state from the job and what exists.
func ClusterState(job string, updating, finished bool, action v1beta1.CleanupAction, c Components) string {
	switch {
	case updating:
		return v1beta1.ClusterStateUpdating
	case finished:
		jmGone := !c.JobManager && c.JobManagerPods == 0
		switch {
		case jmGone && !c.TaskManager && !c.Service && !c.ConfigMap:
			return v1beta1.ClusterStateStopped
		case action == v1beta1.CleanupActionDeleteCluster:
			return v1beta1.ClusterStateStopping
		case action == v1beta1.CleanupActionDeleteTaskManager && c.TaskManager:
			return v1beta1.ClusterStateStopping
		default:
			// The JobManager is finished or scaled to zero, the rest is kept.
			return v1beta1.ClusterStatePartiallyStopped
		}
	case job == v1beta1.JobStateRunning:
		return v1beta1.ClusterStateRunning
	case job == v1beta1.JobStateLost || job == v1beta1.JobStateRestarting:
		return v1beta1.ClusterStateReconciling
	default:
		return v1beta1.ClusterStateCreating
	}
}
