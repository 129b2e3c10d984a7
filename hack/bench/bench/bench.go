package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

// Config sets the sizes of a run.
type Config struct {
	// Quick uses small counts (BENCH_QUICK=1): a smoke run of every piece in a few minutes.
	Quick bool
	// Root is the module root; OutDir receives the JSON copy, the table and the server logs.
	Root, OutDir string
	// Filter is the -bench expression of the in-process benchmarks (BENCH_FILTER, "." by
	// default).
	Filter string
	// Benchtime is their -benchtime.
	Benchtime string
	// Objects and Warmup size the API server scenarios.
	Objects, Warmup int
	// HTTPSRequests are the measured requests by concurrency; HTTPSWarmup the unmeasured
	// ones sent first at each level.
	HTTPSRequests map[int]int
	HTTPSWarmup   int
	// ControllerWait bounds the wait for the controller to reconcile every cluster before
	// its memory is read.
	ControllerWait time.Duration
	// ControllerClusters is how many Deployment-mode clusters section 6 creates at once on the
	// real control plane (BENCH_CLUSTERS); ControllerPhaseWait bounds each of its phases.
	ControllerClusters  int
	ControllerPhaseWait time.Duration
	// ControllerReplicas is how many `serve` processes section 6 runs (BENCH_REPLICAS, 1 by
	// default); ControllerSteadyWindow is its quiet window after the phases: a resync
	// interval, so that every cluster's resync falls in it beside its polls.
	ControllerReplicas     int
	ControllerSteadyWindow time.Duration
	// ControllerWorkers, when positive (BENCH_WORKERS), is each replica's
	// --controller-workers; its default otherwise.
	ControllerWorkers int
	// Only, when not empty, limits the run to these sections (BENCH_ONLY, comma-separated:
	// cel, inprocess, https, apiserver, controller), to measure one piece again without
	// the others. The server's memory is read whenever the server runs; controller also
	// runs apiserver, whose clusters it watches.
	Only map[string]bool
	// ProfileSeconds, when positive (BENCH_PROFILE=<seconds>), records CPU profiles of the
	// API server and the webhook server during the API server runs and the HTTPS runs, a
	// heap profile of the webhook server after them, and the API server's CPU profiles of
	// the controller section's Flink floor and create phase, under OutDir/logs.
	ProfileSeconds int
	// Progress receives what the run is doing.
	Progress io.Writer
}

// Sections of a run, for BENCH_ONLY.
const (
	SectionCEL        = "cel"
	SectionInProcess  = "inprocess"
	SectionHTTPS      = "https"
	SectionAPIServer  = "apiserver"
	SectionController = "controller"
)

// runs reports whether the configuration measures section.
func (c Config) runs(section string) bool { return len(c.Only) == 0 || c.Only[section] }

// Concurrency levels of the HTTPS runs.
var concurrencyLevels = []int{1, 16, 64}

