package state

import (
	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// CleanupAction is the cleanup policy (CRD defaults when unset) for a job ended in state; a
// timed-out Lost counts as failed.
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
