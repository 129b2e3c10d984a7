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
	// KeyJMProcessSize and KeyTMProcessSize are the process memory of Flink's unified memory model
	// (1.10+).
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

// ContainerMemory and ContainerCPU are a container's limit, else its request: Flink's derived
// sizes and slots follow them, to plan within what Kubernetes lets it have.
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

// ceilDiv is ⌈a/b⌉ in integers, equal to the operator's float64 for every memory size below 2^53.
func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// ProcessSizeMiB is ratio percent of memoryBytes in MiB, rounded up to a byte then to a MiB as the
// operator does; 0 for none.
func ProcessSizeMiB(memoryBytes int64, ratio int32) int64 {
	if memoryBytes <= 0 || ratio <= 0 {
		return 0
	}
	return ceilDiv(ceilDiv(memoryBytes*int64(ratio), 100), mebibyte)
}

// HeapSizeMiB is the JVM heap before Flink 1.10: memory less the off-heap share (at least
// offHeapMinBytes), in MiB rounded up; 0 for none.
func HeapSizeMiB(memoryBytes, offHeapMinBytes int64, offHeapRatio int32) int64 {
	offHeap := max(ceilDiv(memoryBytes*int64(offHeapRatio), 100), offHeapMinBytes)
	heap := memoryBytes - offHeap
	if heap <= 0 {
		return 0
	}
	return ceilDiv(heap, mebibyte)
}

// memorySizes are the Flink memory entries (flinkProperties override them; none for an
// unparsable version): from 1.10 *.memory.process.size, since the mounted configuration hides
// the image's and Flink needs one; before, *.heap.size when both have an off-heap ratio.
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

// TaskSlots is each TaskManager's slots: the user's taskmanager.numberOfTaskSlots, else one per
// two CPUs of its limit (rounded up to a core), at least one, as the operator. ok is false for a
// non-integer user value: nothing is derived and Flink reports it.
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

// JobParallelism is spec.job.parallelism, else every slot of the cluster; ok is false when neither
// is known.
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
