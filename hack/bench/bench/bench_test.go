package bench

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/hack/bench/loadgen"
	"github.com/flink-admission/flink-admission/internal/test/benchdata"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/webhook"
)

const goTestOutput = `goos: linux
goarch: amd64
pkg: github.com/flink-admission/flink-admission/policy
cpu: Some CPU @ 2.20GHz
BenchmarkValidateUpdate-2   	   87520	     13480 ns/op	    4120 B/op	      60 allocs/op
PASS
ok  	github.com/flink-admission/flink-admission/policy	2.105s
goos: linux
goarch: amd64
pkg: github.com/flink-admission/flink-admission/webhook
BenchmarkServeHTTP/typical-validate-update-2         	     600	   1850000 ns/op	  10.16 MB/s	 1329646 B/op	   12362 allocs/op
BenchmarkServeHTTP/large_validate_update-2           	     100	  11000000 ns/op	 2000000 B/op	   40000 allocs/op
BenchmarkServeHTTP/minimal_mutate_create-2           	    5000	    200000 ns/op	   50000 B/op	     800 allocs/op
BenchmarkValidateStages/typical-validate-update/policy-2         	   90000	     13000 ns/op	    4100 B/op	      60 allocs/op
--- BENCH: BenchmarkValidateStages
    bench_test.go:12: a log line of the benchmark
BenchmarkNoMem-2     	 1000000	         5.50 ns/op
BenchmarkSizes/n-100-2     	 1000000	         7 ns/op	       0 B/op	       0 allocs/op
PASS
ok  	github.com/flink-admission/flink-admission/webhook	9.001s
`

func TestParseGoBenchmarks(t *testing.T) {
	got, err := ParseGoBenchmarks(strings.NewReader(goTestOutput), 2)
	require.NoError(t, err)
	typical := referenceInProcess["typical-validate-update"]
	minimal := referenceInProcess["minimal-mutate-create"]
	assert.Equal(t, []GoBenchmark{
		{Package: "github.com/flink-admission/flink-admission/policy", Name: "BenchmarkValidateUpdate", Iterations: 87520, NsPerOp: 13480, BytesPerOp: 4120, AllocsPerOp: 60},
		{Package: "github.com/flink-admission/flink-admission/webhook", Name: "BenchmarkServeHTTP/typical-validate-update", Iterations: 600, NsPerOp: 1_850_000, BytesPerOp: 1_329_646, AllocsPerOp: 12_362, Reference: &typical},
		{Package: "github.com/flink-admission/flink-admission/webhook", Name: "BenchmarkServeHTTP/large_validate_update", Iterations: 100, NsPerOp: 11_000_000, BytesPerOp: 2_000_000, AllocsPerOp: 40_000},
		{Package: "github.com/flink-admission/flink-admission/webhook", Name: "BenchmarkServeHTTP/minimal_mutate_create", Iterations: 5000, NsPerOp: 200_000, BytesPerOp: 50_000, AllocsPerOp: 800, Reference: &minimal},
		{Package: "github.com/flink-admission/flink-admission/webhook", Name: "BenchmarkValidateStages/typical-validate-update/policy", Iterations: 90000, NsPerOp: 13000, BytesPerOp: 4100, AllocsPerOp: 60},
		{Package: "github.com/flink-admission/flink-admission/webhook", Name: "BenchmarkNoMem", Iterations: 1_000_000, NsPerOp: 5.5},
		{Package: "github.com/flink-admission/flink-admission/webhook", Name: "BenchmarkSizes/n-100", Iterations: 1_000_000, NsPerOp: 7},
	}, got)
}

func TestParseGoBenchmarksKeepsNumericSuffixesWithOneProc(t *testing.T) {
	got, err := ParseGoBenchmarks(strings.NewReader("pkg: p\nBenchmarkSizes/n-100 	 10	 7 ns/op\n"), 1)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "BenchmarkSizes/n-100", got[0].Name)
}

func TestReferenceForMatchesWholeReviewsOfTheWebhookOnly(t *testing.T) {
	cases := []struct {
		name, pkg, bench string
		want             bool
	}{
		{"handler on a shared review", "x/webhook", "BenchmarkServeHTTP/typical-validate-update", true},
		{"underscores", "x/webhook", "BenchmarkServeHTTP/typical_mutate_create", true},
		{"decoding alone", "x/webhook", "BenchmarkDecodeReview/typical-validate-update", false},
		{"a stage of the review", "x/webhook", "BenchmarkValidateStages/typical-validate-update/policy", false},
		{"another package", "x/pipeline", "BenchmarkPipeline/typical-validate-update", false},
		{"a review the reference did not measure", "x/webhook", "BenchmarkServeHTTP/large-validate-update", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ReferenceFor(tc.pkg, tc.bench) != nil)
		})
	}
}

