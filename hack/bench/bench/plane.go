package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

// PlaneUsage is what the control plane spent during a phase or the floor: where the
// machine's CPU went, and which API requests the clusters cost.
type PlaneUsage struct {
	// CPUSeconds is the CPU time of each control plane component (planeComponents; kwok sums
	// every node's process).
	CPUSeconds map[string]float64 `json:"cpuSeconds"`
	// APIRequestsPerCluster is the API server's requests (apiserver_request_total) per
	// cluster; APIRequestsByKind splits them by "VERB resource[/subresource]", the kinds of
	// at least minRequestsPerCluster each.
	APIRequestsPerCluster float64            `json:"apiRequestsPerCluster"`
	APIRequestsByKind     map[string]float64 `json:"apiRequestsByKind"`
}

// planeComponents are the control plane's programs, the processes testenv starts as this
// process's children.
var planeComponents = []string{"kube-apiserver", "etcd", "kube-controller-manager", "kube-scheduler", "kwok"}

// minRequestsPerCluster leaves out of PlaneUsage.APIRequestsByKind the kinds of requests that
// are not the clusters' (leader election, discovery, the bench's own reads).
const minRequestsPerCluster = 0.05

// clusterIPAllocatorMetric is kube-apiserver's histogram of its Service ClusterIP
// allocations: the time each took from the moment its allocator began it. The allocator makes
// them one at a time (MetaAllocator.AllocateNextService holds its mutex across the
// allocation, which creates the IPAddress object through the API server itself: kubernetes
// v1.37 pkg/registry/core/service/ipallocator), so the histogram's sum is the time Service
// creates held that lock.
const clusterIPAllocatorMetric = "kube_apiserver_clusterip_allocator_allocation_duration_seconds"

// allocations is the API server's ClusterIP allocations so far: their count and total time.
type allocations struct{ count, seconds float64 }

// planeReading is the control plane's counters at one moment: its components' CPU time, the
// API server's requests by kind and its ClusterIP allocations.
type planeReading struct {
	cpu      map[string]float64
	requests map[string]float64
	alloc    allocations
}

// readPlane reads the components' CPU from /proc and the API server's counters from its
// /metrics, through rc.
func readPlane(ctx context.Context, rc rest.Interface) (planeReading, error) {
	cpu, err := childCPUSeconds(planeComponents)
	if err != nil {
		return planeReading{}, err
	}
	raw, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return planeReading{}, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	r, err := parseAPIServerMetrics(raw)
	r.cpu = cpu
	return r, err
}

// parseAPIServerMetrics reads the request counts and ClusterIP allocations of an API
// server's /metrics text.
func parseAPIServerMetrics(raw []byte) (planeReading, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return planeReading{}, fmt.Errorf("parsing the API server's metrics: %w", err)
	}
	r := planeReading{requests: map[string]float64{}}
	for _, m := range families[clusterIPAllocatorMetric].GetMetric() {
		r.alloc.count += float64(m.GetHistogram().GetSampleCount())
		r.alloc.seconds += m.GetHistogram().GetSampleSum()
	}
	for _, m := range families["apiserver_request_total"].GetMetric() {
		r.requests[requestKind(m.GetLabel())] += m.GetCounter().GetValue()
	}
	return r, nil
}

// requestKind names a request counter by its verb, resource and subresource: "PATCH
// flinkclusters/status".
func requestKind(labels []*dto.LabelPair) string {
	var verb, resource, sub string
	for _, l := range labels {
		switch l.GetName() {
		case "verb":
			verb = l.GetValue()
		case "resource":
			resource = l.GetValue()
		case "subresource":
			sub = l.GetValue()
		}
	}
	if sub != "" {
		resource += "/" + sub
	}
	return verb + " " + resource
}

// usageSince is what the plane spent from start to r, with the requests per cluster.
func (r planeReading) usageSince(start planeReading, clusters int) PlaneUsage {
	u := PlaneUsage{CPUSeconds: map[string]float64{}, APIRequestsByKind: map[string]float64{}}
	for name, cpu := range r.cpu {
		u.CPUSeconds[name] = cpu - start.cpu[name]
	}
	for kind, n := range r.requests {
		per := (n - start.requests[kind]) / float64(clusters)
		u.APIRequestsPerCluster += per
		if per >= minRequestsPerCluster {
			u.APIRequestsByKind[kind] = per
		}
	}
	return u
}

// apiServerCPURatio is the CPU time kube-apiserver and etcd spent in u over what they spent
// in base: what a phase costs the API server beside a floor, whatever else ran on the cores.
func apiServerCPURatio(u, base PlaneUsage) float64 {
	sum := func(p PlaneUsage) float64 { return p.CPUSeconds["kube-apiserver"] + p.CPUSeconds["etcd"] }
	return sum(u) / sum(base)
}

// topKinds are the n kinds of requests most made per cluster, with their counts, as "GET
// configmaps 9.4".
func (u PlaneUsage) topKinds(n int) []string {
	kinds := slices.Collect(maps.Keys(u.APIRequestsByKind))
	slices.SortFunc(kinds, func(a, b string) int {
		return cmp.Or(cmp.Compare(u.APIRequestsByKind[b], u.APIRequestsByKind[a]), strings.Compare(a, b))
	})
	out := make([]string, 0, n)
	for _, k := range kinds[:min(n, len(kinds))] {
		out = append(out, printer.Sprintf("%s %.1f", k, u.APIRequestsByKind[k]))
	}
	return out
}

// childCPUSeconds is the CPU time of this process's children whose program (the base name of
// their first argument) is one of names, summed by program. The control plane runs as this
// process's children, so no other process of the machine is counted.
func childCPUSeconds(names []string) (map[string]float64, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := strconv.Itoa(os.Getpid())
	out := map[string]float64{}
	for _, name := range names {
		out[name] = 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone since the listing
		}
		// pid (comm) state ppid ...
		end := bytes.LastIndexByte(stat, ')')
		if f := strings.Fields(string(stat[end+1:])); end < 0 || len(f) < 2 || f[1] != self {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		program := filepath.Base(string(argv0))
		if !slices.Contains(names, program) {
			continue
		}
		cpu, err := ProcessCPUSeconds(pid)
		if err != nil {
			continue
		}
		out[program] += cpu
	}
	return out, nil
}

// componentCPU lists the components' CPU time, the most first: "kube-apiserver 218.0 s,
// kwok 27.0 s, ...".
func componentCPU(u PlaneUsage) string {
	names := slices.Collect(maps.Keys(u.CPUSeconds))
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(u.CPUSeconds[b], u.CPUSeconds[a]), strings.Compare(a, b))
	})
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, printer.Sprintf("%s %.1f s", n, u.CPUSeconds[n]))
	}
	return strings.Join(parts, ", ")
}
