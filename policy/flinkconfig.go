package policy

import "github.com/flink-admission/flink-admission/flinkcluster"

// shutdownOnFinish reports whether flinkProperties set
// execution.shutdown-on-application-finish to true (ignoring ASCII case, as the CEL rule).
func shutdownOnFinish(props map[string]string) bool {
	v, ok := props[PropertyShutdownOnApplicationFinish]
	return ok && flinkcluster.LowerASCII(v) == "true"
}
