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
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/shard"
	"github.com/flink-admission/flink-admission/deploy"
	"github.com/flink-admission/flink-admission/internal/devenv"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/policy"
)

// controllerNamespace holds the clusters of the controller section.
const controllerNamespace = "bench-controller"

// podsPerNode is how many pods the section puts on one KWOK node (a node takes 110, as a
// kubelet's default).
const podsPerNode = 100

// nodesFor is how many KWOK nodes the section starts for clusters copies of sample: room for
// each cluster's TaskManager pods (the control plane's StatefulSet controller runs them) and
// two JobManager pods (an update starts the next one while the old one ends), so that no
// JobManager pod waits for room.
func nodesFor(sample *v1beta1.FlinkCluster, clusters int) int {
	perCluster := 2 + int(ptr.Deref(sample.Spec.TaskManager.Replicas, 0))
	return (clusters*perCluster+podsPerNode-1)/podsPerNode + 1
}

// createWorkers is how many creates the section sends at once, to the floor's Deployments
// and to the clusters alike.
const createWorkers = 32

// ControllerOptions configure RunController.
type ControllerOptions struct {
	// Binary is the flink-admission executable (the image's build: serve).
	Binary string
	// Clusters is how many Deployment-mode FlinkClusters are created at once.
	Clusters int
	// Replicas is how many `serve` processes run against the control plane (0 means 1); with
	// more than one they share the fleet through shard Leases (--shard-fleet), as the
	// installs do.
	Replicas int
	// Workers, when positive, is each replica's --controller-workers (its default otherwise).
	Workers int
	// Wait bounds each phase.
	Wait time.Duration
	// SteadyWindow is the quiet window after the phases in which the steady-state costs are
	// measured. It spans at least one --flink-steady-poll-interval (the replicas run with the
	// defaults), so that every running cluster is polled in it: a shorter one can fall between
	// two polls.
	SteadyWindow time.Duration
	// LogDir receives the control plane's and the server's logs.
	LogDir string
	// ProfileSeconds, when positive, records the API server's CPU profile over the first
	// ProfileSeconds of the Flink floor and of the create phase, under LogDir
	// (apiserver-cpu-flinkfloor.pprof, apiserver-cpu-create.pprof): where the two differ.
	ProfileSeconds int
	// Progress receives what the run is doing.
	Progress io.Writer
}

// ControllerResult is the controller section (section 6): the controller, the real
// `flink-admission serve`, on the real control plane with simulated Flink.
type ControllerResult struct {
	// Clusters, Replicas and Nodes size the run.
	Clusters int `json:"clusters"`
	Replicas int `json:"replicas"`
	Nodes    int `json:"nodes"`
	// Workers is each replica's --controller-workers.
	Workers int `json:"workers"`
	// Phases are the create, the delete-every-JobManager-pod and (with more than one
	// replica) the update-with-the-leader-killed phases, in order.
	Phases []ControllerPhase `json:"phases"`
	// Skipped says which phases did not run, and why.
	Skipped []string `json:"skipped,omitempty"`
	// Steady is the cost of the quiet window after the phases.
	Steady *ControllerSteady `json:"steady,omitempty"`
}

