package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/deploy"
	"github.com/flink-admission/flink-admission/internal/devenv"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/policy"
)

// controllerNamespace holds the clusters of the controller section.
const controllerNamespace = "bench-controller"

// podsPerNode is how many JobManager pods the section puts on one KWOK node (a node takes
// 110 pods, as a kubelet's default).
const podsPerNode = 100

// ControllerOptions configure RunController.
type ControllerOptions struct {
	// Binary is the flink-admission executable (the image's build: serve).
	Binary string
	// Clusters is how many Deployment-mode FlinkClusters are created at once.
	Clusters int
	// Wait bounds each phase.
	Wait time.Duration
	// LogDir receives the control plane's and the server's logs.
	LogDir string
	// Progress receives what the run is doing.
	Progress io.Writer
}

// ControllerResult is the controller section (section 6): the controller, the real
// `flink-admission serve`, on the real control plane with simulated Flink.
type ControllerResult struct {
	// Clusters and Nodes size the run.
	Clusters int `json:"clusters"`
	Nodes    int `json:"nodes"`
	// Phases are the create and the delete-every-JobManager-pod phases, in order.
	Phases []ControllerPhase `json:"phases"`
}

// ControllerPhase is one phase of the controller section.
type ControllerPhase struct {
	// Name says what happened at once to every cluster.
	Name string `json:"name"`
	// Seconds is the time from the phase's start until every job was Running (with its job
	// ID kept, after a pod delete); Done how many were by then (Clusters unless Wait ran out).
	Seconds float64 `json:"seconds"`
	Done    int     `json:"done"`
	// IDsChanged counts clusters whose job ID changed (a job resubmitted, not recovered).
	IDsChanged int `json:"idsChanged"`
	// Reconciles is the controller's reconcile count during the phase, per cluster.
	ReconcilesPerCluster float64 `json:"reconcilesPerCluster"`
	// CPUSeconds is the server's user+system CPU time during the phase.
	CPUSeconds float64 `json:"cpuSeconds"`
	// RSSKiB and PeakKiB are the server's resident set at the phase's end and its peak.
	RSSKiB  uint64 `json:"rssKiB"`
	PeakKiB uint64 `json:"peakKiB"`
}

