package bench

import (
	"maps"
	"net/http"
	"strings"
	"sync"
)

// ControllerSteady is the controller's cost while nothing happens: every job Running, no
// spec change, the controller only polling Flink and resyncing at its default intervals.
type ControllerSteady struct {
	// Seconds is the quiet window's length; Replicas the live replicas measured in it.
	Seconds float64 `json:"seconds"`
	// RolloutsSettledSeconds is how long the window waited, after the last phase, for every
	// Deployment and StatefulSet to finish rolling out (waitRolledOut).
	RolloutsSettledSeconds float64 `json:"rolloutsSettledSeconds"`
	Replicas               int     `json:"replicas"`
	// Running is how many jobs were Running at the window's start and end (all of them:
	// a window where any was not is reported as such).
	Running int `json:"running"`
	// CPUSeconds is the user+system CPU time of every live replica over the window.
	CPUSeconds float64 `json:"cpuSeconds"`
	// CPUSecondsPerClusterMinute is CPUSeconds per cluster, per minute of window.
	CPUSecondsPerClusterMinute float64 `json:"cpuSecondsPerClusterMinute"`
	// FlinkCalls are the Flink REST requests the controller made over the window, by
	// "METHOD path-kind" (IDs in the path replaced by :id, numbers by :n).
	FlinkCalls map[string]int `json:"flinkCalls"`
	// FlinkCallsPerClusterMinute is every Flink REST request, per cluster per minute.
	FlinkCallsPerClusterMinute float64 `json:"flinkCallsPerClusterMinute"`
	// ClustersPerCore is how many clusters one replica holds on one CPU core at the default
	// intervals, counting CPU only: 60 core-seconds a minute / CPUSecondsPerClusterMinute.
	ClustersPerCore float64 `json:"clustersPerCore"`
	// ControllerRequestsPerClusterMinute is the API requests of the controller's identity
	// (every replica) per cluster per minute of window, from the audit log;
	// ControllerRequestsByKind splits them by "VERB resource[/subresource]" (every kind,
	// per cluster per minute).
	ControllerRequestsPerClusterMinute float64            `json:"controllerRequestsPerClusterMinute"`
	ControllerRequestsByKind           map[string]float64 `json:"controllerRequestsByKind"`
	// ControllerClusterRequestsPerClusterMinute is ControllerRequestsPerClusterMinute without
	// the replicas' shard Leases (their renewals and lists: a cost per replica, not per
	// cluster), which ControllerLeaseRequestsPerMinute counts, per minute over every replica.
	ControllerClusterRequestsPerClusterMinute float64 `json:"controllerClusterRequestsPerClusterMinute"`
	ControllerLeaseRequestsPerMinute          float64 `json:"controllerLeaseRequestsPerMinute"`
	// RequestsPerClusterMinuteByClient is every client's requests per cluster per minute.
	RequestsPerClusterMinuteByClient map[string]float64 `json:"requestsPerClusterMinuteByClient"`
}

// setRequests sets the request figures from a window of seconds over clusters whose requests
// per cluster are a.
func (s *ControllerSteady) setRequests(a RequestAttribution, clusters int, seconds float64) {
	if seconds <= 0 {
		return
	}
	minutes := seconds / 60
	s.ControllerRequestsPerClusterMinute = a.ControllerRequestsPerCluster / minutes
	s.ControllerClusterRequestsPerClusterMinute = s.ControllerRequestsPerClusterMinute
	s.ControllerRequestsByKind = map[string]float64{}
	for k, v := range a.ControllerRequestsByKind {
		s.ControllerRequestsByKind[k] = v / minutes
		if _, resource, _ := strings.Cut(k, " "); resource == "leases" {
			s.ControllerClusterRequestsPerClusterMinute -= v / minutes
			s.ControllerLeaseRequestsPerMinute += v / minutes * float64(clusters)
		}
	}
	s.RequestsPerClusterMinuteByClient = map[string]float64{}
	for k, v := range a.RequestsPerClusterByClient {
		s.RequestsPerClusterMinuteByClient[k] = v / minutes
	}
}

// steadyFigures derives the per-cluster figures of a quiet window of seconds over clusters,
// in which the replicas used cpu seconds and made calls.
func steadyFigures(clusters, replicas, running int, seconds, cpu float64, calls map[string]int) ControllerSteady {
	s := ControllerSteady{Seconds: seconds, Replicas: replicas, Running: running, CPUSeconds: cpu, FlinkCalls: calls}
	if clusters <= 0 || seconds <= 0 {
		return s
	}
	minutes := seconds / 60
	total := 0
	for _, n := range calls {
		total += n
	}
	s.CPUSecondsPerClusterMinute = cpu / float64(clusters) / minutes
	s.FlinkCallsPerClusterMinute = float64(total) / float64(clusters) / minutes
	if s.CPUSecondsPerClusterMinute > 0 {
		s.ClustersPerCore = 60 / s.CPUSecondsPerClusterMinute
	}
	return s
}

// flinkCallKind names a Flink REST request by its method and path with the variable parts
// (job, trigger and checkpoint IDs) replaced, so that calls count by kind, not by cluster.
func flinkCallKind(method, path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, s := range segs {
		switch {
		case s == "":
		case isDigits(s):
			segs[i] = ":n"
		case len(s) >= 16 && isHexOrDash(s):
			segs[i] = ":id"
		}
	}
	return method + " /" + strings.Join(segs, "/")
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func isHexOrDash(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' || r == '-') {
			return false
		}
	}
	return true
}

// callCounter counts the requests a handler serves, by flinkCallKind.
type callCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *callCounter) count(r *http.Request) {
	kind := flinkCallKind(r.Method, r.URL.Path)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]int{}
	}
	c.calls[kind]++
}

// snapshot is a copy of the counts so far.
func (c *callCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.calls)
}

// callsSince is after's counts less before's, without the kinds that did not grow.
func callsSince(before, after map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range after {
		if d := n - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}