// ControllerPhase is one phase of the controller section.
type ControllerPhase struct {
	// Name says what happened at once to every cluster.
	Name string `json:"name"`
	// Seconds is the time from the phase's start until every job was Running (with its job
	// ID kept, after a pod delete; on its new revision, after an update); Done how many were
	// by then (Clusters unless Wait ran out).
	Seconds float64 `json:"seconds"`
	Done    int     `json:"done"`
	// IDsChanged counts, after a pod delete, clusters whose job ID changed (a job
	// resubmitted, not recovered). An update's redeploy gives every job a new ID by design:
	// there it counts clusters whose simulated Flink started the job by submission more than
	// once in the phase, or recorded a violation (a job run again after it ended, or by two
	// JobManagers at once): a job run twice. A lost job shows as Done < Clusters.
	IDsChanged int `json:"idsChanged"`
	// FloorSeconds (create phase only) is the control plane's own time for the same
	// JobManager Deployments created directly, with no controller, until every pod ran;
	// FloorDone how many pods ran by then.
	FloorSeconds float64 `json:"floorSeconds,omitempty"`
	FloorDone    int     `json:"floorDone,omitempty"`
	// FloorMachineCPUSeconds is the machine's CPU time during the floor (MachineCPUSeconds),
	// FloorClusterIPAllocationSeconds the floor's ClusterIPAllocationSeconds.
	FloorMachineCPUSeconds          float64 `json:"floorMachineCPUSeconds,omitempty"`
	FloorClusterIPAllocationSeconds float64 `json:"floorClusterIPAllocationSeconds,omitempty"`
	// FloorPlane is what the control plane spent during the floor.
	FloorPlane *PlaneUsage `json:"floorPlane,omitempty"`
	// FlinkFloor (create phase only) is the same phase without the controller.
	FlinkFloor *FlinkFloor `json:"flinkFloor,omitempty"`
	// Killed (update phase only) is the replica stopped with SIGKILL mid-way: its clusters
	// go to the others once its shard Lease expires.
	Killed string `json:"killed,omitempty"`
	// Reconciles is the controller's reconcile count during the phase, per cluster, over
	// every replica.
	ReconcilesPerCluster float64 `json:"reconcilesPerCluster"`
	// CPUSeconds is the servers' user+system CPU time during the phase, summed over the
	// replicas (a killed one's up to its kill).
	CPUSeconds float64 `json:"cpuSeconds"`
	// MachineCPUSeconds is every process's CPU time during the phase: the control plane's,
	// the replicas' and SimulatedFlinkCPUSeconds, the bench process's (the simulated Flink
	// and its proxy, which a real fleet runs elsewhere, and the bench's watch). The machine's
	// two cores bound it at twice Seconds.
	MachineCPUSeconds        float64 `json:"machineCPUSeconds"`
	SimulatedFlinkCPUSeconds float64 `json:"simulatedFlinkCPUSeconds"`
	// ClusterIPAllocations counts the API server's Service ClusterIP allocations during the
	// phase, ClusterIPAllocationSeconds their total time: it allocates one at a time
	// (clusterIPAllocatorMetric), so a phase that creates Services takes at least as long.
	ClusterIPAllocations       int     `json:"clusterIPAllocations"`
	ClusterIPAllocationSeconds float64 `json:"clusterIPAllocationSeconds"`
	// Plane is what the control plane spent during the phase.
	Plane PlaneUsage `json:"plane"`
	// RequestAttribution is whose those API requests were (the audit log's).
	RequestAttribution
	// FloorRequests (create phase only) is whose the floor's API requests were: the
	// bench's creates and the control plane's work, no controller.
	FloorRequests *RequestAttribution `json:"floorRequests,omitempty"`
	// RSSKiB and PeakKiB are the resident set at the phase's end and the peak, of the live
	// replica with the largest peak.
	RSSKiB  uint64 `json:"rssKiB"`
	PeakKiB uint64 `json:"peakKiB"`
}

