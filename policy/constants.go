package policy

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Defaults that Default writes and that validation assumes for unset fields. They match the
// CRD's structural defaults and the flink-on-k8s-operator's defaulting webhook; those the
// controller reads too (replicas, ports, the Hadoop mount path) are defined once, in
// package v1beta1, with their accessors.
const (
	// MinPort is the lowest port a Flink port may use: ports up to 1024 are privileged.
	MinPort int32 = 1025

	// MemoryProcessRatioMinVersion is the first Flink version with the unified memory model
	// (flinkcluster.MemoryProcessRatioMinVersion).
	MemoryProcessRatioMinVersion = flinkcluster.MemoryProcessRatioMinVersion
	// DefaultMemoryProcessRatio is the Flink process share of container memory, in percent.
	DefaultMemoryProcessRatio int32 = 80
	// DefaultMemoryOffHeapRatio is the off-heap share of container memory, in percent.
	DefaultMemoryOffHeapRatio int32 = 25
	// DefaultMemoryOffHeapMin is the minimum off-heap memory, as a quantity.
	DefaultMemoryOffHeapMin = "600M"

	// DefaultPreStopDelaySeconds is the JobManager preStop delay of a Deployment JobManager:
	// long enough for in-flight REST calls and the leader hand-over to finish.
	DefaultPreStopDelaySeconds int32 = 15
	// DefaultTerminationGracePeriodSeconds is the lower bound of the defaulted grace period of
	// a Deployment JobManager: Flink needs the time to clean up its HA metadata.
	DefaultTerminationGracePeriodSeconds int64 = 60
	// GracePeriodMarginSeconds is how much longer than the preStop delay the defaulted grace
	// period is at least, so that the JobManager still has time to shut down after the delay.
	GracePeriodMarginSeconds int64 = 30
)

// Default probe settings of the JobManager and TaskManager containers (a TCP check of the
// RPC port). User-set probe fields win over them.
const (
	DefaultLivenessTimeoutSeconds       int32 = 10
	DefaultLivenessInitialDelaySeconds  int32 = 5
	DefaultLivenessPeriodSeconds        int32 = 60
	DefaultLivenessFailureThreshold     int32 = 5
	DefaultReadinessTimeoutSeconds      int32 = 10
	DefaultReadinessInitialDelaySeconds int32 = 5
	DefaultReadinessPeriodSeconds       int32 = 5
	DefaultReadinessFailureThreshold    int32 = 60
)

// Flink configuration keys the policy reads or defaults.
const (
	// PropertyHAType selects Flink high availability (flinkcluster.PropertyHAType).
	PropertyHAType = flinkcluster.PropertyHAType
	// PropertyHALegacy is the pre-1.17 name of PropertyHAType (flinkcluster.PropertyHALegacy).
	PropertyHALegacy = flinkcluster.PropertyHALegacy
	// PropertyHAStorageDir is where Flink HA keeps its metadata (flinkcluster.PropertyHAStorageDir).
	PropertyHAStorageDir = flinkcluster.PropertyHAStorageDir
	// PropertyShutdownOnApplicationFinish makes the JobManager exit when the application ends.
	PropertyShutdownOnApplicationFinish = "execution.shutdown-on-application-finish"
	// PropertySubmitFailedJobOnApplicationError keeps a failed application visible as a
	// failed job instead of ending the JobManager.
	PropertySubmitFailedJobOnApplicationError = "execution.submit-failed-job-on-application-error"

	// DefaultShutdownOnApplicationFinish is defaulted for a Deployment JobManager: it must stay
	// up after the job ends so that the final state can be read.
	DefaultShutdownOnApplicationFinish = "false"
	// DefaultSubmitFailedJobOnApplicationError is defaulted for a Deployment JobManager.
	DefaultSubmitFailedJobOnApplicationError = "true"
	// HATypeNone is the effective HA type when none is configured (flinkcluster.HATypeNone).
	HATypeNone = flinkcluster.HATypeNone
)

// DefaultResources returns the container resources used when a component sets none:
// requests cpu 200m, memory 512Mi; limits cpu 2, memory 2Gi.
func DefaultResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("200m"),
			corev1.ResourceMemory: resource.MustParse("512Mi"),
		},
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("2"),
			corev1.ResourceMemory: resource.MustParse("2Gi"),
		},
	}
}
