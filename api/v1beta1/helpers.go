package v1beta1

// GetDeploymentType returns the effective JobManager deployment type: Job when unset.
// Read the field only through this helper, so that "unset" and "Job" never diverge.
func (s *FlinkClusterSpec) GetDeploymentType() JobManagerDeploymentType {
	if s == nil || s.JobManager == nil {
		return JobManagerDeploymentTypeJob
	}
	return s.JobManager.GetDeploymentType()
}

// GetDeploymentType returns the effective JobManager deployment type: Job when unset.
func (j *JobManagerSpec) GetDeploymentType() JobManagerDeploymentType {
	if j == nil || j.DeploymentType == "" {
		return JobManagerDeploymentTypeJob
	}
	return j.DeploymentType
}

// GetDeploymentType returns the effective TaskManager deployment type: StatefulSet when unset.
func (t *TaskManagerSpec) GetDeploymentType() TaskManagerDeploymentType {
	if t == nil || t.DeploymentType == "" {
		return TaskManagerDeploymentTypeStatefulSet
	}
	return t.DeploymentType
}

// IsApplicationMode reports whether the spec describes an application-mode job cluster.
func (s *FlinkClusterSpec) IsApplicationMode() bool {
	return s != nil && s.Job != nil && s.Job.Mode != nil && *s.Job.Mode == JobModeApplication
}

// GetUpgradeMode returns the effective upgrade mode: savepoint when unset (and for a
// session cluster, which has no job).
func (j *JobSpec) GetUpgradeMode() UpgradeMode {
	if j == nil || j.UpgradeMode == nil || *j.UpgradeMode == "" {
		return UpgradeModeSavepoint
	}
	return *j.UpgradeMode
}
