package policy

import (
	"github.com/hashicorp/go-version"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Default fills the unset fields of fc with their defaults, as the mutating webhook does.
// The defaults are the flink-on-k8s-operator's, plus, for a Deployment JobManager, the
// shutdown settings it needs (see defaultDeployment).
//
// Default is idempotent, only ever sets unset fields, and never turns a valid object into
// an invalid one: the defaults are exactly the values validation assumes for unset fields.
// A nil fc is left alone.
//
// Default writes into fc, like any defaulter: the mutating webhook defaults a deep copy of
// the object as sent and builds its patch from the two.
func Default(fc *v1beta1.FlinkCluster) {
	if fc == nil {
		return
	}
	defaultSpec(&fc.Spec)
}

// defaultSpec is Default on the spec alone (everything Default sets is in the spec).
func defaultSpec(s *v1beta1.FlinkClusterSpec) {
	if s.RecreateOnUpdate == nil {
		s.RecreateOnUpdate = ptr.To(true)
	}
	// The reference operator replaced batchSchedulerName by batchScheduler.name; carry the
	// old field over, without overwriting a batchScheduler the user set.
	if s.BatchSchedulerName != nil && s.BatchScheduler == nil {
		s.BatchScheduler = &v1beta1.BatchSchedulerSpec{Name: *s.BatchSchedulerName}
	}
	if s.Image.PullPolicy == "" {
		s.Image.PullPolicy = corev1.PullAlways
	}

	// With a flinkVersion that does not parse, the memory settings are left alone:
	// validation rejects the version, and defaults written now for the wrong memory model
	// would be rejected once the user fixes it.
	ver, err := flinkcluster.ParseVersion(s.FlinkVersion)
	if err != nil {
		ver = nil
	}

	// The probes are always rebuilt, so the JobManager and TaskManager always change.
	defaultJobManager(ensure(&s.JobManager), ver)
	defaultTaskManager(ensure(&s.TaskManager), ver)
	if s.Job != nil {
		defaultJob(ensure(&s.Job))
	}
	if s.HadoopConfig != nil && s.HadoopConfig.MountPath == "" {
		ensure(&s.HadoopConfig).MountPath = v1beta1.DefaultHadoopConfigMountPath
	}
	if s.GetDeploymentType() == v1beta1.JobManagerDeploymentTypeDeployment {
		defaultDeployment(s)
	}
}

func defaultJobManager(jm *v1beta1.JobManagerSpec, ver *version.Version) {
	if jm.Replicas == nil {
		jm.Replicas = ptr.To(v1beta1.DefaultJobManagerReplicas)
	}
	if jm.AccessScope == "" {
		jm.AccessScope = v1beta1.AccessScopeCluster
	}
	if jm.Ingress != nil && jm.Ingress.UseTLS == nil {
		ensure(&jm.Ingress).UseTLS = ptr.To(false)
	}
	defaultPort(&jm.Ports.RPC, v1beta1.DefaultJobManagerRPCPort)
	defaultPort(&jm.Ports.Blob, v1beta1.DefaultJobManagerBlobPort)
	defaultPort(&jm.Ports.Query, v1beta1.DefaultJobManagerQueryPort)
	defaultPort(&jm.Ports.UI, v1beta1.DefaultJobManagerUIPort)
	defaultMemory(ver, &jm.MemoryProcessRatio, &jm.MemoryOffHeapRatio, &jm.MemoryOffHeapMin)
	if resourcesEmpty(jm.Resources) {
		jm.Resources = DefaultResources()
	}
	jm.LivenessProbe = livenessProbe(jm.LivenessProbe, *jm.Ports.RPC)
	jm.ReadinessProbe = readinessProbe(jm.ReadinessProbe, *jm.Ports.RPC)
}

func defaultTaskManager(tm *v1beta1.TaskManagerSpec, ver *version.Version) {
	if tm.DeploymentType == "" {
		tm.DeploymentType = v1beta1.TaskManagerDeploymentTypeStatefulSet
	}
	if tm.Replicas == nil {
		tm.Replicas = ptr.To(v1beta1.DefaultTaskManagerReplicas)
	}
	defaultPort(&tm.Ports.Data, v1beta1.DefaultTaskManagerDataPort)
	defaultPort(&tm.Ports.RPC, v1beta1.DefaultTaskManagerRPCPort)
	defaultPort(&tm.Ports.Query, v1beta1.DefaultTaskManagerQueryPort)
	defaultMemory(ver, &tm.MemoryProcessRatio, &tm.MemoryOffHeapRatio, &tm.MemoryOffHeapMin)
	if resourcesEmpty(tm.Resources) {
		tm.Resources = DefaultResources()
	}
	tm.LivenessProbe = livenessProbe(tm.LivenessProbe, *tm.Ports.RPC)
	tm.ReadinessProbe = readinessProbe(tm.ReadinessProbe, *tm.Ports.RPC)
}

func defaultJob(j *v1beta1.JobSpec) {
	if j.AllowNonRestoredState == nil {
		j.AllowNonRestoredState = ptr.To(false)
	}
	if j.NoLoggingToStdout == nil {
		j.NoLoggingToStdout = ptr.To(false)
	}
	if j.RestartPolicy == nil {
		j.RestartPolicy = ptr.To(v1beta1.JobRestartPolicyNever)
	}
	// Each action separately, as the CRD's per-field defaults do.
	if cp := j.CleanupPolicy; cp == nil || cp.AfterJobSucceeds == "" || cp.AfterJobFails == "" || cp.AfterJobCancelled == "" {
		cp = ensure(&j.CleanupPolicy)
		if cp.AfterJobSucceeds == "" {
			cp.AfterJobSucceeds = v1beta1.CleanupActionDeleteCluster
		}
		if cp.AfterJobFails == "" {
			cp.AfterJobFails = v1beta1.CleanupActionKeepCluster
		}
		if cp.AfterJobCancelled == "" {
			cp.AfterJobCancelled = v1beta1.CleanupActionDeleteCluster
		}
	}
	if j.Mode == nil {
		j.Mode = ptr.To(v1beta1.JobModeDetached)
	}
	if resourcesEmpty(j.Resources) {
		j.Resources = DefaultResources()
	}
}

// defaultDeployment sets what a Deployment JobManager needs, unless the user set it:
//   - execution.shutdown-on-application-finish false, so the JobManager stays up after the
//     job ends and its final state can be read (the CRD forbids true);
//   - execution.submit-failed-job-on-application-error true, so a failing main() shows up as
//     a failed job instead of a crash-looping pod;
//   - preStopDelaySeconds 15 and terminationGracePeriodSeconds max(60, preStop+30), so that
//     the grace period always outlasts the preStop delay (the CRD requires grace > preStop).
//     A user's grace period of 15 s or less gets no defaulted delay, which would eat it.
func defaultDeployment(s *v1beta1.FlinkClusterSpec) {
	_, shutdownSet := s.FlinkProperties[PropertyShutdownOnApplicationFinish]
	_, submitSet := s.FlinkProperties[PropertySubmitFailedJobOnApplicationError]
	if !shutdownSet || !submitSet {
		if s.FlinkProperties == nil {
			s.FlinkProperties = make(map[string]string, 2)
		}
		if !shutdownSet {
			s.FlinkProperties[PropertyShutdownOnApplicationFinish] = DefaultShutdownOnApplicationFinish
		}
		if !submitSet {
			s.FlinkProperties[PropertySubmitFailedJobOnApplicationError] = DefaultSubmitFailedJobOnApplicationError
		}
	}

	jm := s.JobManager
	if jm.PreStopDelaySeconds == nil &&
		(jm.TerminationGracePeriodSeconds == nil || *jm.TerminationGracePeriodSeconds > int64(DefaultPreStopDelaySeconds)) {
		jm.PreStopDelaySeconds = ptr.To(DefaultPreStopDelaySeconds)
	}
	if jm.TerminationGracePeriodSeconds == nil {
		grace := DefaultTerminationGracePeriodSeconds
		if jm.PreStopDelaySeconds != nil {
			grace = max(grace, int64(*jm.PreStopDelaySeconds)+GracePeriodMarginSeconds)
		}
		jm.TerminationGracePeriodSeconds = ptr.To(grace)
	}
}

// ensure sets *p to a new zero value when it is nil and returns it, so that Default can
// set fields of a member the user left out.
func ensure[T any](p **T) *T {
	if *p == nil {
		*p = new(T)
	}
	return *p
}

func defaultPort(p **int32, v int32) {
	if *p == nil {
		*p = ptr.To(v)
	}
}

// defaultMemory sets the memory settings of the version's memory model. Nothing is set for
// an unknown version.
func defaultMemory(ver *version.Version, processRatio, offHeapRatio **int32, offHeapMin *resource.Quantity) {
	switch {
	case ver == nil:
	case flinkcluster.UsesProcessRatio(ver):
		if *processRatio == nil {
			*processRatio = ptr.To(DefaultMemoryProcessRatio)
		}
	default:
		if *offHeapRatio == nil {
			*offHeapRatio = ptr.To(DefaultMemoryOffHeapRatio)
		}
		if quantityUnset(*offHeapMin) {
			*offHeapMin = resource.MustParse(DefaultMemoryOffHeapMin)
		}
	}
}

// quantityUnset reports whether a non-pointer quantity field is unset. A zero quantity
// counts as unset: the API types marshal it away (omitzero), so an explicit "0" could not
// survive a round trip through the API server anyway, and would turn into the default on
// the next update behind the user's back.
func quantityUnset(q resource.Quantity) bool {
	return q.IsZero()
}

// resourcesEmpty reports whether a component sets no resources at all, in which case the
// defaults apply.
func resourcesEmpty(r corev1.ResourceRequirements) bool {
	return len(r.Requests) == 0 && len(r.Limits) == 0 && len(r.Claims) == 0
}

// livenessProbe returns the default liveness probe (TCP on the RPC port) with the user's
// probe merged over it.
func livenessProbe(user *corev1.Probe, rpcPort int32) *corev1.Probe {
	return mergeProbe(corev1.Probe{
		ProbeHandler:        tcpHandler(rpcPort),
		TimeoutSeconds:      DefaultLivenessTimeoutSeconds,
		InitialDelaySeconds: DefaultLivenessInitialDelaySeconds,
		PeriodSeconds:       DefaultLivenessPeriodSeconds,
		FailureThreshold:    DefaultLivenessFailureThreshold,
	}, user)
}

// readinessProbe returns the default readiness probe (TCP on the RPC port) with the user's
// probe merged over it.
func readinessProbe(user *corev1.Probe, rpcPort int32) *corev1.Probe {
	return mergeProbe(corev1.Probe{
		ProbeHandler:        tcpHandler(rpcPort),
		TimeoutSeconds:      DefaultReadinessTimeoutSeconds,
		InitialDelaySeconds: DefaultReadinessInitialDelaySeconds,
		PeriodSeconds:       DefaultReadinessPeriodSeconds,
		FailureThreshold:    DefaultReadinessFailureThreshold,
	}, user)
}

func tcpHandler(port int32) corev1.ProbeHandler {
	return corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}}
}

