// Package bench is the harness behind `make bench`: it measures the admission path in
// process (the packages' Go benchmarks), over HTTPS on loopback against the real
// `flink-admission serve`, and through a real kube-apiserver with and without the CRD's CEL
// rules and the webhooks; it reads the server's memory and the CEL rules' estimated costs,
// and reports everything as one table and a JSON copy. It reports figures and the ratios
// measured in the same run; it never passes or fails on a threshold.
package bench

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Schema is the version of the JSON report's layout; it changes when a field changes
// meaning or goes away.
const Schema = 1

// Report is one run of the harness, as written to the JSON copy.
type Report struct {
	// Schema is the layout version (Schema).
	Schema int `json:"schema"`
	// Started is when the run began; Seconds how long it took.
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// Quick reports a BENCH_QUICK run: small counts, for a smoke check, not for figures.
	Quick bool `json:"quick"`
	// Machine is where the figures were measured.
	Machine Machine `json:"machine"`
	// InProcess are the Go benchmarks of the admission packages (section 1).
	InProcess []GoBenchmark `json:"inProcess"`
	// HTTPS are the loopback load runs against `flink-admission serve` (section 2).
	HTTPS []HTTPSRun `json:"https"`
	// APIServer is the write latency through a real kube-apiserver (section 3).
	APIServer *APIServerResult `json:"apiServer,omitempty"`
	// Memory are the server's resident set sizes (section 4).
	Memory []Memory `json:"memory"`
	// Controller is the controller on the real control plane with simulated Flink (section 6).
	Controller *ControllerResult `json:"controller,omitempty"`
	// CEL are the CRD rules' estimated costs (section 5).
	CEL *CELCosts `json:"cel,omitempty"`
	// Failures name the measurements that could not be made, and why.
	Failures []string `json:"failures,omitempty"`
}