// RunController measures the controller on the real control plane (kube-apiserver, etcd,
// kube-controller-manager, kube-scheduler, KWOK nodes) with simulated Flink: o.Clusters
// Deployment-mode clusters created at once, the time until every job is Running; then every
// JobManager pod deleted at once, the time until every job runs again, on a new pod, with
// its job ID kept. The controller is `flink-admission serve` as shipped, in its own process
// (its CPU and memory are its own); the simulated Flink runs in this process and answers the
// controller's REST calls through an HTTP proxy on loopback (HTTP_PROXY), since serve calls
// each cluster's JobManager Service by its cluster DNS name.
func RunController(ctx context.Context, o ControllerOptions) (*ControllerResult, error) {
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	nodes := o.Clusters/podsPerNode + 1
	fmt.Fprintf(progress, "== 6. the controller on the real control plane: %d clusters, %d KWOK nodes\n", o.Clusters, nodes)
	cp, err := testenv.StartControlPlane(testenv.ControlPlaneOptions{Nodes: nodes, LogDir: filepath.Join(o.LogDir, "controlplane")})
	if err != nil {
		return nil, err
	}
	defer func() { _ = cp.Stop() }()

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1beta1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	cfg := *cp.Config
	cfg.QPS, cfg.Burst = -1, 0
	cl, err := client.New(&cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: devenv.DevServiceAccount, Namespace: controllerNamespace}},
	} {
		if err := cl.Create(ctx, obj); err != nil {
			return nil, err
		}
	}

	sim, err := devenv.NewSimulation(&cfg, logr.Discard())
	if err != nil {
		return nil, err
	}
	simCtx, stopSim := context.WithCancel(ctx)
	simDone := make(chan error, 1)
	go func() { simDone <- sim.Start(simCtx) }()
	defer func() { stopSim(); <-simDone }()
	proxy, err := startFlinkProxy(cl, sim)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()

	certDir := filepath.Join(o.LogDir, "controller-certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	cert, err := WriteServingCert(certDir)
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(o.LogDir, "serve-controlplane.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	srv, err := StartServe(ctx, ServeOptions{
		Binary: o.Binary, Kubeconfig: cp.Kubeconfig, Cert: cert, Controller: true, Log: logFile,
		// The Flink REST calls (to <cluster>-jobmanager.<namespace>.svc) go to the proxy; the
		// API server's address is loopback, which Go never proxies.
		Env: []string{"HTTP_PROXY=" + proxy.URL, "http_proxy=" + proxy.URL, "NO_PROXY=", "no_proxy="},
	}, 2*time.Minute)
	if err != nil {
		return nil, err
	}
	defer func() { _ = srv.Stop() }()

	res := &ControllerResult{Clusters: o.Clusters, Nodes: nodes}
	m := &phaseMeter{srv: srv, clusters: o.Clusters}

	// Phase 1: every cluster created at once.
	sample, err := benchCluster()
	if err != nil {
		return nil, err
	}
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	if err := parallel(o.Clusters, 32, func(i int) error {
		fc := sample.DeepCopy()
		fc.Name = fmt.Sprintf("c%04d", i)
		return cl.Create(ctx, fc)
	}); err != nil {
		return nil, fmt.Errorf("creating the clusters: %w", err)
	}
	ids := map[string]string{}
	done, _, waiting, err := waitJobs(ctx, cl, o.Wait, func(fc *v1beta1.FlinkCluster, _ map[string]bool) bool {
		return jobRunning(fc)
	}, nil)
	if err != nil {
		return nil, err
	}
	describeWaiting(progress, waiting)
	p, err := m.end(ctx, "create every cluster at once; until every job is Running", done)
	if err != nil {
		return nil, err
	}
	res.Phases = append(res.Phases, p)
	fmt.Fprintf(progress, "   %d/%d Running after %.1f s\n", p.Done, o.Clusters, p.Seconds)

	// Phase 2: every JobManager pod deleted at once.
	var list v1beta1.FlinkClusterList
	if err := cl.List(ctx, &list, client.InNamespace(controllerNamespace)); err != nil {
		return nil, err
	}
	for _, fc := range list.Items {
		if j := fc.Status.Components.Job; j != nil {
			ids[fc.Name] = j.ID
		}
	}
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.InNamespace(controllerNamespace), client.MatchingLabels{resources.LabelComponent: resources.ComponentJobManager}); err != nil {
		return nil, err
	}
	old := map[types.UID]bool{}
	for _, pod := range pods.Items {
		old[pod.UID] = true
	}
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	if err := cl.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(controllerNamespace), client.MatchingLabels{resources.LabelComponent: resources.ComponentJobManager}); err != nil {
		return nil, err
	}
	// Running again means: the controller reports the job Running with its ID, and Flink's
	// leader, the one that runs it, is the process of a new pod (until the old pods end
	// after their preStop delay, the old leaders still run the jobs).
	done, changed, waiting, err := waitJobs(ctx, cl, o.Wait, func(fc *v1beta1.FlinkCluster, newPods map[string]bool) bool {
		if !jobRunning(fc) {
			return false
		}
		leader := sim.Cluster(fc).Leader()
		return leader != nil && newPods[leader.Name()] && leader.JobState(fc.Status.Components.Job.ID) == flinkclient.JobStateRunning
	}, func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Components.Job != nil && fc.Status.Components.Job.ID != ids[fc.Name]
	}, old)
	if err != nil {
		return nil, err
	}
	describeWaiting(progress, waiting)
	p, err = m.end(ctx, "delete every JobManager pod at once; until every job runs on a new pod", done)
	if err != nil {
		return nil, err
	}
	p.IDsChanged = changed
	res.Phases = append(res.Phases, p)
	fmt.Fprintf(progress, "   %d/%d Running again after %.1f s, %d job IDs changed\n", p.Done, o.Clusters, p.Seconds, changed)
	return res, nil
}