// TestReferenceBesideEveryServeHTTPReviewTheReferenceMeasured ties the reference's names
// to the benchmark reviews of package benchdata: each minimal and typical review run
// through the webhook's handler gets its reference figures, and no reference is left
// without a review (a renamed review would otherwise lose its reference silently).
func TestReferenceBesideEveryServeHTTPReviewTheReferenceMeasured(t *testing.T) {
	reviews, err := benchdata.Reviews()
	require.NoError(t, err)
	matched := map[string]bool{}
	for _, r := range reviews {
		ref := ReferenceFor("github.com/flink-admission/flink-admission/webhook", "BenchmarkServeHTTP/"+r.Name)
		if strings.HasPrefix(r.Name, "large-") {
			assert.Nil(t, ref, r.Name)
			continue
		}
		if assert.NotNil(t, ref, r.Name) {
			assert.Equal(t, referenceInProcess[r.Name], *ref)
			matched[r.Name] = true
		}
	}
	assert.Len(t, matched, len(referenceInProcess), "every reference figure has its review")
}

func TestBenchPackagesOfThisModuleIncludeThePipelineAndTheWebhook(t *testing.T) {
	got, err := BenchPackages(testenv.RepoRoot())
	require.NoError(t, err)
	assert.Subset(t, got, []string{"./pipeline", "./policy", "./webhook"})
}

func TestBenchPackagesFindsPackagesDeclaringBenchmarks(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	}
	write("webhook/bench_test.go", "package webhook\n\nfunc BenchmarkServeHTTP(b *testing.B) {}\n")
	write("pipeline/x_test.go", "package pipeline\n\nfunc BenchmarkPipeline(bb *testing.B) {}\n")
	write("policy/rules_test.go", "package policy\n\nfunc TestRules(t *testing.T) {}\n")
	write("policy/doc.go", "package policy\n\nfunc BenchmarkNotATest(b *testing.B) {}\n")
	write("webhook/testdata/x_test.go", "package x\n\nfunc BenchmarkIgnored(b *testing.B) {}\n")
	write(".hidden/y_test.go", "package y\n\nfunc BenchmarkIgnored(b *testing.B) {}\n")
	got, err := BenchPackages(root)
	require.NoError(t, err)
	assert.Equal(t, []string{"./pipeline", "./webhook"}, got)
}