// Machine describes the host of a run: timing figures compare only within one machine and
// one run, and this machine is shared (see the load average).
type Machine struct {
	// CPUs is the number of CPUs the process may use (nproc).
	CPUs int `json:"cpus"`
	// CPUModel is the "model name" of /proc/cpuinfo.
	CPUModel string `json:"cpuModel"`
	// LoadStart and LoadEnd are the 1, 5 and 15 minute load averages at the start and end.
	LoadStart string `json:"loadStart"`
	LoadEnd   string `json:"loadEnd"`
	// GoVersion, OS and Arch are those of the harness (and of the server it builds).
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

// GoBenchmark is one line of `go test -bench -benchmem` output.
type GoBenchmark struct {
	// Package is the import path; Name the benchmark's full name, without the -GOMAXPROCS
	// suffix.
	Package string `json:"package"`
	Name    string `json:"name"`
	// Iterations is b.N.
	Iterations  int     `json:"iterations"`
	NsPerOp     float64 `json:"nsPerOp"`
	BytesPerOp  uint64  `json:"bytesPerOp"`
	AllocsPerOp uint64  `json:"allocsPerOp"`
	// Reference is the reference webhook's figure for the same review, when this benchmark
	// runs a whole review through the HTTP handler (see ReferenceFor).
	Reference *ReferenceInProcess `json:"reference,omitempty"`
}

// HTTPSRun is one load level against the server over TLS on loopback.
type HTTPSRun struct {
	// Review names the request body (e.g. typical-validate-update); Path is the webhook's.
	Review string `json:"review"`
	Path   string `json:"path"`
	// Concurrency is the number of keep-alive connections sending at once; Requests the
	// number of requests measured (after the warm-up).
	Concurrency int `json:"concurrency"`
	Requests    int `json:"requests"`
	// Incomplete is set when the run hit its time limit before Requests.
	Incomplete bool    `json:"incomplete,omitempty"`
	ReqPerSec  float64 `json:"reqPerSec"`
	P50Ms      float64 `json:"p50Ms"`
	P99Ms      float64 `json:"p99Ms"`
	P999Ms     float64 `json:"p999Ms"`
	MaxMs      float64 `json:"maxMs"`
	// Errors counts failed requests by kind (loadgen.ErrorKind); Status answers by code.
	Errors       map[string]int    `json:"errors"`
	ErrorSamples map[string]string `json:"errorSamples,omitempty"`
	Status       map[int]int       `json:"status"`
	// Reference is the reference webhook's figure at this level, when there is one.
	Reference *ReferenceHTTPS `json:"reference,omitempty"`
}

// Scenarios of the API server measurement.
const (
	// ScenarioPlain is (a): the CRD without its CEL rules, no webhooks.
	ScenarioPlain = "a"
	// ScenarioCEL is (b): the CRD with its CEL rules, no webhooks.
	ScenarioCEL = "b"
	// ScenarioWebhooks is (c): the CRD with its CEL rules, and both webhooks.
	ScenarioWebhooks = "c"
	// ScenarioPolicy is (d): the webhook-less install (deploy/overlays/admission-policy),
	// the CRD with its CEL rules and the MutatingAdmissionPolicy, no webhooks.
	ScenarioPolicy = "d"
)

// ScenarioDescriptions describe each scenario in the table.
var ScenarioDescriptions = map[string]string{
	ScenarioPlain:    "CRD without CEL rules, no webhooks",
	ScenarioCEL:      "CRD with CEL rules, no webhooks",
	ScenarioWebhooks: "CRD with CEL rules + both webhooks",
	ScenarioPolicy:   "CRD with CEL rules + the admission policy, no webhooks",
}

// APIServerResult is the write latency through a real kube-apiserver.
type APIServerResult struct {
	// Objects is the number of FlinkClusters created, then updated, in each scenario, one
	// request at a time.
	Objects int `json:"objects"`
	// Ops are the latencies by scenario and operation.
	Ops []APIServerOp `json:"ops"`
	// Ratios compare scenarios (c) and (d) with (a) and (b), per operation.
	Ratios []Ratio `json:"ratios"`
	// WebhookCalls says where the webhooks' time goes in (c), when the metrics were read.
	WebhookCalls *WebhookCalls `json:"webhookCalls,omitempty"`
}

// APIServerOp is the latency of one operation in one scenario.
type APIServerOp struct {
	Scenario  string  `json:"scenario"`
	Operation string  `json:"operation"`
	Count     int     `json:"count"`
	P50Ms     float64 `json:"p50Ms"`
	P99Ms     float64 `json:"p99Ms"`
	MeanMs    float64 `json:"meanMs"`
}

// Ratio is Of (e.g. "c/a") for one operation, at the median and at p99.
type Ratio struct {
	Operation string  `json:"operation"`
	Of        string  `json:"of"`
	P50       float64 `json:"p50"`
	P99       float64 `json:"p99"`
}

// Memory is the resident set of a server process at one point of the run.
type Memory struct {
	// When says at which point (e.g. "idle", "after HTTPS load").
	When string `json:"when"`
	// RSSKiB and PeakKiB are VmRSS and VmHWM of /proc/<pid>/status; AnonKiB and FileKiB
	// split RSSKiB into allocated memory and mapped files (see ProcMemory).
	RSSKiB  uint64 `json:"rssKiB"`
	PeakKiB uint64 `json:"peakKiB"`
	AnonKiB uint64 `json:"anonKiB"`
	FileKiB uint64 `json:"fileKiB"`
	// Note qualifies the figure (e.g. how many clusters the controller had reconciled).
	Note string `json:"note,omitempty"`
	// Reference is the reference webhook's figure, when there is one.
	Reference string `json:"reference,omitempty"`
}

// CELCosts are the static estimated costs of the CRD's rules, as the API server computes
// them when the CRD is created.
type CELCosts struct {
	Rules []CELRuleCost `json:"rules"`
	Total uint64        `json:"total"`
	// PerRuleLimit and PerCRDLimit are the API server's limits.
	PerRuleLimit uint64 `json:"perRuleLimit"`
	PerCRDLimit  uint64 `json:"perCRDLimit"`
}

// CELRuleCost is one rule's estimated cost.
type CELRuleCost struct {
	Location string `json:"location"`
	Rule     string `json:"rule"`
	Cost     uint64 `json:"cost"`
}

// ReadMachine describes this machine now (the load average is LoadStart).
func ReadMachine() Machine {
	return Machine{
		CPUs:      runtime.NumCPU(),
		CPUModel:  cpuModel(),
		LoadStart: LoadAverage(),
		GoVersion: runtime.Version(),
		OS:        runtime.GOOS,
		Arch:      runtime.GOARCH,
	}
}

// LoadAverage returns the three load averages of /proc/loadavg ("" where unavailable).
func LoadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// ProcMemory is a process's resident memory, in KiB, from /proc/<pid>/status.
type ProcMemory struct {
	// RSS and Peak are VmRSS and VmHWM.
	RSS, Peak uint64
	// Anon (RssAnon) is the memory the process allocated: heap, stacks, buffers. File
	// (RssFile) are the pages of mapped files, mostly the executable's own code and data:
	// clean pages the kernel can drop and read again, shared between the processes running
	// the same binary.
	Anon, File uint64
}

// ReadMemory returns the resident memory of process pid.
func ReadMemory(pid int) (ProcMemory, error) {
	var m ProcMemory
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return m, err
	}
	fields := map[string]*uint64{"VmRSS": &m.RSS, "VmHWM": &m.Peak, "RssAnon": &m.Anon, "RssFile": &m.File}
	for line := range strings.Lines(string(raw)) {
		k, v, ok := strings.Cut(line, ":")
		dst := fields[k]
		if !ok || dst == nil {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return m, err
		}
		*dst = n
	}
	if m.RSS == 0 {
		return m, os.ErrNotExist
	}
	return m, nil
}