// benchCluster is deploy/samples/deployment-mode.yaml as the mutating webhook defaults it
// (this control plane has no webhook configurations: the section measures the controller).
func benchCluster() (*v1beta1.FlinkCluster, error) {
	raw, err := deploy.Sample("deployment-mode.yaml")
	if err != nil {
		return nil, err
	}
	fc := &v1beta1.FlinkCluster{}
	if err := yaml.Unmarshal(raw, fc); err != nil {
		return nil, err
	}
	fc.Namespace = controllerNamespace
	policy.Default(fc)
	return fc, nil
}

// describeWaiting writes what the first clusters a phase still waited for at its end say
// of their job, so that a phase that ran out of time says why.
func describeWaiting(w io.Writer, waiting []v1beta1.FlinkCluster) {
	for i, fc := range waiting {
		if i == 10 {
			fmt.Fprintf(w, "   ... and %d more\n", len(waiting)-i)
			return
		}
		job := "no job status"
		if j := fc.Status.Components.Job; j != nil {
			job = fmt.Sprintf("job %q %s", j.ID, j.State)
		}
		var conds []string
		for _, c := range fc.Status.Conditions {
			if c.Status == metav1.ConditionTrue {
				conds = append(conds, c.Type+"/"+c.Reason)
			}
		}
		fmt.Fprintf(w, "   still waiting: %s: %s, state %s, true: %s\n", fc.Name, job, fc.Status.State, strings.Join(conds, ", "))
	}
}

func jobRunning(fc *v1beta1.FlinkCluster) bool {
	j := fc.Status.Components.Job
	return j != nil && j.ID != "" && j.State == v1beta1.JobStateRunning
}

// waitJobs polls every cluster until ready holds for all of them or wait runs out, and
// returns how many it held for, how many changed (by changedFn) and the clusters it did not
// hold for, at the end (those of the last round the deadline let it read). With old
// set, ready is given the names of the cluster's Running JobManager pods not in old.
func waitJobs(ctx context.Context, cl client.Client, wait time.Duration,
	ready func(fc *v1beta1.FlinkCluster, newPods map[string]bool) bool, changedFn func(*v1beta1.FlinkCluster) bool, old ...map[types.UID]bool) (done, changed int, waiting []v1beta1.FlinkCluster, err error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		// At the deadline a list fails: the figures are then those of the last round.
		var list v1beta1.FlinkClusterList
		if err := cl.List(ctx, &list, client.InNamespace(controllerNamespace)); err != nil {
			if ctx.Err() != nil {
				return done, changed, waiting, nil
			}
			return 0, 0, nil, err
		}
		running := map[string]map[string]bool{}
		if len(old) > 0 {
			var pods corev1.PodList
			if err := cl.List(ctx, &pods, client.InNamespace(controllerNamespace), client.MatchingLabels{resources.LabelComponent: resources.ComponentJobManager}); err != nil {
				if ctx.Err() != nil {
					return done, changed, waiting, nil
				}
				return 0, 0, nil, err
			}
			for _, pod := range pods.Items {
				if !old[0][pod.UID] && pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning {
					cluster := pod.Labels[resources.LabelCluster]
					if running[cluster] == nil {
						running[cluster] = map[string]bool{}
					}
					running[cluster][pod.Name] = true
				}
			}
		}
		done, changed, waiting = 0, 0, nil
		for i := range list.Items {
			if ready(&list.Items[i], running[list.Items[i].Name]) {
				done++
			} else {
				waiting = append(waiting, list.Items[i])
			}
			if changedFn != nil && changedFn(&list.Items[i]) {
				changed++
			}
		}
		if done == len(list.Items) && done > 0 {
			return done, changed, nil, nil
		}
		select {
		case <-ctx.Done():
			return done, changed, waiting, nil
		case <-tick.C:
		}
	}
}