// admissionServer answers every review as allowed on the validate path and as denied on the
// mutate path, echoing the request's uid.
func admissionServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		out := admissionv1.AdmissionReview{TypeMeta: in.TypeMeta, Response: &admissionv1.AdmissionResponse{UID: in.Request.UID, Allowed: r.URL.Path == webhook.ValidatePath}}
		if !out.Response.Allowed {
			out.Response.Result = &metav1.Status{Message: "denied by the test server"}
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRunHTTPSMeasuresEveryReviewAtEveryLevel(t *testing.T) {
	srv := admissionServer(t)
	reviews, err := HTTPSReviews()
	require.NoError(t, err)
	runs, err := RunHTTPS(t.Context(), HTTPSOptions{
		BaseURL: srv.URL, TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig,
		Reviews: reviews, Concurrency: []int{1, 16}, Requests: map[int]int{1: 5, 16: 20}, Warmup: 2,
	})
	require.NoError(t, err)
	require.Len(t, runs, 4)
	byKey := map[string]HTTPSRun{}
	for _, r := range runs {
		byKey[fmt.Sprintf("%s/%d", r.Review, r.Concurrency)] = r
	}
	v1, v16 := byKey["typical-validate-update/1"], byKey["typical-validate-update/16"]
	assert.Equal(t, 5, v1.Requests)
	assert.Equal(t, 20, v16.Requests)
	assert.Equal(t, map[int]int{200: 5}, v1.Status)
	assert.Empty(t, v1.Errors)
	assert.Positive(t, v1.ReqPerSec)
	assert.NotNil(t, v1.Reference, "the reference measured the typical validate UPDATE at c=1")

	m1 := byKey["typical-mutate-create/1"]
	assert.Equal(t, webhook.MutatePath, m1.Path)
	assert.Equal(t, map[string]int{string(loadgen.ErrResponse): 5}, m1.Errors, "a denied review is an error")
	assert.Contains(t, m1.ErrorSamples[string(loadgen.ErrResponse)], "denied by the test server")
	assert.Nil(t, m1.Reference)
}

func TestCheckAllowed(t *testing.T) {
	cases := []struct {
		name, body, wantErr string
	}{
		{"allow: allowed review", `{"response":{"uid":"1","allowed":true}}`, ""},
		{"error: denied review, with its message", `{"response":{"uid":"1","allowed":false,"status":{"message":"spec.x: Invalid"}}}`, "spec.x: Invalid"},
		{"error: no response", `{"kind":"AdmissionReview"}`, "no response"},
		{"error: not JSON", `<html>`, "not an AdmissionReview"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckAllowed([]byte(tc.body))
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestServingCertIsTrustedForLoopback(t *testing.T) {
	cert, err := WriteServingCert(t.TempDir())
	require.NoError(t, err)
	pair, err := tls.LoadX509KeyPair(filepath.Join(cert.Dir, "tls.crt"), filepath.Join(cert.Dir, "tls.key"))
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	clientTLS, err := cert.ClientTLS()
	require.NoError(t, err)
	res, err := loadgen.Run(t.Context(), loadgen.Options{URL: srv.URL, TLS: clientTLS, Concurrency: 1, Requests: 2})
	require.NoError(t, err)
	assert.Equal(t, 2, res.Succeeded, "%v", res.ErrorSamples)
}

func TestPlainCRDHasTheSameSchemaWithoutCEL(t *testing.T) {
	plain, removed, err := PlainCRD()
	require.NoError(t, err)
	full, err := FullCRD()
	require.NoError(t, err)
	assert.Positive(t, removed)
	plainJSON, err := json.Marshal(plain)
	require.NoError(t, err)
	fullJSON, err := json.Marshal(full)
	require.NoError(t, err)
	assert.NotContains(t, string(plainJSON), "x-kubernetes-validations")
	assert.Contains(t, string(fullJSON), "x-kubernetes-validations")

	// Stripping the full CRD's decoded form the same way gives the plain one: nothing else
	// was lost on the way.
	var doc any
	require.NoError(t, json.Unmarshal(fullJSON, &doc))
	assert.Equal(t, removed, stripKey(doc, "x-kubernetes-validations"))
	var plainDoc any
	require.NoError(t, json.Unmarshal(plainJSON, &plainDoc))
	assert.Equal(t, plainDoc, doc)
}

func TestTypicalClusterIsNamed(t *testing.T) {
	fc, err := TypicalCluster("fc-0001", "bench-a")
	require.NoError(t, err)
	assert.Equal(t, "fc-0001", fc.Name)
	assert.Equal(t, "bench-a", fc.Namespace)
	assert.Equal(t, "FlinkCluster", fc.Kind)
	assert.Contains(t, fc.Spec.FlinkProperties, "execution.checkpointing.interval", "the update changes this property")
	fc.Spec.FlinkProperties["execution.checkpointing.interval"] = "120s"
	again, err := TypicalCluster("fc-0002", "bench-a")
	require.NoError(t, err)
	assert.NotEqual(t, "120s", again.Spec.FlinkProperties["execution.checkpointing.interval"], "each call returns its own copy")
}

func TestReadCELCostsSumsEveryRuleLargestFirst(t *testing.T) {
	c, err := ReadCELCosts()
	require.NoError(t, err)
	require.NotEmpty(t, c.Rules)
	var sum uint64
	for i, r := range c.Rules {
		sum += r.Cost
		assert.NotEmpty(t, r.Rule)
		if i > 0 {
			assert.LessOrEqual(t, r.Cost, c.Rules[i-1].Cost)
		}
	}
	assert.Equal(t, sum, c.Total)
	assert.Positive(t, c.PerRuleLimit)
	assert.Greater(t, c.PerCRDLimit, c.PerRuleLimit)
}

func TestReadMemoryOfThisProcess(t *testing.T) {
	m, err := ReadMemory(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, m.RSS)
	assert.GreaterOrEqual(t, m.Peak, m.RSS)
	assert.Positive(t, m.Anon, "a Go process allocates memory")
	assert.Positive(t, m.File, "its binary is mapped")
	assert.LessOrEqual(t, m.Anon+m.File, m.RSS, "RssAnon and RssFile are parts of VmRSS (with RssShmem)")
	_, err = ReadMemory(-1)
	assert.Error(t, err)
}

// TestProcessCPUSecondsGrowsWithWork reads this process's CPU time before and after work
// that takes CPU; it grows (the kernel counts in ticks of 10 ms, and the work runs until it
// has).
func TestProcessCPUSecondsGrowsWithWork(t *testing.T) {
	before, err := ProcessCPUSeconds(os.Getpid())
	require.NoError(t, err)
	after := before
	x := 0
	for after <= before {
		for i := range 10_000_000 {
			x += i % 7
		}
		after, err = ProcessCPUSeconds(os.Getpid())
		require.NoError(t, err)
	}
	assert.Greater(t, after, before, "work %d", x)
	_, err = ProcessCPUSeconds(-1)
	assert.Error(t, err)
}

// TestMachineCPUSecondsCountsThisProcess: the machine's CPU time grows at least by what this
// process spent meanwhile.
func TestMachineCPUSecondsCountsThisProcess(t *testing.T) {
	start, err := readCPU()
	require.NoError(t, err)
	cur, x := start, 0
	for cur.self-start.self < 0.1 {
		for i := range 10_000_000 {
			x += i % 7
		}
		cur, err = readCPU()
		require.NoError(t, err)
	}
	// Both count in ticks of 10 ms, the machine's summed over the CPUs.
	assert.GreaterOrEqual(t, cur.machine-start.machine, cur.self-start.self-0.02, "work %d", x)
}

func TestAPIServerRatios(t *testing.T) {
	ops := []APIServerOp{
		{Scenario: "a", Operation: "create", P50Ms: 2, P99Ms: 10},
		{Scenario: "b", Operation: "create", P50Ms: 4, P99Ms: 10},
		{Scenario: "c", Operation: "create", P50Ms: 5, P99Ms: 30},
		{Scenario: "a", Operation: "update", P50Ms: 1, P99Ms: 4},
		{Scenario: "a", Operation: OpUpdateJobRunning, P50Ms: 2, P99Ms: 4},
		{Scenario: "c", Operation: OpUpdateJobRunning, P50Ms: 3, P99Ms: 6},
	}
	assert.Equal(t, []Ratio{
		{Operation: "create", Of: "c/a", P50: 2.5, P99: 3},
		{Operation: "create", Of: "c/b", P50: 1.25, P99: 3},
		{Operation: "create", Of: "b/a", P50: 2, P99: 1},
		{Operation: OpUpdateJobRunning, Of: "c/a", P50: 1.5, P99: 1.5},
	}, apiServerRatios(ops))
}

// sampleReport has every section filled.
func sampleReport() *Report {
	ref := referenceInProcess["typical-validate-update"]
	ops := []APIServerOp{
		{Scenario: "a", Operation: "create", Count: 500, P50Ms: 2, P99Ms: 10},
		{Scenario: "b", Operation: "create", Count: 500, P50Ms: 4, P99Ms: 10},
		{Scenario: "c", Operation: "create", Count: 500, P50Ms: 5, P99Ms: 30},
	}
	return &Report{
		Schema: Schema, Started: time.Date(2026, 11, 30, 16, 0, 0, 0, time.UTC), Seconds: 321,
		Machine: Machine{CPUs: 2, CPUModel: "Some CPU", LoadStart: "1.00 2.00 3.00", LoadEnd: "4.00 5.00 6.00", GoVersion: "go1.26", OS: "linux", Arch: "amd64"},
		InProcess: []GoBenchmark{
			{Package: "m/webhook", Name: "BenchmarkServeHTTP/typical-validate-update", Iterations: 600, NsPerOp: 1_850_000, BytesPerOp: 1_329_646, AllocsPerOp: 12_362, Reference: &ref},
			{Package: "m/policy", Name: "BenchmarkValidateUpdate", Iterations: 90000, NsPerOp: 13_480, BytesPerOp: 4120, AllocsPerOp: 60},
		},
		HTTPS: []HTTPSRun{
			{Review: "typical-validate-update", Concurrency: 1, Requests: 2000, ReqPerSec: 400, P50Ms: 2, P99Ms: 7, P999Ms: 9, Errors: map[string]int{}, Status: map[int]int{200: 2000}, Reference: referenceHTTPSFor("typical-validate-update", 1)},
			{Review: "typical-validate-update", Concurrency: 16, Requests: 5000, ReqPerSec: 800, P50Ms: 20, P99Ms: 150, P999Ms: 200, Errors: map[string]int{"status": 2}, Status: map[int]int{200: 4998, 500: 2}},
		},
		APIServer: &APIServerResult{Objects: 500, Ops: ops, Ratios: apiServerRatios(ops), WebhookCalls: &WebhookCalls{
			Calls: 2000, AdmissionMeanMs: map[string]float64{"v.example": 2, "m.example": 3}, RoundTripMeanMs: 1.5,
			RequestBytesMean: 20480, HandlerMeanMs: map[string]float64{"validate": 0.5, "mutate": 0.25},
		}},
		Memory: []Memory{
			{When: "controller off, idle", RSSKiB: 40 * 1024, PeakKiB: 41 * 1024, AnonKiB: 8 * 1024, FileKiB: 32 * 1024},
			{When: "controller on, watching the clusters", RSSKiB: 80 * 1024, PeakKiB: 90 * 1024, Note: "500 clusters, 500 reconciles", Reference: "45 MB after load"},
		},
		CEL: &CELCosts{
			Rules: []CELRuleCost{{Location: "spec", Rule: "a | b", Cost: 629_189}, {Location: "<root>", Rule: "x", Cost: 10}},
			Total: 629_199, PerRuleLimit: 10_000_000, PerCRDLimit: 100_000_000,
		},
		Controller: &ControllerResult{Clusters: 500, Replicas: 2, Nodes: 6, Phases: []ControllerPhase{
			{Name: "create", Seconds: 42.5, Done: 500, ReconcilesPerCluster: 7.5, CPUSeconds: 12.25, RSSKiB: 100 * 1024, PeakKiB: 120 * 1024, FloorSeconds: 17, FloorDone: 500,
				MachineCPUSeconds: 85, SimulatedFlinkCPUSeconds: 10, ClusterIPAllocations: 500, ClusterIPAllocationSeconds: 40, FloorMachineCPUSeconds: 34, FloorClusterIPAllocationSeconds: 15,
				Plane: PlaneUsage{CPUSeconds: map[string]float64{"kube-apiserver": 40, "etcd": 5, "kwok": 8},
					APIRequestsPerCluster: 30.5, APIRequestsByKind: map[string]float64{"GET configmaps": 9.5, "POST events": 9, "PATCH flinkclusters/status": 3, "POST services": 1, "LIST pods": 2.5}},
				FloorPlane: &PlaneUsage{CPUSeconds: map[string]float64{"kube-apiserver": 15, "etcd": 2, "kwok": 8}, APIRequestsPerCluster: 12, APIRequestsByKind: map[string]float64{"POST services": 1}},
				FlinkFloor: &FlinkFloor{Seconds: 25, Done: 500, MachineCPUSeconds: 50, ClusterIPAllocationSeconds: 20,
					Plane: PlaneUsage{CPUSeconds: map[string]float64{"kube-apiserver": 27, "etcd": 3}, APIRequestsPerCluster: 20}}},
			{Name: "delete pods", Seconds: 80, Done: 499, IDsChanged: 1, ReconcilesPerCluster: 3, CPUSeconds: 5, RSSKiB: 110 * 1024, PeakKiB: 120 * 1024, MachineCPUSeconds: 160, SimulatedFlinkCPUSeconds: 20},
			{Name: "update, a replica killed", Seconds: 90, Done: 500, ReconcilesPerCluster: 9, CPUSeconds: 8, RSSKiB: 110 * 1024, PeakKiB: 120 * 1024, Killed: "replica 0 of 3 sharing the fleet"},
		}, Steady: &ControllerSteady{
			Seconds: 60, Replicas: 1, Running: 500, CPUSeconds: 6, CPUSecondsPerClusterMinute: 0.012,
			FlinkCalls: map[string]int{"GET /jobs/overview": 6000}, FlinkCallsPerClusterMinute: 12, ClustersPerCore: 5000,
		}},
		Failures: []string{"controller memory: timed out"},
	}
}

func TestReportJSONHasEverySection(t *testing.T) {
	dir := t.TempDir()
	r := sampleReport()
	path, err := r.Write(dir)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "bench-20261130-160000.json"), path)
	raw, err := os.ReadFile(filepath.Join(dir, "latest.json"))
	require.NoError(t, err)

	var doc map[string]any
	require.NoError(t, json.Unmarshal(raw, &doc))
	for _, key := range []string{"schema", "started", "seconds", "quick", "machine", "inProcess", "https", "apiServer", "memory", "controller", "cel", "failures"} {
		assert.Contains(t, doc, key)
	}
	assert.EqualValues(t, Schema, doc["schema"])
	ctl := doc["controller"].(map[string]any)
	assert.EqualValues(t, 500, ctl["clusters"])
	assert.EqualValues(t, 2, ctl["replicas"])
	phases := ctl["phases"].([]any)
	require.Len(t, phases, 3)
	for _, p := range phases {
		for _, key := range []string{"name", "seconds", "done", "idsChanged"} {
			assert.Contains(t, p, key)
		}
	}
	assert.EqualValues(t, 17, phases[0].(map[string]any)["floorSeconds"])
	plane := phases[0].(map[string]any)["plane"].(map[string]any)
	assert.EqualValues(t, 40, plane["cpuSeconds"].(map[string]any)["kube-apiserver"])
	assert.EqualValues(t, 30.5, plane["apiRequestsPerCluster"])
	assert.EqualValues(t, 12, phases[0].(map[string]any)["floorPlane"].(map[string]any)["apiRequestsPerCluster"])
	steady := ctl["steady"].(map[string]any)
	assert.EqualValues(t, 0.012, steady["cpuSecondsPerClusterMinute"])
	assert.EqualValues(t, 12, steady["flinkCallsPerClusterMinute"])
	assert.EqualValues(t, 5000, steady["clustersPerCore"])
	var back Report
	require.NoError(t, json.Unmarshal(raw, &back))
	assert.Equal(t, *r, back)

	md, err := os.ReadFile(filepath.Join(dir, "latest.md"))
	require.NoError(t, err)
	var table bytes.Buffer
	require.NoError(t, r.WriteMarkdown(&table))
	assert.Equal(t, table.String(), string(md))
}

func TestMarkdownIsOneTableWithRatiosAndReferences(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, sampleReport().WriteMarkdown(&out))
	text := out.String()
	lines := strings.Split(text, "\n")
	var header, rows []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "| | measurement"):
			header = append(header, l)
		case strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "|---"):
			rows = append(rows, l)
		}
	}
	assert.Len(t, header, 1, "one table")
	// 2 in-process, 2 HTTPS, 3 API server + the webhook calls, 2 memory, 1 CEL total + 2
	// largest, 3 controller phases and the steady state, 1 failure.
	assert.Len(t, rows, 18, "%s", text)
	assert.Contains(t, text, "2 CPUs (Some CPU), load average 1.00 2.00 3.00 at the start and 4.00 5.00 6.00 at the end")
	assert.Contains(t, text, "| in-process | webhook ServeHTTP/typical-validate-update | 1.85 ms/op, 1,329,646 B/op, 12,362 allocs/op |  | 1.35 ms–1.68 ms, 192,830 B, 1,787 allocs (ours: allocs ×6.92) |")
	assert.Contains(t, text, "| HTTPS loopback | typical-validate-update c=16 (5,000 req) | 800 req/s; p50 20.00 / p99 150.00 / p99.9 200.00 ms; 2 errors | req/s ×2.00 of c=1 |  |")
	assert.Contains(t, text, "| ~480 req/s, p99 ~5 ms |")
	assert.Contains(t, text, "| through kube-apiserver | create ×500, (c) CRD with CEL rules + both webhooks | p50 5.00 ms, p99 30.00 ms | (c)/(a) p50 ×2.50, p99 ×3.00; (c)/(b) p50 ×1.25, p99 ×3.00 |  |")
	assert.Contains(t, text, "| through kube-apiserver | a webhook call in (c), mean of 2000 | API server: m.example 3.00 ms, v.example 2.00 ms; its HTTP round trip 1.50 ms (review of 20.0 KiB); webhook handler: mutate 0.25 ms, validate 0.50 ms |")
	assert.Contains(t, text, "| memory | RSS of serve, controller off, idle | 40.0 MiB (peak 41.0 MiB): 8.0 MiB allocated, 32.0 MiB of mapped files (the binary) |")
	assert.Contains(t, text, "| memory | RSS of serve, controller on, watching the clusters | 80.0 MiB (peak 90.0 MiB); 500 clusters, 500 reconciles |  | 45 MB after load |")
	assert.Contains(t, text, "| CEL cost | largest #1 at spec | 629,189 (limit 10,000,000 per rule) |")
	assert.Contains(t, text, "| — | not measured | controller memory: timed out |")
	assert.Contains(t, text, "| controller, real control plane | 500 Deployment-mode clusters, 2 replica(s), 6 KWOK nodes, simulated Flink: create | 42.5 s (500 of 500 clusters); 7.5 reconciles per cluster; serve's CPU 12.2 s, RSS 100.0 MiB (peak 120.0 MiB); the machine's CPU 85.0 s, of which the simulated Flink's 10.0 s; the control plane's CPU: kube-apiserver 40.0 s, kwok 8.0 s, etcd 5.0 s; 500 ClusterIP allocations, 40.0 s (the API server makes them one at a time); 30.5 API requests per cluster (GET configmaps 9.5, POST events 9.0, PATCH flinkclusters/status 3.0, LIST pods 2.5) | ×2.50 of the control plane's floor, 17.0 s (500 JobManager pods of the clusters' objects, created directly; the machine's CPU 34.0 s, the control plane's kube-apiserver 15.0 s, kwok 8.0 s, etcd 2.0 s; 12.0 API requests per cluster; 15.0 s of ClusterIP allocations); the machine's CPU ×2.50 of the floor's, kube-apiserver's and etcd's ×2.65; ×1.70 of the same without the controller, 25.0 s (500 jobs of the same FlinkClusters, their objects created directly, on the simulated Flink; the machine's CPU 50.0 s, the control plane's kube-apiserver 27.0 s, etcd 3.0 s; 20.0 API requests per cluster; 20.0 s of ClusterIP allocations); the machine's CPU ×1.70 of it, kube-apiserver's and etcd's ×1.50 |")
	assert.Contains(t, text, "80.0 s (499 of 500 clusters); 3.0 reconciles per cluster; serve's CPU 5.0 s, RSS 110.0 MiB (peak 120.0 MiB); the machine's CPU 160.0 s, of which the simulated Flink's 20.0 s; 1 job IDs changed |")
	assert.Contains(t, text, "simulated Flink: update, a replica killed | 90.0 s (500 of 500 clusters); 9.0 reconciles per cluster; serve's CPU 8.0 s, RSS 110.0 MiB (peak 120.0 MiB); the machine's CPU 0.0 s, of which the simulated Flink's 0.0 s; killed replica 0 of 3 sharing the fleet; 0 jobs run twice |")
	assert.Contains(t, text, "simulated Flink: steady state, 60 s with 500 of 500 jobs Running, 1 live replica(s), from 0 s after the last phase (its rollouts done) | per cluster per minute: 0.0120 CPU s, 12.00 Flink calls, 0.000 of the controller's API requests (0.000 without its shard Leases) | 5,000 clusters per CPU core (60 / CPU s per cluster per minute) |")
	assert.Contains(t, text, "measured elsewhere")
}