// ConfigFromEnv returns the full configuration, or the quick one when BENCH_QUICK is set
// (to anything but "" or "0"), for the module at root. BENCH_CLUSTERS, BENCH_REPLICAS and
// BENCH_WORKERS, when set, must be positive integers.
func ConfigFromEnv(root string) (Config, error) {
	c := Config{
		Root: root, OutDir: filepath.Join(root, ".bench"), Filter: ".",
		Objects: 500, Warmup: 20,
		HTTPSRequests: map[int]int{1: 1_000, 16: 3_000, 64: 6_000}, HTTPSWarmup: 100,
		ControllerWait:     3 * time.Minute,
		ControllerClusters: 500, ControllerPhaseWait: 15 * time.Minute,
		ControllerReplicas: 1, ControllerSteadyWindow: controller.DefaultResyncInterval,
		Progress: os.Stderr,
	}
	if q := os.Getenv("BENCH_QUICK"); q != "" && q != "0" {
		c.Quick = true
		c.Benchtime = "20x"
		c.Objects, c.Warmup = 20, 3
		c.HTTPSRequests, c.HTTPSWarmup = map[int]int{1: 50, 16: 100, 64: 200}, 20
		c.ControllerWait = time.Minute
		c.ControllerClusters, c.ControllerPhaseWait = 5, 3*time.Minute
		c.ControllerSteadyWindow = controller.DefaultSteadyPollInterval + 5*time.Second
	}
	for _, v := range []struct {
		name string
		to   *int
	}{{"BENCH_CLUSTERS", &c.ControllerClusters}, {"BENCH_REPLICAS", &c.ControllerReplicas}, {"BENCH_WORKERS", &c.ControllerWorkers}} {
		raw := os.Getenv(v.name)
		if raw == "" {
			continue
		}
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			return Config{}, fmt.Errorf("%s=%q: want a positive integer", v.name, raw)
		}
		*v.to = n
	}
	if f := os.Getenv("BENCH_FILTER"); f != "" {
		c.Filter = f
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_PROFILE")); err == nil && n > 0 {
		c.ProfileSeconds = n
	}
	for _, s := range strings.Split(os.Getenv("BENCH_ONLY"), ",") {
		if s = strings.TrimSpace(s); s != "" {
			if c.Only == nil {
				c.Only = map[string]bool{}
			}
			c.Only[s] = true
		}
	}
	return c, nil
}

// Run measures everything the configuration asks for. A piece that cannot be measured is
// recorded in Report.Failures and the others still run; the error is then non-nil.
func Run(ctx context.Context, c Config) (*Report, error) {
	progress := c.Progress
	if progress == nil {
		progress = io.Discard
	}
	started := time.Now()
	r := &Report{Schema: Schema, Started: started, Quick: c.Quick, Machine: ReadMachine()}
	fail := func(what string, err error) {
		r.Failures = append(r.Failures, fmt.Sprintf("%s: %v", what, err))
		fmt.Fprintf(progress, "FAILED %s: %v\n", what, err)
	}

	if c.runs(SectionCEL) {
		fmt.Fprintln(progress, "== 5. CEL rules' estimated costs")
		if costs, err := ReadCELCosts(); err != nil {
			fail("CEL costs", err)
		} else {
			r.CEL = costs
		}
	}

	if c.runs(SectionInProcess) {
		fmt.Fprintln(progress, "== 1. in-process benchmarks")
		if pkgs, err := BenchPackages(c.Root); err != nil {
			fail("finding the benchmarks", err)
		} else {
			res, err := RunGoBenchmarks(ctx, GoBenchOptions{Root: c.Root, Packages: pkgs, Filter: c.Filter, Benchtime: c.Benchtime, Progress: progress})
			r.InProcess = res
			if err != nil {
				fail("in-process benchmarks", err)
			}
		}
	}

	if c.runs(SectionHTTPS) || c.runs(SectionAPIServer) || c.runs(SectionController) {
		binary, err := c.build(ctx, progress)
		if err != nil {
			fail("server measurements", err)
		} else if err := c.runServer(ctx, r, fail, binary); err != nil {
			fail("server measurements", err)
		}
		// Section 6 runs once sections 2-4's API server and servers are stopped: on 2 cores
		// they would take a share of the CPU the controller's plane is measured on.
		if binary != "" && c.runs(SectionController) {
			res, err := RunController(ctx, ControllerOptions{
				Binary: binary, Clusters: c.ControllerClusters, Replicas: c.ControllerReplicas, Workers: c.ControllerWorkers, Wait: c.ControllerPhaseWait,
				SteadyWindow: c.ControllerSteadyWindow, LogDir: filepath.Join(c.OutDir, "logs"), ProfileSeconds: c.ProfileSeconds, Progress: progress,
			})
			r.Controller = res
			if err != nil {
				fail("controller on the real control plane", err)
			}
		}
	}

	r.Machine.LoadEnd = LoadAverage()
	r.Seconds = time.Since(started).Seconds()
	if len(r.Failures) > 0 {
		return r, fmt.Errorf("%d measurement(s) failed: %s", len(r.Failures), strings.Join(r.Failures, "; "))
	}
	return r, nil
}