// phaseMeter reads the server's reconciles, CPU time and memory around a phase.
type phaseMeter struct {
	srv        *ServeProcess
	clusters   int
	start      time.Time
	reconciles float64
	cpu        float64
}

func (m *phaseMeter) begin(ctx context.Context) error {
	n, err := m.srv.Counter(ctx, "controller_runtime_reconcile_total", map[string]string{"controller": controller.ControllerName})
	if err != nil {
		n = 0 // no reconcile yet: the counter is not exported before the first
	}
	cpu, err := ProcessCPUSeconds(m.srv.Pid())
	if err != nil {
		return err
	}
	m.start, m.reconciles, m.cpu = time.Now(), n, cpu
	return nil
}

func (m *phaseMeter) end(ctx context.Context, name string, done int) (ControllerPhase, error) {
	elapsed := time.Since(m.start)
	n, err := m.srv.Counter(ctx, "controller_runtime_reconcile_total", map[string]string{"controller": controller.ControllerName})
	if err != nil {
		return ControllerPhase{}, err
	}
	cpu, err := ProcessCPUSeconds(m.srv.Pid())
	if err != nil {
		return ControllerPhase{}, err
	}
	mem, err := ReadMemory(m.srv.Pid())
	if err != nil {
		return ControllerPhase{}, err
	}
	return ControllerPhase{
		Name: name, Seconds: elapsed.Seconds(), Done: done,
		ReconcilesPerCluster: (n - m.reconciles) / float64(m.clusters),
		CPUSeconds:           cpu - m.cpu, RSSKiB: mem.RSS, PeakKiB: mem.Peak,
	}, nil
}

// ProcessCPUSeconds is a process's user and system CPU time, from /proc/<pid>/stat.
func ProcessCPUSeconds(pid int) (float64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	s := string(raw)
	// pid (comm) state ...: comm may hold spaces; utime and stime are fields 14 and 15.
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	// Linux reports clock ticks of USER_HZ, 100 per second on every architecture Go runs on.
	return (utime + stime) / 100, nil
}

// parallel runs fn(0..n-1) on workers goroutines and returns the first error.
func parallel(n, workers int, fn func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// flinkProxy is an HTTP proxy on loopback that serves each request for a cluster's
// JobManager Service (http://<cluster>-jobmanager.<namespace>.svc:<port>/...) with that
// cluster's simulated Flink, in this process.
type flinkProxy struct {
	URL string
	srv *http.Server
	ln  net.Listener
	cl  client.Client
	sim *devenv.Simulation
	// clusters caches the FlinkClusters by namespace/name: the proxy must not add an API
	// request to each REST call it serves.
	clusters sync.Map
}

func startFlinkProxy(cl client.Client, sim *devenv.Simulation) (*flinkProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &flinkProxy{URL: "http://" + ln.Addr().String(), ln: ln, cl: cl, sim: sim}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// ServeHTTP implements http.Handler.
func (p *flinkProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.URL.Hostname() // a proxied request carries the absolute URL
	name, rest, ok := strings.Cut(host, "-jobmanager.")
	ns, _, ok2 := strings.Cut(rest, ".svc")
	if !ok || !ok2 {
		http.Error(w, "not a JobManager Service: "+host, http.StatusBadGateway)
		return
	}
	key := client.ObjectKey{Namespace: ns, Name: name}
	cached, ok := p.clusters.Load(key)
	if !ok {
		fc := &v1beta1.FlinkCluster{}
		if err := p.cl.Get(r.Context(), key, fc); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		cached, _ = p.clusters.LoadOrStore(key, fc)
	}
	c := p.sim.Cluster(cached.(*v1beta1.FlinkCluster))
	out, err := http.NewRequestWithContext(r.Context(), r.Method, c.URL()+r.URL.RequestURI(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	resp, err := c.HTTPClient().Do(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// Close stops the proxy.
func (p *flinkProxy) Close() { _ = p.srv.Close() }
