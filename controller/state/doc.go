// Package state derives a FlinkCluster's job and cluster states from what the controller
// observed: the JobManager workload and pods, and the Flink REST API. Every function is pure:
// the same observation and the same instant give the same answer, so the lifecycle rules are
// tested with tables and a fixed clock, without an API server.
package state