// build builds the binary the server sections run, under OutDir.
func (c Config) build(ctx context.Context, progress io.Writer) (string, error) {
	if err := os.MkdirAll(filepath.Join(c.OutDir, "logs"), 0o755); err != nil {
		return "", err
	}
	binary := filepath.Join(c.OutDir, "bin", "flink-admission")
	fmt.Fprintln(progress, "== building flink-admission")
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd/flink-admission")
	build.Dir, build.Stdout, build.Stderr = c.Root, progress, progress
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building flink-admission: %w", err)
	}
	return binary, nil
}

// runServer starts kube-apiserver and etcd and measures sections 2-4 with binary.
func (c Config) runServer(ctx context.Context, r *Report, fail func(string, error), binary string) (err error) {
	progress := c.Progress
	if progress == nil {
		progress = io.Discard
	}
	logDir := filepath.Join(c.OutDir, "logs")

	fmt.Fprintln(progress, "== starting kube-apiserver and etcd")
	tmp, err := os.MkdirTemp("", "flink-admission-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	env, err := testenv.Start(testenv.Options{WithoutCRD: true, KubeconfigDir: tmp})
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := env.Stop(); stopErr != nil {
			fail("stopping kube-apiserver and etcd", stopErr)
		}
	}()
	certDir := filepath.Join(tmp, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return err
	}
	cert, err := WriteServingCert(certDir)
	if err != nil {
		return err
	}
	clientTLS, err := cert.ClientTLS()
	if err != nil {
		return err
	}

	logFile, err := os.Create(filepath.Join(logDir, "serve-webhooks.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	fmt.Fprintln(progress, "== starting flink-admission serve (controller off)")
	srv, err := StartServe(ctx, ServeOptions{Binary: binary, Kubeconfig: env.Kubeconfig, Cert: cert, Log: logFile, Pprof: c.ProfileSeconds > 0}, 2*time.Minute)
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := srv.Stop(); stopErr != nil {
			fail("stopping serve", stopErr)
		}
	}()
	memory := func(p *ServeProcess, when, note, ref string) {
		m, err := ReadMemory(p.Pid())
		if err != nil {
			fail("memory "+when, err)
			return
		}
		r.Memory = append(r.Memory, Memory{When: when, RSSKiB: m.RSS, PeakKiB: m.Peak, AnonKiB: m.Anon, FileKiB: m.File, Note: note, Reference: ref})
	}
	memory(srv, "controller off, idle", "", "")

	if c.runs(SectionHTTPS) {
		fmt.Fprintln(progress, "== 2. HTTPS on loopback")
		reviews, err := HTTPSReviews()
		if err != nil {
			return err
		}
		https, err := RunHTTPS(ctx, HTTPSOptions{
			BaseURL: srv.WebhookURL, TLS: clientTLS, Reviews: reviews, Concurrency: concurrencyLevels,
			Requests: c.HTTPSRequests, Warmup: c.HTTPSWarmup, MaxDuration: 2 * time.Minute, Progress: progress,
		})
		r.HTTPS = https
		if err != nil {
			fail("HTTPS", err)
		}
		memory(srv, "controller off, after the HTTPS runs", "", fmt.Sprintf("%d MB after load", ReferenceRSSMB))
	}
	// The controller's memory is read with the clusters that the API server runs leave.
	if !c.runs(SectionAPIServer) && !c.runs(SectionController) {
		return nil
	}

	fmt.Fprintln(progress, "== 3. through kube-apiserver")
	api, err := RunAPIServer(ctx, APIServerOptions{
		Config: env.Config, Objects: c.Objects, Warmup: c.Warmup, WebhookURL: srv.WebhookURL, CAPEM: cert.CAPEM,
		RepoRoot: c.Root, Progress: progress, Counter: srv.Counter, MetricsDir: logDir, ServeMetrics: srv.Metrics,
		ProfileSeconds: c.ProfileSeconds, ServeProfile: srv.Profile,
	})
	r.APIServer = api
	if err != nil {
		fail("API server", err)
		return nil
	}
	memory(srv, "controller off, after the API server runs", fmt.Sprintf("%d creates and %d updates through the webhooks in (c)", c.Objects+c.Warmup, c.Objects+c.Warmup), "")

	if !c.runs(SectionController) {
		return nil
	}
	fmt.Fprintln(progress, "== 4. memory with the controller watching the clusters")
	if err := c.controllerMemory(ctx, r, env.Config, binary, env.Kubeconfig, cert, logDir); err != nil {
		fail("controller memory", err)
	}
	return nil
}

// controllerMemory leaves exactly Objects clusters (those of scenario (c)), starts a second
// server with the controller on, waits until it has reconciled every cluster once (bounded
// by ControllerWait), and reads its memory.
func (c Config) controllerMemory(ctx context.Context, r *Report, cfg *rest.Config, binary, kubeconfig string, cert *ServingCert, logDir string) error {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	scheme := runtime.NewScheme()
	if err := v1beta1.AddToScheme(scheme); err != nil {
		return err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	for _, s := range []string{ScenarioPlain, ScenarioCEL, ScenarioPolicy} {
		if err := cl.DeleteAllOf(ctx, &v1beta1.FlinkCluster{}, client.InNamespace(scenarioNamespace(s))); err != nil {
			return err
		}
	}
	if err := cl.DeleteAllOf(ctx, &v1beta1.FlinkCluster{}, client.InNamespace(scenarioNamespace(ScenarioWebhooks)), client.MatchingLabels{warmupLabel: "true"}); err != nil {
		return err
	}
	if err := waitFor(ctx, fmt.Sprintf("%d FlinkClusters left", c.Objects), func() error {
		var list v1beta1.FlinkClusterList
		if err := cl.List(ctx, &list); err != nil {
			return err
		}
		if len(list.Items) != c.Objects {
			return fmt.Errorf("%d FlinkClusters", len(list.Items))
		}
		return nil
	}); err != nil {
		return err
	}

	logFile, err := os.Create(filepath.Join(logDir, "serve-controller.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	srv, err := StartServe(ctx, ServeOptions{Binary: binary, Kubeconfig: kubeconfig, Cert: cert, Controller: true, Log: logFile}, 2*time.Minute)
	if err != nil {
		return err
	}
	defer func() { _ = srv.Stop() }()

	// Every cluster reconciled once means the controller has listed and cached them all,
	// and created what it owns for each.
	var reconciles float64
	waitErr := func() error {
		wctx, cancel := context.WithTimeout(ctx, c.ControllerWait)
		defer cancel()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			n, err := srv.Counter(wctx, "controller_runtime_reconcile_total", map[string]string{"controller": controller.ControllerName})
			if err == nil {
				reconciles = n
				if n >= float64(c.Objects) {
					return nil
				}
			}
			select {
			case <-wctx.Done():
				return errors.New("timed out")
			case <-tick.C:
			}
		}
	}()
	note := fmt.Sprintf("%d clusters, %.0f reconciles", c.Objects, reconciles)
	if waitErr != nil {
		note += fmt.Sprintf(" (fewer reconciles than clusters after %s)", c.ControllerWait)
	}
	m, err := ReadMemory(srv.Pid())
	if err != nil {
		return err
	}
	r.Memory = append(r.Memory, Memory{When: "controller on, watching the clusters", RSSKiB: m.RSS, PeakKiB: m.Peak, AnonKiB: m.Anon, FileKiB: m.File, Note: note})
	return srv.Stop()
}

// Write stores the report as JSON (a timestamped copy and latest.json) and the table as
// latest.md in dir, and returns the JSON path.
func (r *Report) Write(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	raw = append(raw, '\n')
	path := filepath.Join(dir, "bench-"+r.Started.UTC().Format("20060102-150405")+".json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "latest.json"), raw, 0o644); err != nil {
		return "", err
	}
	md, err := os.Create(filepath.Join(dir, "latest.md"))
	if err != nil {
		return "", err
	}
	if err := r.WriteMarkdown(md); err != nil {
		md.Close()
		return "", err
	}
	return path, md.Close()
}