// mergeProbe returns def with the user's non-zero fields written over it. The handler is
// taken whole: a probe has exactly one handler, so the user's HTTP check must replace the
// default TCP check rather than sit next to it (which a field-by-field merge would do, and
// the API server would then reject the pod).
func mergeProbe(def corev1.Probe, user *corev1.Probe) *corev1.Probe {
	if user == nil {
		return &def
	}
	h := user.ProbeHandler
	if h.Exec != nil || h.HTTPGet != nil || h.TCPSocket != nil || h.GRPC != nil {
		def.ProbeHandler = h
	}
	if user.InitialDelaySeconds != 0 {
		def.InitialDelaySeconds = user.InitialDelaySeconds
	}
	if user.TimeoutSeconds != 0 {
		def.TimeoutSeconds = user.TimeoutSeconds
	}
	if user.PeriodSeconds != 0 {
		def.PeriodSeconds = user.PeriodSeconds
	}
	if user.SuccessThreshold != 0 {
		def.SuccessThreshold = user.SuccessThreshold
	}
	if user.FailureThreshold != 0 {
		def.FailureThreshold = user.FailureThreshold
	}
	if user.TerminationGracePeriodSeconds != nil {
		def.TerminationGracePeriodSeconds = ptr.To(*user.TerminationGracePeriodSeconds)
	}
	return &def
}