func TestConfigFromEnvSelectsSectionsAndProfiles(t *testing.T) {
	t.Setenv("BENCH_ONLY", "https, apiserver")
	t.Setenv("BENCH_PROFILE", "7")
	c, err := ConfigFromEnv(t.TempDir())
	require.NoError(t, err)
	assert.True(t, c.runs(SectionHTTPS))
	assert.True(t, c.runs(SectionAPIServer))
	assert.False(t, c.runs(SectionInProcess), "a section not named is skipped")
	assert.False(t, c.runs(SectionController))
	assert.Equal(t, 7, c.ProfileSeconds)

	t.Setenv("BENCH_ONLY", "")
	t.Setenv("BENCH_PROFILE", "")
	c, err = ConfigFromEnv(t.TempDir())
	require.NoError(t, err)
	for _, s := range []string{SectionCEL, SectionInProcess, SectionHTTPS, SectionAPIServer, SectionController} {
		assert.True(t, c.runs(s), "every section runs by default: %s", s)
	}
	assert.Zero(t, c.ProfileSeconds)
	assert.Equal(t, 500, c.ControllerClusters, "the default fleet")
	assert.Equal(t, 1, c.ControllerReplicas, "one replica by default")
}

func TestConfigFromEnvSizesTheControllerSection(t *testing.T) {
	t.Setenv("BENCH_QUICK", "1")
	t.Setenv("BENCH_CLUSTERS", "")
	t.Setenv("BENCH_REPLICAS", "")
	c, err := ConfigFromEnv(t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, 5, c.ControllerClusters, "quick runs are small")
	assert.Equal(t, 1, c.ControllerReplicas)

	t.Setenv("BENCH_CLUSTERS", "1000")
	t.Setenv("BENCH_REPLICAS", "3")
	c, err = ConfigFromEnv(t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, 1000, c.ControllerClusters, "BENCH_CLUSTERS wins over BENCH_QUICK")
	assert.Equal(t, 3, c.ControllerReplicas)

	for _, tc := range []struct{ name, clusters, replicas string }{
		{"deny: BENCH_CLUSTERS not a number", "many", ""},
		{"deny: BENCH_CLUSTERS zero", "0", ""},
		{"deny: BENCH_REPLICAS negative", "", "-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("BENCH_CLUSTERS", tc.clusters)
			t.Setenv("BENCH_REPLICAS", tc.replicas)
			_, err := ConfigFromEnv(t.TempDir())
			assert.Error(t, err)
		})
	}
}

