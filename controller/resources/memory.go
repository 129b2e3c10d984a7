package resources

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Flink configuration keys derived from the containers' resources, as the
// flink-on-k8s-operator derives them.
const (
	// KeyJMProcessSize and KeyTMProcessSize are the total process memory of Flink's unified
	// memory model (Flink 1.10 and later).
	KeyJMProcessSize = "jobmanager.memory.process.size"
	KeyTMProcessSize = "taskmanager.memory.process.size"
	// KeyJMHeapSize and KeyTMHeapSize are the heap sizes of the memory model before 1.10.
	KeyJMHeapSize = "jobmanager.heap.size"
	KeyTMHeapSize = "taskmanager.heap.size"
	// KeyTaskSlots is the number of task slots of a TaskManager.
	KeyTaskSlots = "taskmanager.numberOfTaskSlots"
	// cpusPerSlot is how many CPUs of a TaskManager's limit make one task slot.
	cpusPerSlot = 2
	mebibyte    = 1 << 20
)

// ContainerMemory and ContainerCPU are the memory and CPU a component's container may use:
// its limit, or its request when no limit is set. The derived Flink sizes and slots follow
// them, so that Flink plans within what Kubernetes lets the container have.
func ContainerMemory(r corev1.ResourceRequirements) resource.Quantity {
	if m := r.Limits.Memory(); !m.IsZero() {
		return *m
	}
	return *r.Requests.Memory()
}

// ContainerCPU is the CPU counterpart of ContainerMemory.
func ContainerCPU(r corev1.ResourceRequirements) resource.Quantity {
	if c := r.Limits.Cpu(); !c.IsZero() {
		return *c
	}
	return *r.Requests.Cpu()
}

// ceilDiv is ⌈a/b⌉ for a ≥ 0, b > 0, in integers: the operator computes it in float64,
// which is exact for every memory size a container can have (below 2^53 bytes).
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// ProcessSizeMiB is the Flink process memory of a container with memoryBytes of memory and
// a process share of ratio percent, in MiB, rounded up twice as the operator rounds it: the
// share to a byte, then to a MiB. 0 means none (no memory, or a zero ratio).
func ProcessSizeMiB(memoryBytes int64, ratio int32) int64 {
	if memoryBytes <= 0 || ratio <= 0 {
		return 0
	}
	return ceilDiv(ceilDiv(memoryBytes*int64(ratio), 100), mebibyte)
}

// HeapSizeMiB is the JVM heap of a container under the memory model before Flink 1.10: the
// memory less the off-heap share (offHeapRatio percent, at least offHeapMinBytes), in MiB
// rounded up. 0 means none: the off-heap part takes everything.
func HeapSizeMiB(memoryBytes, offHeapMinBytes int64, offHeapRatio int32) int64 {
	offHeap := max(ceilDiv(memoryBytes*int64(offHeapRatio), 100), offHeapMinBytes)
	heap := memoryBytes - offHeap
	if heap <= 0 {
		return 0
	}
	return ceilDiv(heap, mebibyte)
}

// memorySizes are the memory entries of the Flink configuration, from the containers'
// memory and the memory settings, for the cluster's memory model:
//
//   - Flink 1.10 and later: *.memory.process.size = memory × memoryProcessRatio %. The
//     configuration mounted at /opt/flink/conf hides the image's own flink-conf.yaml, whose
//     process sizes Flink would otherwise read, and Flink refuses to start a JobManager or
//     TaskManager without one of its memory sizes (ProcessMemoryUtils: "Either required
//     fine-grained memory ..., or Total Flink Memory size ..., or Total Process Memory size
//     ... need to be configured explicitly").
//   - before 1.10: *.heap.size = memory − max(memory × memoryOffHeapRatio %, memoryOffHeapMin),
//     written only when both components have an off-heap ratio, as the operator does.
//
// A flinkVersion that does not parse (validation denies it) gets no memory entries. The
// user's flinkProperties override them (FlinkConfiguration).
func memorySizes(fc *v1beta1.FlinkCluster) map[string]string {
	out := map[string]string{}
	ver, err := flinkcluster.ParseVersion(fc.Spec.FlinkVersion)
	if err != nil {
		return out
	}
	jm, tm := fc.Spec.JobManager, fc.Spec.TaskManager
	if jm == nil {
		jm = &v1beta1.JobManagerSpec{}
	}
	if tm == nil {
		tm = &v1beta1.TaskManagerSpec{}
	}
	jmMem, tmMem := ContainerMemory(jm.Resources), ContainerMemory(tm.Resources)
	put := func(key string, mib int64) {
		if mib > 0 {
			out[key] = strconv.FormatInt(mib, 10) + "m"
		}
	}
	if flinkcluster.UsesProcessRatio(ver) {
		if jm.MemoryProcessRatio != nil {
			put(KeyJMProcessSize, ProcessSizeMiB(jmMem.Value(), *jm.MemoryProcessRatio))
		}
		if tm.MemoryProcessRatio != nil {
			put(KeyTMProcessSize, ProcessSizeMiB(tmMem.Value(), *tm.MemoryProcessRatio))
		}
		return out
	}
	if jm.MemoryOffHeapRatio == nil || tm.MemoryOffHeapRatio == nil {
		return out
	}
	put(KeyJMHeapSize, HeapSizeMiB(jmMem.Value(), jm.MemoryOffHeapMin.Value(), *jm.MemoryOffHeapRatio))
	put(KeyTMHeapSize, HeapSizeMiB(tmMem.Value(), tm.MemoryOffHeapMin.Value(), *tm.MemoryOffHeapRatio))
	return out
}

// TaskSlots is the number of task slots of each TaskManager: the user's
// taskmanager.numberOfTaskSlots when set, else one slot per two CPUs of the TaskManager's
// limit (the CPU rounded up to a whole core first), at least one, as the operator computes
// it. ok is false when the user's value is not an integer: then no slots and no parallelism
// are derived, and Flink reports the bad value.
func TaskSlots(fc *v1beta1.FlinkCluster) (slots int32, ok bool) {
	if v, set := fc.Spec.FlinkProperties[KeyTaskSlots]; set {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return 0, false
		}
		return int32(n), true
	}
	var r corev1.ResourceRequirements
	if tm := fc.Spec.TaskManager; tm != nil {
		r = tm.Resources
	}
	cpu := ContainerCPU(r)
	if s := int32(cpu.Value() / cpusPerSlot); s > 0 {
		return s, true
	}
	return 1, true
}

// JobParallelism is the default parallelism of the job: spec.job.parallelism when set, else
// every slot of the cluster (TaskManager replicas × TaskSlots). ok is false when neither is
// known.
func JobParallelism(fc *v1beta1.FlinkCluster) (int32, bool) {
	if j := fc.Spec.Job; j != nil && j.Parallelism != nil {
		return *j.Parallelism, true
	}
	slots, ok := TaskSlots(fc)
	if !ok {
		return 0, false
	}
	return TaskManagerReplicas(fc) * slots, true
}
