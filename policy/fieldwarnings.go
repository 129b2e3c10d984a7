package policy

import (
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// VolcanoScheduler is the batch scheduler name of Volcano.
const VolcanoScheduler = "volcano"

// schedulerName is the batch scheduler of the spec, from either field.
func schedulerName(s *v1beta1.FlinkClusterSpec) string {
	if s.BatchScheduler != nil && s.BatchScheduler.Name != "" {
		return s.BatchScheduler.Name
	}
	return ptr.Deref(s.BatchSchedulerName, "")
}