// RunController measures the controller on the real control plane (kube-apiserver, etcd,
// kube-controller-manager, kube-scheduler, KWOK nodes) with simulated Flink. First the
// control plane's floor: the clusters' JobManager Deployments created directly, the time
// until every pod runs. Then o.Clusters Deployment-mode clusters created at once, the time
// until every job is Running; every JobManager pod deleted at once, the time until every
// job runs again, on a new pod, with its job ID kept; with several replicas, every cluster
// updated (a redeploy through stop-with-savepoint) and one replica killed once half of them
// started, the time until every job runs its new revision; and a quiet window's CPU and Flink
// calls per cluster. The controller is `flink-admission serve` as shipped, in its own
// processes (their CPU and memory are their own); the simulated Flink runs in this process
// and answers the controller's REST calls through an HTTP proxy on loopback (HTTP_PROXY),
// since serve calls each cluster's JobManager Service by its cluster DNS name.
func RunController(ctx context.Context, o ControllerOptions) (*ControllerResult, error) {
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.Clusters < 1 || o.Replicas < 1 {
		return nil, fmt.Errorf("the controller section needs at least one cluster and one replica, not %d and %d", o.Clusters, o.Replicas)
	}
	if o.SteadyWindow < controller.DefaultSteadyPollInterval {
		return nil, fmt.Errorf("the steady window (%s) is shorter than the controller's steady poll interval (%s): it can fall between two polls", o.SteadyWindow, controller.DefaultSteadyPollInterval)
	}
	sample, err := benchCluster()
	if err != nil {
		return nil, err
	}
	nodes := nodesFor(sample, o.Clusters)
	workers := o.Workers
	if workers == 0 {
		workers = controller.DefaultMaxConcurrentReconciles
	}
	fmt.Fprintf(progress, "== 6. the controller on the real control plane: %d clusters, %d replicas of %d workers, %d KWOK nodes\n", o.Clusters, o.Replicas, workers, nodes)
	audit := auditLog{path: filepath.Join(o.LogDir, "controlplane", "audit.log")}
	flags, err := auditFlags(audit.path)
	if err != nil {
		return nil, err
	}
	cp, err := testenv.StartControlPlane(testenv.ControlPlaneOptions{Nodes: nodes, LogDir: filepath.Join(o.LogDir, "controlplane"),
		Options: testenv.Options{APIServerFlags: flags}})
	if err != nil {
		return nil, err
	}
	defer func() { _ = cp.Stop() }()
	// The replicas and the simulated Flink as users of their own, which the audit log names.
	controllerKubeconfig, err := writeUserKubeconfig(cp.Env, controllerUser, filepath.Join(o.LogDir, "controller-kubeconfig"))
	if err != nil {
		return nil, err
	}
	simUser, err := cp.Environment.AddUser(envtest.User{Name: simulatedFlinkUser, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, err
	}

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
	// The bench watches what it waits for: listing every cluster and pod from the API server
	// four times a second would load the plane it measures.
	watch, err := cache.New(&cfg, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{floorNamespace: {}, flinkFloorNamespace: {}, controllerNamespace: {}}})
	if err != nil {
		return nil, err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	watchDone := make(chan error, 1)
	go func() { watchDone <- watch.Start(watchCtx) }()
	defer func() { stopWatch(); <-watchDone }()

	cs, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		return nil, err
	}
	apiserver := cs.CoreV1().RESTClient()
	// The floor, before the simulated Flink and the controller run: the plane alone.
	fl, err := measureFloor(ctx, cl, watch, apiserver, audit, sample, o.Clusters, o.Wait, nil)
	if err != nil {
		return nil, fmt.Errorf("the control plane's floor: %w", err)
	}
	fmt.Fprintf(progress, "   floor: %d/%d JobManager pods of the clusters' objects, created directly, running after %.1f s (the machine's CPU %.1f s, %s; %.1f s of ClusterIP allocations; %.1f API requests per cluster)\n",
		fl.ready, o.Clusters, fl.seconds, fl.cpuSeconds, componentCPU(fl.plane), fl.allocSeconds, fl.plane.APIRequestsPerCluster)
	fmt.Fprintf(progress, "   the floor's API requests per cluster: %s\n", clientRequests(fl.requests))

	simCfg := rest.CopyConfig(simUser.Config())
	simCfg.QPS, simCfg.Burst = -1, 0
	sim, err := devenv.NewSimulation(simCfg, logr.Discard())
	if err != nil {
		return nil, err
	}
	simCtx, stopSim := context.WithCancel(ctx)
	simDone := make(chan error, 1)
	go func() { simDone <- sim.Start(simCtx) }()
	defer func() { stopSim(); <-simDone }()

	// The Flink floor: the create phase without the controller.
	floorProfile := profileAPIServer(ctx, apiserver, o, "flinkfloor")
	ff, err := measureFloor(ctx, cl, watch, apiserver, audit, sample, o.Clusters, o.Wait, sim)
	if perr := floorProfile(); perr != nil {
		fmt.Fprintln(progress, perr)
	}
	if err != nil {
		return nil, fmt.Errorf("the Flink floor: %w", err)
	}
	flinkFloor := &FlinkFloor{Seconds: ff.seconds, Done: ff.ready, MachineCPUSeconds: ff.cpuSeconds, ClusterIPAllocationSeconds: ff.allocSeconds, Plane: ff.plane, Requests: ff.requests}
	fmt.Fprintf(progress, "   without the controller: %d/%d jobs of the same FlinkClusters, their objects created directly, running on the simulated Flink after %.1f s (the machine's CPU %.1f s, %s; %.1f s of ClusterIP allocations; %.1f API requests per cluster: %s)\n",
		ff.ready, o.Clusters, ff.seconds, ff.cpuSeconds, componentCPU(ff.plane), ff.allocSeconds, ff.plane.APIRequestsPerCluster, clientRequests(ff.requests))

	proxy, err := startFlinkProxy(cl, sim)
	if err != nil {
		return nil, err
	}
	defer proxy.Close()

	replicas, err := startReplicas(ctx, o, controllerKubeconfig, proxy.URL)
	for _, srv := range replicas {
		defer func() { _ = srv.Stop() }()
	}
	if err != nil {
		return nil, err
	}
	if _, err := waitMembers(ctx, cl, replicas, o.Wait); err != nil {
		return nil, err
	}

	res := &ControllerResult{Clusters: o.Clusters, Replicas: o.Replicas, Nodes: nodes, Workers: workers}
	m := newPhaseMeter(replicas, o.Clusters, apiserver, audit)

	// Phase 1: every cluster created at once.
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	createProfile := profileAPIServer(ctx, apiserver, o, "create")
	if err := parallel(o.Clusters, createWorkers, func(i int) error {
		fc := sample.DeepCopy()
		fc.Name = clusterName(i)
		return cl.Create(ctx, fc)
	}); err != nil {
		return nil, fmt.Errorf("creating the clusters: %w", err)
	}
	done, _, waiting, err := waitJobs(ctx, watch, o.Wait, 0, func(fc *v1beta1.FlinkCluster, _ map[string]bool) bool {
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
	if perr := createProfile(); perr != nil {
		fmt.Fprintln(progress, perr)
	}
	p.FloorSeconds, p.FloorDone, p.FloorMachineCPUSeconds, p.FloorClusterIPAllocationSeconds = fl.seconds, fl.ready, fl.cpuSeconds, fl.allocSeconds
	p.FloorPlane, p.FloorRequests, p.FlinkFloor = &fl.plane, &fl.requests, flinkFloor
	res.Phases = append(res.Phases, p)
	fmt.Fprintf(progress, "   %d/%d Running after %.1f s (floor %.1f s); the machine's CPU %.1f s, the replicas' %.1f s, the simulated Flink's %.1f s, %s; %.1f s of ClusterIP allocations; %.1f API requests per cluster (%s)\n",
		p.Done, o.Clusters, p.Seconds, fl.seconds, p.MachineCPUSeconds, p.CPUSeconds, p.SimulatedFlinkCPUSeconds, componentCPU(p.Plane),
		p.ClusterIPAllocationSeconds, p.Plane.APIRequestsPerCluster, strings.Join(p.Plane.topKinds(6), ", "))
	describeRequests(progress, p.RequestAttribution)
	fmt.Fprintf(progress, "   kube-apiserver's and etcd's CPU: ×%.2f of the control plane's floor, ×%.2f of the same without the controller\n", apiServerCPURatio(p.Plane, fl.plane), apiServerCPURatio(p.Plane, ff.plane))

	// Phase 2: every JobManager pod deleted at once.
	ids, err := jobIDs(ctx, cl)
	if err != nil {
		return nil, err
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
	// One delete per pod, createWorkers at once: a delete-collection of a thousand pods
	// outlasts the API server's 60 s request timeout on 2 cores.
	if err := parallel(len(pods.Items), createWorkers, func(i int) error {
		return client.IgnoreNotFound(cl.Delete(ctx, &pods.Items[i]))
	}); err != nil {
		return nil, err
	}
	// Running again means: the controller reports the job Running with its ID, and Flink's
	// leader, the one that runs it, is the process of a new pod (until the old pods end
	// after their preStop delay, the old leaders still run the jobs).
	done, changed, waiting, err := waitJobs(ctx, watch, o.Wait, 0, func(fc *v1beta1.FlinkCluster, newPods map[string]bool) bool {
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
	describeRequests(progress, p.RequestAttribution)

	// Phase 3: every cluster updated, one replica killed mid-way.
	if o.Replicas < 2 {
		skip := "update every cluster and kill a replica mid-way: needs 2 or more replicas (BENCH_REPLICAS)"
		res.Skipped = append(res.Skipped, skip)
		fmt.Fprintf(progress, "   skipped: %s\n", skip)
	} else {
		p, err := updateKillingLeader(ctx, cl, watch, sim, m, o, progress)
		if err != nil {
			return nil, err
		}
		res.Phases = append(res.Phases, p)
	}

	steady, err := measureSteady(ctx, cl, m, proxy, o)
	if err != nil {
		return nil, err
	}
	res.Steady = steady
	fmt.Fprintf(progress, "   steady, %.0f s with %d/%d Running on %d replica(s), from %.0f s after the last phase (its rollouts' end): %.4f CPU s, %.2f Flink calls and %.3f of the controller's API requests per cluster per minute, %.3f without its shard Leases' %.0f a minute (%s)\n",
		steady.Seconds, steady.Running, o.Clusters, steady.Replicas, steady.RolloutsSettledSeconds, steady.CPUSecondsPerClusterMinute, steady.FlinkCallsPerClusterMinute,
		steady.ControllerRequestsPerClusterMinute, steady.ControllerClusterRequestsPerClusterMinute, steady.ControllerLeaseRequestsPerMinute,
		strings.Join(PlaneUsage{APIRequestsByKind: steady.ControllerRequestsByKind}.topKinds(6), ", "))
	return res, nil
}

// startReplicas starts o.Replicas `serve` processes with the controller on, each with its
// own ports, certificate and log; with more than one, they share the fleet (--shard-fleet)
// with their Leases in the clusters' namespace. It returns those it started, also on an error.
func startReplicas(ctx context.Context, o ControllerOptions, kubeconfig, proxyURL string) ([]*ServeProcess, error) {
	var out []*ServeProcess
	for i := range o.Replicas {
		certDir := filepath.Join(o.LogDir, fmt.Sprintf("controller-certs-%d", i))
		if err := os.MkdirAll(certDir, 0o700); err != nil {
			return out, err
		}
		cert, err := WriteServingCert(certDir)
		if err != nil {
			return out, err
		}
		logFile, err := os.Create(filepath.Join(o.LogDir, fmt.Sprintf("serve-controlplane-%d.log", i)))
		if err != nil {
			return out, err
		}
		// The child holds its own descriptor: this one can close at once.
		defer logFile.Close()
		so := ServeOptions{
			Binary: o.Binary, Kubeconfig: kubeconfig, Cert: cert, Controller: true, Log: logFile,
			// The Flink REST calls (to <cluster>-jobmanager.<namespace>.svc) go to the proxy;
			// the API server's address is loopback, which Go never proxies.
			Env: []string{"HTTP_PROXY=" + proxyURL, "http_proxy=" + proxyURL, "NO_PROXY=", "no_proxy="},
		}
		if o.Workers > 0 {
			so.Args = []string{"--controller-workers=" + strconv.Itoa(o.Workers)}
		}
		if o.Replicas > 1 {
			// As the manifests run more than one replica: they share the fleet.
			so.LeaderElectNamespace, so.ShardFleet = controllerNamespace, true
		}
		srv, err := StartServe(ctx, so, 2*time.Minute)
		if err != nil {
			return out, fmt.Errorf("starting replica %d: %w", i, err)
		}
		out = append(out, srv)
	}
	return out, nil
}

// waitMembers waits up to timeout until every live replica holds its shard Lease and may act
// on its share (a lease duration after it joined; a single replica runs every cluster at
// once), and returns the index of the first live replica: the one the update phase stops.
func waitMembers(ctx context.Context, cl client.Client, replicas []*ServeProcess, timeout time.Duration) (int, error) {
	first, live := -1, 0
	for i, srv := range replicas {
		if !srv.Exited() {
			live++
			if first < 0 {
				first = i
			}
		}
	}
	if len(replicas) == 1 {
		return first, nil
	}
	// A member acts a lease duration after it joined (controller/shard): until then a phase
	// would time the replicas' start, not their work.
	acting := shard.DefaultTiming.LeaseDuration + shard.DefaultTiming.RenewPeriod
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var leases coordinationv1.LeaseList
		if err := cl.List(ctx, &leases, client.InNamespace(controllerNamespace), client.HasLabels{shard.GroupLabel}); err != nil || len(leases.Items) < live {
			return false, nil
		}
		for _, l := range leases.Items {
			if l.Spec.AcquireTime == nil || time.Since(l.Spec.AcquireTime.Time) < acting {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return -1, fmt.Errorf("not every one of %d replicas holds its shard Lease and acts after %s: %w", live, timeout, err)
	}
	return first, nil
}

// jobIDs are the clusters' job IDs by cluster name.
func jobIDs(ctx context.Context, cl client.Client) (map[string]string, error) {
	var list v1beta1.FlinkClusterList
	if err := cl.List(ctx, &list, client.InNamespace(controllerNamespace)); err != nil {
		return nil, err
	}
	ids := map[string]string{}
	for _, fc := range list.Items {
		if j := fc.Status.Components.Job; j != nil {
			ids[fc.Name] = j.ID
		}
	}
	return ids, nil
}

// updateArgs are the job arguments the update phase sets: a change of the spec's revision
// that Flink must redeploy the job for (stop-with-savepoint, then a new deploy from it).
var updateArgs = []string{"--bench-update"}

// updateKillingLeader updates every cluster at once (through cl; it waits on watch), kills
// the leading replica (SIGKILL) once half of the clusters started their update, and waits
// until every job runs its new revision under a new job ID.
func updateKillingLeader(ctx context.Context, cl client.Client, watch client.Reader, sim *devenv.Simulation, m *phaseMeter, o ControllerOptions, progress io.Writer) (ControllerPhase, error) {
	var list v1beta1.FlinkClusterList
	if err := cl.List(ctx, &list, client.InNamespace(controllerNamespace)); err != nil {
		return ControllerPhase{}, err
	}
	ids := map[string]string{}
	want := map[string]string{}
	for i := range list.Items {
		fc := &list.Items[i]
		if j := fc.Status.Components.Job; j != nil {
			ids[fc.Name] = j.ID
		}
		next := fc.DeepCopy()
		next.Spec.Job.Args = updateArgs
		rev, err := resources.Revision(next)
		if err != nil {
			return ControllerPhase{}, err
		}
		want[fc.Name] = rev
	}
	if err := m.begin(ctx); err != nil {
		return ControllerPhase{}, err
	}
	start := time.Now()
	if err := parallel(len(list.Items), createWorkers, func(i int) error {
		fc := &list.Items[i]
		patch := client.MergeFrom(fc.DeepCopy())
		fc.Spec.Job.Args = updateArgs
		return cl.Patch(ctx, fc, patch)
	}); err != nil {
		return ControllerPhase{}, fmt.Errorf("updating the clusters: %w", err)
	}

	// Half started: the controller names the new revision as the one being rolled out.
	half := (o.Clusters + 1) / 2
	started, _, _, err := waitJobs(ctx, watch, o.Wait, half, func(fc *v1beta1.FlinkCluster, _ map[string]bool) bool {
		return fc.Status.Revision.NextRevision == want[fc.Name] || fc.Status.Revision.CurrentRevision == want[fc.Name]
	}, nil)
	if err != nil {
		return ControllerPhase{}, err
	}
	victim, err := waitMembers(ctx, cl, m.replicas, o.Wait)
	if err != nil {
		return ControllerPhase{}, err
	}
	if err := m.sample(ctx, victim); err != nil {
		return ControllerPhase{}, err
	}
	m.replicas[victim].Kill()
	killed := fmt.Sprintf("replica %d of %d sharing the fleet", victim, len(m.replicas))
	fmt.Fprintf(progress, "   %d/%d clusters started their update after %.1f s: killed %s\n", started, o.Clusters, time.Since(start).Seconds(), killed)

	done, _, waiting, err := waitJobs(ctx, watch, o.Wait, 0, func(fc *v1beta1.FlinkCluster, _ map[string]bool) bool {
		return jobRunning(fc) && fc.Status.Revision.CurrentRevision == want[fc.Name] && fc.Status.Components.Job.ID != ids[fc.Name]
	}, nil)
	if err != nil {
		return ControllerPhase{}, err
	}
	describeWaiting(progress, waiting)
	p, err := m.end(ctx, "update every cluster (a redeploy from a savepoint), SIGKILL one replica once half started; until every job runs its new revision", done)
	if err != nil {
		return ControllerPhase{}, err
	}
	p.Killed = killed
	if err := cl.List(ctx, &list, client.InNamespace(controllerNamespace)); err != nil {
		return ControllerPhase{}, err
	}
	for i := range list.Items {
		if ranTwice(sim.Cluster(&list.Items[i]), start) {
			p.IDsChanged++
		}
	}
	fmt.Fprintf(progress, "   %d/%d on their new revision after %.1f s, %d jobs run twice\n", p.Done, o.Clusters, p.Seconds, p.IDsChanged)
	describeRequests(progress, p.RequestAttribution)
	return p, nil
}

// ranTwice reports whether a simulated Flink cluster started its job by submission more
// than once since start, or recorded a violation (a job run again after it ended, or run by
// two JobManagers at once). Recoveries from HA are not submissions.
func ranTwice(c *fakeflink.Cluster, start time.Time) bool {
	if len(c.Violations()) > 0 {
		return true
	}
	submitted := 0
	for _, e := range c.Executions() {
		// The simulated clock follows the real one in steps of 100 ms.
		if !e.Recovered && !e.Start.Before(start.Add(-time.Second)) {
			submitted++
		}
	}
	return submitted > 1
}

// measureSteady measures the live replicas' CPU time and the Flink REST calls over a quiet
// window of o.SteadyWindow.
func measureSteady(ctx context.Context, cl client.Client, m *phaseMeter, proxy *flinkProxy, o ControllerOptions) (*ControllerSteady, error) {
	running := func() (int, error) {
		var list v1beta1.FlinkClusterList
		if err := cl.List(ctx, &list, client.InNamespace(controllerNamespace)); err != nil {
			return 0, err
		}
		n := 0
		for i := range list.Items {
			if jobRunning(&list.Items[i]) {
				n++
			}
		}
		return n, nil
	}
	before, err := running()
	if err != nil {
		return nil, err
	}
	// The update's TaskManager rollouts outlast its jobs' restart: the window starts once no
	// workload changes, so that it measures a quiet fleet rather than their tail.
	settled, err := waitRolledOut(ctx, cl, o.Wait)
	if err != nil {
		return nil, err
	}
	if err := m.begin(ctx); err != nil {
		return nil, err
	}
	calls := proxy.calls.snapshot()
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(o.SteadyWindow):
	}
	p, err := m.end(ctx, "steady", 0)
	if err != nil {
		return nil, err
	}
	after, err := running()
	if err != nil {
		return nil, err
	}
	s := steadyFigures(o.Clusters, m.live(), min(before, after), p.Seconds, p.CPUSeconds, callsSince(calls, proxy.calls.snapshot()))
	s.RolloutsSettledSeconds = settled.Seconds()
	// Every kind of the controller's requests: in a quiet window each is one to look at.
	s.setRequests(m.requests.attribute(o.Clusters, 0), o.Clusters, p.Seconds)
	return &s, nil
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

// waitRolledOut waits until every Deployment and StatefulSet of the bench's namespace has
// rolled out (each replica updated and ready), at most timeout, and returns how long it took.
func waitRolledOut(ctx context.Context, cl client.Client, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		var deps appsv1.DeploymentList
		if err := cl.List(ctx, &deps, client.InNamespace(controllerNamespace)); err != nil {
			return false, err
		}
		for _, d := range deps.Items {
			want := ptr.Deref(d.Spec.Replicas, 1)
			if d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != want || d.Status.ReadyReplicas != want || d.Status.Replicas != want {
				return false, nil
			}
		}
		var sets appsv1.StatefulSetList
		if err := cl.List(ctx, &sets, client.InNamespace(controllerNamespace)); err != nil {
			return false, err
		}
		for _, s := range sets.Items {
			want := ptr.Deref(s.Spec.Replicas, 1)
			if s.Status.ObservedGeneration < s.Generation || s.Status.CurrentRevision != s.Status.UpdateRevision || s.Status.ReadyReplicas != want || s.Status.Replicas != want {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return time.Since(start), fmt.Errorf("waiting for the workloads to roll out (at most %s): %w", timeout, err)
	}
	return time.Since(start), nil
}

func jobRunning(fc *v1beta1.FlinkCluster) bool {
	j := fc.Status.Components.Job
	return j != nil && j.ID != "" && j.State == v1beta1.JobStateRunning
}

// waitJobs polls every cluster until ready holds for need of them (all, with need 0) or
// wait runs out, and returns how many it held for, how many changed (by changedFn) and the clusters it did not
// hold for, at the end (those of the last round the deadline let it read). With old
// set, ready is given the names of the cluster's Running JobManager pods not in old.
func waitJobs(ctx context.Context, r client.Reader, wait time.Duration, need int,
	ready func(fc *v1beta1.FlinkCluster, newPods map[string]bool) bool, changedFn func(*v1beta1.FlinkCluster) bool, old ...map[types.UID]bool) (done, changed int, waiting []v1beta1.FlinkCluster, err error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		// At the deadline a list fails: the figures are then those of the last round.
		var list v1beta1.FlinkClusterList
		if err := r.List(ctx, &list, client.InNamespace(controllerNamespace)); err != nil {
			if ctx.Err() != nil {
				return done, changed, waiting, nil
			}
			return 0, 0, nil, err
		}
		running := map[string]map[string]bool{}
		if len(old) > 0 {
			var pods corev1.PodList
			if err := r.List(ctx, &pods, client.InNamespace(controllerNamespace), client.MatchingLabels{resources.LabelComponent: resources.ComponentJobManager}); err != nil {
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
		if done > 0 && (done == len(list.Items) || need > 0 && done >= need) {
			return done, changed, nil, nil
		}
		select {
		case <-ctx.Done():
			return done, changed, waiting, nil
		case <-tick.C:
		}
	}
}

// phaseMeter reads the replicas' reconciles, CPU time and memory around a phase.
type phaseMeter struct {
	replicas []*ServeProcess
	clusters int
	start    time.Time
	// begun are the replicas' readings at the phase's start; last their latest, kept for
	// a replica killed since.
	begun, last []meterReading
	// at is the phase's start's snapshot (the API server's counters read through apiserver,
	// and the position in its audit log).
	at        snapshot
	apiserver rest.Interface
	audit     auditLog
	// requests are the last phase's requests, by client and kind.
	requests auditRequests
}

type meterReading struct{ reconciles, cpu float64 }

func newPhaseMeter(replicas []*ServeProcess, clusters int, apiserver rest.Interface, audit auditLog) *phaseMeter {
	return &phaseMeter{replicas: replicas, clusters: clusters, apiserver: apiserver, audit: audit,
		begun: make([]meterReading, len(replicas)), last: make([]meterReading, len(replicas))}
}

// sample reads replica i into last; a replica that exited keeps its last reading.
func (m *phaseMeter) sample(ctx context.Context, i int) error {
	srv := m.replicas[i]
	if srv.Exited() {
		return nil
	}
	n, err := srv.Counter(ctx, "controller_runtime_reconcile_total", map[string]string{"controller": controller.ControllerName})
	if err != nil {
		return err
	}
	cpu, err := ProcessCPUSeconds(srv.Pid())
	if err != nil {
		return err
	}
	m.last[i] = meterReading{reconciles: n, cpu: cpu}
	return nil
}

// live is how many replicas run.
func (m *phaseMeter) live() int {
	n := 0
	for _, srv := range m.replicas {
		if !srv.Exited() {
			n++
		}
	}
	return n
}

func (m *phaseMeter) begin(ctx context.Context) error {
	for i := range m.replicas {
		if err := m.sample(ctx, i); err != nil {
			return err
		}
	}
	copy(m.begun, m.last)
	at, err := takeSnapshot(ctx, m.apiserver, m.audit)
	if err != nil {
		return err
	}
	m.at, m.start = at, time.Now()
	return nil
}

func (m *phaseMeter) end(ctx context.Context, name string, done int) (ControllerPhase, error) {
	elapsed := time.Since(m.start)
	now, err := takeSnapshot(ctx, m.apiserver, m.audit)
	if err != nil {
		return ControllerPhase{}, err
	}
	requests, err := m.audit.between(m.at.audit, now.audit)
	if err != nil {
		return ControllerPhase{}, fmt.Errorf("reading the API server's audit log: %w", err)
	}
	p := ControllerPhase{Name: name, Seconds: elapsed.Seconds(), Done: done,
		MachineCPUSeconds: now.cpu.machine - m.at.cpu.machine, SimulatedFlinkCPUSeconds: now.cpu.self - m.at.cpu.self,
		ClusterIPAllocations:       int(now.plane.alloc.count - m.at.plane.alloc.count),
		ClusterIPAllocationSeconds: now.plane.alloc.seconds - m.at.plane.alloc.seconds,
		Plane:                      now.plane.usageSince(m.at.plane, m.clusters),
		RequestAttribution:         requests.attribute(m.clusters, minRequestsPerCluster)}
	m.requests = requests
	var reconciles float64
	for i, srv := range m.replicas {
		if err := m.sample(ctx, i); err != nil {
			return ControllerPhase{}, err
		}
		reconciles += m.last[i].reconciles - m.begun[i].reconciles
		p.CPUSeconds += m.last[i].cpu - m.begun[i].cpu
		if srv.Exited() {
			continue
		}
		mem, err := ReadMemory(srv.Pid())
		if err != nil {
			return ControllerPhase{}, err
		}
		if mem.Peak >= p.PeakKiB {
			p.RSSKiB, p.PeakKiB = mem.RSS, mem.Peak
		}
	}
	p.ReconcilesPerCluster = reconciles / float64(m.clusters)
	return p, nil
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

// MachineCPUSeconds is the CPU time every process of the machine spent since boot (user,
// nice, system, interrupts and steal, summed over the CPUs), from /proc/stat.
func MachineCPUSeconds() (float64, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	busy := 0.0
	// user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: field %d %q: %w", i, f[i], err)
		}
		busy += v
	}
	return busy / 100, nil
}

// cpuReading is the machine's CPU time and this process's (the simulated Flink, its proxy
// and the bench's watch), at one moment.
type cpuReading struct{ machine, self float64 }

func readCPU() (cpuReading, error) {
	machine, err := MachineCPUSeconds()
	if err != nil {
		return cpuReading{}, err
	}
	self, err := ProcessCPUSeconds(os.Getpid())
	return cpuReading{machine: machine, self: self}, err
}

// snapshot is what a phase or the floor is measured between: the CPU readings, the control
// plane's counters and the end of the API server's audit log at one moment.
type snapshot struct {
	cpu   cpuReading
	plane planeReading
	audit int64
}

// takeSnapshot reads the CPU and the control plane (its API server through rc, its audit
// log from audit).
func takeSnapshot(ctx context.Context, rc rest.Interface, audit auditLog) (snapshot, error) {
	cpu, err := readCPU()
	if err != nil {
		return snapshot{}, err
	}
	plane, err := readPlane(ctx, rc)
	if err != nil {
		return snapshot{}, err
	}
	off, err := audit.offset()
	return snapshot{cpu: cpu, plane: plane, audit: off}, err
}

// writeUserKubeconfig adds a user named name (a cluster admin) to the control plane and
// writes its kubeconfig to path.
func writeUserKubeconfig(env *testenv.Env, name, path string) (string, error) {
	user, err := env.Environment.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding the user %s: %w", name, err)
	}
	raw, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, raw, 0o600)
}

// profileAPIServer starts recording the API server's CPU profile for o.ProfileSeconds into
// o.LogDir/apiserver-cpu-<name>.pprof, when o asks for one, and returns the function that
// waits for it.
func profileAPIServer(ctx context.Context, apiserver rest.Interface, o ControllerOptions, name string) (wait func() error) {
	if o.ProfileSeconds <= 0 {
		return func() error { return nil }
	}
	done := make(chan error, 1)
	go func() {
		raw, err := apiServerCPUProfile(ctx, apiserver, o.ProfileSeconds)
		if err == nil {
			err = os.WriteFile(filepath.Join(o.LogDir, "apiserver-cpu-"+name+".pprof"), raw, 0o644)
		}
		if err != nil {
			err = fmt.Errorf("profiling the API server (%s): %w", name, err)
		}
		done <- err
	}()
	return func() error { return <-done }
}

// apiServerCPUProfile records the API server's CPU profile for seconds, through rc.
func apiServerCPUProfile(ctx context.Context, rc rest.Interface, seconds int) ([]byte, error) {
	return rc.Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(seconds)).DoRaw(ctx)
}

// describeRequests writes whose a phase's API requests were.
func describeRequests(w io.Writer, a RequestAttribution) {
	fmt.Fprintf(w, "   the controller's own API requests: %.1f per cluster (%s); every client's: %s\n",
		a.ControllerRequestsPerCluster, strings.Join(a.topControllerKinds(8), ", "), clientRequests(a))
}

// clientRequests lists every client's requests per cluster, the most first: "controller
// 11.2, controlPlane 9.0, ...".
func clientRequests(a RequestAttribution) string {
	return strings.Join(PlaneUsage{APIRequestsByKind: a.RequestsPerClusterByClient}.topKinds(len(a.RequestsPerClusterByClient)), ", ")
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
	// calls counts the requests served, by kind.
	calls callCounter
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
	p.calls.count(r)
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