func TestReadWebhookCallsAttributesTheTimeOfACall(t *testing.T) {
	apiserver := []byte(`# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
apiserver_admission_webhook_admission_duration_seconds_bucket{name="m.example",operation="CREATE",rejected="false",type="admit",le="+Inf"} 2
apiserver_admission_webhook_admission_duration_seconds_sum{name="m.example",operation="CREATE",rejected="false",type="admit"} 0.010
apiserver_admission_webhook_admission_duration_seconds_count{name="m.example",operation="CREATE",rejected="false",type="admit"} 2
apiserver_admission_webhook_admission_duration_seconds_bucket{name="m.example",operation="UPDATE",rejected="false",type="admit",le="+Inf"} 2
apiserver_admission_webhook_admission_duration_seconds_sum{name="m.example",operation="UPDATE",rejected="false",type="admit"} 0.006
apiserver_admission_webhook_admission_duration_seconds_count{name="m.example",operation="UPDATE",rejected="false",type="admit"} 2
apiserver_admission_webhook_admission_duration_seconds_bucket{name="v.example",operation="CREATE",rejected="false",type="validating",le="+Inf"} 4
apiserver_admission_webhook_admission_duration_seconds_sum{name="v.example",operation="CREATE",rejected="false",type="validating"} 0.008
apiserver_admission_webhook_admission_duration_seconds_count{name="v.example",operation="CREATE",rejected="false",type="validating"} 4
# TYPE rest_client_request_duration_seconds histogram
rest_client_request_duration_seconds_bucket{host="127.0.0.1:9443",verb="POST",le="+Inf"} 8
rest_client_request_duration_seconds_sum{host="127.0.0.1:9443",verb="POST"} 0.024
rest_client_request_duration_seconds_count{host="127.0.0.1:9443",verb="POST"} 8
rest_client_request_duration_seconds_bucket{host="127.0.0.1:2379",verb="POST",le="+Inf"} 1
rest_client_request_duration_seconds_sum{host="127.0.0.1:2379",verb="POST"} 9
rest_client_request_duration_seconds_count{host="127.0.0.1:2379",verb="POST"} 1
# TYPE rest_client_request_size_bytes histogram
rest_client_request_size_bytes_bucket{host="127.0.0.1:9443",verb="POST",le="+Inf"} 8
rest_client_request_size_bytes_sum{host="127.0.0.1:9443",verb="POST"} 16384
rest_client_request_size_bytes_count{host="127.0.0.1:9443",verb="POST"} 8
`)
	serve := []byte(`# TYPE flink_admission_webhook_request_duration_seconds histogram
flink_admission_webhook_request_duration_seconds_bucket{webhook="mutate",le="+Inf"} 4
flink_admission_webhook_request_duration_seconds_sum{webhook="mutate"} 0.002
flink_admission_webhook_request_duration_seconds_count{webhook="mutate"} 4
flink_admission_webhook_request_duration_seconds_bucket{webhook="validate",le="+Inf"} 4
flink_admission_webhook_request_duration_seconds_sum{webhook="validate"} 0.004
flink_admission_webhook_request_duration_seconds_count{webhook="validate"} 4
`)
	before := []byte(`# TYPE flink_admission_webhook_request_duration_seconds histogram
flink_admission_webhook_request_duration_seconds_bucket{webhook="mutate",le="+Inf"} 10
flink_admission_webhook_request_duration_seconds_sum{webhook="mutate"} 1
flink_admission_webhook_request_duration_seconds_count{webhook="mutate"} 10
`)
	w, err := ReadWebhookCalls(apiserver, nil, serve, "https://127.0.0.1:9443")
	require.NoError(t, err)
	assert.Equal(t, uint64(8), w.Calls)
	assert.InDelta(t, 4.0, w.AdmissionMeanMs["m.example"], 1e-9, "CREATE and UPDATE together")
	assert.InDelta(t, 2.0, w.AdmissionMeanMs["v.example"], 1e-9)
	assert.InDelta(t, 3.0, w.RoundTripMeanMs, 1e-9, "only the webhook's host")
	assert.InDelta(t, 2048.0, w.RequestBytesMean, 1e-9)
	assert.InDelta(t, 0.5, w.HandlerMeanMs["mutate"], 1e-9)
	assert.InDelta(t, 1.0, w.HandlerMeanMs["validate"], 1e-9)

	// Requests served before (c) do not count: 4 requests, 2 ms, once 10 requests of 1 s
	// are taken out of 14 requests of 1.002 s.
	after := bytes.ReplaceAll(serve, []byte(`sum{webhook="mutate"} 0.002`), []byte(`sum{webhook="mutate"} 1.002`))
	after = bytes.ReplaceAll(after, []byte(`count{webhook="mutate"} 4`), []byte(`count{webhook="mutate"} 14`))
	w, err = ReadWebhookCalls(apiserver, before, after, "https://127.0.0.1:9443")
	require.NoError(t, err)
	assert.InDelta(t, 0.5, w.HandlerMeanMs["mutate"], 1e-9)

	_, err = ReadWebhookCalls(apiserver, nil, serve, "https://127.0.0.1:1")
	assert.Error(t, err, "no call to that host")
}
