package v1beta1

// The defaults of the fields that the controller and the policy read. They are the
// values of the fields' +kubebuilder:default markers (the CRD's structural defaults);
// TestDefaultsMatchCRD in package celrules holds the two together. Read a defaulted field
// through its accessor below, never with a fallback of one's own, so that an object that
// skipped defaulting (built in Go, or stored before a default existed) reads the same
// everywhere.
const (
	// DefaultJobManagerReplicas is the JobManager replica count; it is also the only one allowed.
	DefaultJobManagerReplicas int32 = 1
	// DefaultTaskManagerReplicas is the TaskManager replica count.
	DefaultTaskManagerReplicas int32 = 3

	// DefaultJobManagerRPCPort is the JobManager RPC port.
	DefaultJobManagerRPCPort int32 = 6123
	// DefaultJobManagerBlobPort is the JobManager blob server port.
	DefaultJobManagerBlobPort int32 = 6124
	// DefaultJobManagerQueryPort is the JobManager queryable state port.
	DefaultJobManagerQueryPort int32 = 6125
	// DefaultJobManagerUIPort is the JobManager web UI and REST port.
	DefaultJobManagerUIPort int32 = 8081
	// DefaultTaskManagerDataPort is the TaskManager data port.
	DefaultTaskManagerDataPort int32 = 6121
	// DefaultTaskManagerRPCPort is the TaskManager RPC port.
	DefaultTaskManagerRPCPort int32 = 6122
	// DefaultTaskManagerQueryPort is the TaskManager queryable state port.
	DefaultTaskManagerQueryPort int32 = 6125

	// DefaultHadoopConfigMountPath is where the Hadoop configuration is mounted.
	DefaultHadoopConfigMountPath = "/etc/hadoop/conf"

	// DefaultAfterJobSucceeds is the cleanup action after a job succeeds.
	DefaultAfterJobSucceeds = CleanupActionDeleteCluster
	// DefaultAfterJobFails is the cleanup action after a job fails.
	DefaultAfterJobFails = CleanupActionKeepCluster
	// DefaultAfterJobCancelled is the cleanup action after a job is cancelled.
	DefaultAfterJobCancelled = CleanupActionDeleteCluster
)

func int32Or(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// GetReplicas returns the JobManager replica count: DefaultJobManagerReplicas when unset.
func (j *JobManagerSpec) GetReplicas() int32 {
	if j == nil {
		return DefaultJobManagerReplicas
	}
	return int32Or(j.Replicas, DefaultJobManagerReplicas)
}

// GetReplicas returns the TaskManager replica count: DefaultTaskManagerReplicas when unset.
func (t *TaskManagerSpec) GetReplicas() int32 {
	if t == nil {
		return DefaultTaskManagerReplicas
	}
	return int32Or(t.Replicas, DefaultTaskManagerReplicas)
}

// GetPorts returns the JobManager ports, each its default when unset.
func (j *JobManagerSpec) GetPorts() (rpc, blob, query, ui int32) {
	var p JobManagerPorts
	if j != nil {
		p = j.Ports
	}
	return int32Or(p.RPC, DefaultJobManagerRPCPort), int32Or(p.Blob, DefaultJobManagerBlobPort),
		int32Or(p.Query, DefaultJobManagerQueryPort), int32Or(p.UI, DefaultJobManagerUIPort)
}

// GetPorts returns the TaskManager ports, each its default when unset.
func (t *TaskManagerSpec) GetPorts() (data, rpc, query int32) {
	var p TaskManagerPorts
	if t != nil {
		p = t.Ports
	}
	return int32Or(p.Data, DefaultTaskManagerDataPort), int32Or(p.RPC, DefaultTaskManagerRPCPort),
		int32Or(p.Query, DefaultTaskManagerQueryPort)
}

// GetMountPath returns where the Hadoop configuration is mounted:
// DefaultHadoopConfigMountPath when unset.
func (h *HadoopConfig) GetMountPath() string {
	if h == nil || h.MountPath == "" {
		return DefaultHadoopConfigMountPath
	}
	return h.MountPath
}

// GetAfterJobSucceeds returns the cleanup action after a job succeeds.
func (c *CleanupPolicy) GetAfterJobSucceeds() CleanupAction {
	if c == nil || c.AfterJobSucceeds == "" {
		return DefaultAfterJobSucceeds
	}
	return c.AfterJobSucceeds
}

// GetAfterJobFails returns the cleanup action after a job fails.
func (c *CleanupPolicy) GetAfterJobFails() CleanupAction {
	if c == nil || c.AfterJobFails == "" {
		return DefaultAfterJobFails
	}
	return c.AfterJobFails
}

// GetAfterJobCancelled returns the cleanup action after a job is cancelled.
func (c *CleanupPolicy) GetAfterJobCancelled() CleanupAction {
	if c == nil || c.AfterJobCancelled == "" {
		return DefaultAfterJobCancelled
	}
	return c.AfterJobCancelled
}
