package testenv

import (
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/flink-admission/flink-admission/hack"
	"github.com/flink-admission/flink-admission/internal/freeport"
)

// KWOKStages is the stage file of the simulated nodes: what a kubelet does to the Node and Pod
// objects of its node (register, start a pod, stop a deleted pod at the end of its grace
// period and delete it with grace 0, finalizers respected).
//
//go:embed kwok-stages.yaml
var KWOKStages []byte

// NodeLabel marks the Nodes a ControlPlane simulates; its value is the node's name.
const NodeLabel = "flink-admission.dev/kwok-node"

// ControlPlaneControllers are the kube-controller-manager controllers a ControlPlane runs:
// the workload controllers that own a JobManager's pods (Deployment, ReplicaSet, Job), the
// garbage collector that removes a deleted workload's dependents, the node lifecycle and
// taint eviction controllers that handle a lost node, pod garbage collection (orphaned and
// terminated pods), the namespace controller (a deleted namespace's content) and the service
// account controller (every namespace's default ServiceAccount, without which no pod is
// admitted).
var ControlPlaneControllers = []string{
	"deployment-controller",
	"statefulset-controller",
	"replicaset-controller",
	"job-controller",
	"garbage-collector-controller",
	"node-lifecycle-controller",
	"taint-eviction-controller",
	"pod-garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
}

// ControlPlaneOptions tune StartControlPlane.
type ControlPlaneOptions struct {
	// Options are those of the API server and etcd (Start).
	Options
	// Nodes is how many KWOK nodes to start, named kwok-node-0, kwok-node-1, ...; none when 0.
	Nodes int
	// NodeLeaseDuration is the node Lease duration KWOK renews (every quarter of it), as
	// the kubelet's --node-lease-duration-seconds; 40 s, the kubelet's default, when zero.
	NodeLeaseDuration time.Duration
	// NodeMonitorGracePeriod is how long kube-controller-manager waits for a node's heartbeat
	// before it marks the node unreachable and taints it; 50 s, its default, when zero.
	NodeMonitorGracePeriod time.Duration
	// LogDir receives each component's log (kube-controller-manager.log, kube-scheduler.log,
	// kwok-<node>.log); a temporary directory, removed by Stop, when empty.
	LogDir string
}

// ControlPlane is a running control plane: kube-apiserver and etcd (the embedded Env),
// kube-controller-manager, kube-scheduler and one KWOK process per simulated node. Each KWOK
// process is that node's kubelet: stopping it stops the node's heartbeats, as a node that
// lost power or its network.
type ControlPlane struct {
	*Env
	// Clientset talks to the API server as a cluster admin.
	Clientset kubernetes.Interface

	opts    ControlPlaneOptions
	bin     string
	logDir  string
	tempLog bool

	mu    sync.Mutex
	procs map[string]*component
	// nodes numbers the nodes in the order they were added, for their pod CIDRs.
	nodes map[string]int
}

type component struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
}

// ControlPlaneAssetsDir returns the directory holding kube-controller-manager, kube-scheduler
// and kwok: $FLINK_ADMISSION_CONTROL_PLANE when set, otherwise the output of
// `hack/envtest-binaries.sh --control-plane` (embedded), which builds them on first use.
func ControlPlaneAssetsDir() (string, error) {
	if dir := os.Getenv("FLINK_ADMISSION_CONTROL_PLANE"); dir != "" {
		return dir, nil
	}
	cmd := exec.Command("bash", "-c", hack.EnvtestBinariesScript, "envtest-binaries.sh", "--control-plane")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building kube-controller-manager, kube-scheduler and kwok with hack/envtest-binaries.sh --control-plane "+
			"(it needs bash and the Go toolchain; or set FLINK_ADMISSION_CONTROL_PLANE to a directory holding them): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// StartControlPlane starts kube-apiserver and etcd (as Start does), then
// kube-controller-manager, kube-scheduler and opts.Nodes KWOK nodes, and returns once every
// component is healthy and every node Ready. Call Stop when done.
func StartControlPlane(opts ControlPlaneOptions) (cp *ControlPlane, err error) {
	bin, err := ControlPlaneAssetsDir()
	if err != nil {
		return nil, err
	}
	if opts.NodeLeaseDuration == 0 {
		opts.NodeLeaseDuration = 40 * time.Second
	}
	if opts.NodeMonitorGracePeriod == 0 {
		opts.NodeMonitorGracePeriod = 50 * time.Second
	}
	env, err := Start(opts.Options)
	if err != nil {
		return nil, err
	}
	cp = &ControlPlane{Env: env, opts: opts, bin: bin, logDir: opts.LogDir, procs: map[string]*component{}, nodes: map[string]int{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, cp.Stop())
			cp = nil
		}
	}()
	if cp.logDir == "" {
		if cp.logDir, err = os.MkdirTemp("", "flink-admission-controlplane-"); err != nil {
			return nil, err
		}
		cp.tempLog = true
	} else if err = os.MkdirAll(cp.logDir, 0o755); err != nil {
		return nil, err
	}
	if cp.Clientset, err = kubernetes.NewForConfig(env.Config); err != nil {
		return nil, err
	}
	if err = os.WriteFile(filepath.Join(cp.logDir, "kwok-stages.yaml"), KWOKStages, 0o600); err != nil {
		return nil, err
	}

	kcmPort, err := freeport.Get()
	if err != nil {
		return nil, err
	}
	if err = cp.start("kube-controller-manager", filepath.Join(bin, "kube-controller-manager"),
		"--kubeconfig="+env.Kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(kcmPort),
		"--controllers="+strings.Join(ControlPlaneControllers, ","),
		"--node-monitor-period=2s",
		"--node-monitor-grace-period="+opts.NodeMonitorGracePeriod.String(),
		// The tests create hundreds of objects at once (make bench: 500 clusters); the
		// default 20 requests/s would measure the client's rate limit, not the controllers.
		"--kube-api-qps=500", "--kube-api-burst=1000",
	); err != nil {
		return nil, err
	}
	schedPort, err := freeport.Get()
	if err != nil {
		return nil, err
	}
	if err = cp.start("kube-scheduler", filepath.Join(bin, "kube-scheduler"),
		"--kubeconfig="+env.Kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(schedPort),
		"--kube-api-qps=500", "--kube-api-burst=1000",
	); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for name, port := range map[string]int{"kube-controller-manager": kcmPort, "kube-scheduler": schedPort} {
		if err = cp.waitHealthy(ctx, name, port); err != nil {
			return nil, err
		}
	}
	for i := range opts.Nodes {
		if err = cp.AddNode(ctx, fmt.Sprintf("kwok-node-%d", i)); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

// NodeOption shapes a Node that AddNode creates.
type NodeOption func(*corev1.Node)

// ReservedFor labels the node key=value and taints it key=value:NoSchedule from its
// creation on, so that only pods that select and tolerate it run there. Set at creation, not
// by a later update: the scheduler may place any pending pod on an untainted node in between.
func ReservedFor(key, value string) NodeOption {
	return func(n *corev1.Node) {
		n.Labels[key] = value
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoSchedule})
	}
}

// AddNode creates a Node named name and starts the KWOK process that plays its kubelet, and
// waits until the node is Ready.
func (cp *ControlPlane) AddNode(ctx context.Context, name string, opts ...NodeOption) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: name,
		Labels: map[string]string{
			NodeLabel:                name,
			"kubernetes.io/hostname": name,
			"kubernetes.io/os":       "linux",
			"kubernetes.io/arch":     "amd64",
			"type":                   "kwok",
		},
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
	}}
	for _, o := range opts {
		o(node)
	}
	if _, err := cp.Clientset.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating node %s: %w", name, err)
	}
	if err := cp.StartNode(name); err != nil {
		return err
	}
	return cp.WaitNodeReady(ctx, name, corev1.ConditionTrue)
}

// StartNode (re)starts the KWOK process of node name: its heartbeats resume, and its pods are
// run again as a kubelet coming back would.
func (cp *ControlPlane) StartNode(name string) error {
	port, err := freeport.Get()
	if err != nil {
		return err
	}
	// Each node has an address of its own and its pods addresses of their own /24, as a
	// node's pod CIDR. Both are in the loopback range: no test traffic ever leaves this
	// machine, even by mistake (the Flink REST calls go in-process).
	cp.mu.Lock()
	index, ok := cp.nodes[name]
	if !ok {
		index = len(cp.nodes)
		cp.nodes[name] = index
	}
	cp.mu.Unlock()
	return cp.start("kwok-"+name, filepath.Join(cp.bin, "kwok"),
		"--kubeconfig="+cp.Kubeconfig,
		"--config="+filepath.Join(cp.logDir, "kwok-stages.yaml"),
		"--manage-single-node="+name,
		// Warnings and errors only: at INFO it logs every lease renewal.
		"--v=WARN",
		"--node-lease-duration-seconds="+strconv.Itoa(int(cp.opts.NodeLeaseDuration.Seconds())),
		"--server-address=127.0.0.1:"+strconv.Itoa(port),
		fmt.Sprintf("--node-ip=127.0.100.%d", index%250+1),
		fmt.Sprintf("--cidr=127.1.%d.0/24", index%250),
	)
}

// StopNode stops the KWOK process of node name, as a node that lost power or its network: its
// Lease is no longer renewed and nothing updates its pods. The node lifecycle controller
// marks it unreachable after NodeMonitorGracePeriod and taints it; pods are evicted once their
// toleration of that taint runs out, and stay Terminating, since no kubelet confirms their end.
func (cp *ControlPlane) StopNode(name string) error {
	return cp.stop("kwok-" + name)
}

// DeleteNode stops node name's KWOK process and deletes its Node object: its pods become
// orphans, which pod garbage collection deletes.
func (cp *ControlPlane) DeleteNode(ctx context.Context, name string) error {
	if err := cp.StopNode(name); err != nil {
		return err
	}
	err := cp.Clientset.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %s: %w", name, err)
	}
	return nil
}

// WaitNodeReady waits until node name's Ready condition has status want (Unknown for a node
// whose heartbeats stopped).
func (cp *ControlPlane) WaitNodeReady(ctx context.Context, name string, want corev1.ConditionStatus) error {
	var last corev1.ConditionStatus
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		node, err := cp.Clientset.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				last = c.Status
				return c.Status == want, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("node %s Ready=%s: last %q: %w\n%s", name, want, last, err, cp.Logs())
	}
	return nil
}

// Logs returns the last lines of every component's log, for a failing test to print.
func (cp *ControlPlane) Logs() string {
	cp.mu.Lock()
	names := make([]string, 0, len(cp.procs))
	for name := range cp.procs {
		names = append(names, name)
	}
	cp.mu.Unlock()
	var b strings.Builder
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(cp.logDir, name+".log"))
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		fmt.Fprintf(&b, "--- %s (last %d lines)\n%s\n", name, len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}

// LogDir is the directory of the components' logs.
func (cp *ControlPlane) LogDir() string { return cp.logDir }

// Stop stops every component, then kube-apiserver and etcd.
func (cp *ControlPlane) Stop() error {
	cp.mu.Lock()
	names := make([]string, 0, len(cp.procs))
	for name := range cp.procs {
		names = append(names, name)
	}
	cp.mu.Unlock()
	var errs []error
	for _, name := range names {
		errs = append(errs, cp.stop(name))
	}
	errs = append(errs, cp.Env.Stop())
	if cp.tempLog {
		errs = append(errs, os.RemoveAll(cp.logDir))
	}
	return errors.Join(errs...)
}

// start runs a component with its output appended to its log file.
func (cp *ControlPlane) start(name, path string, args ...string) error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if _, running := cp.procs[name]; running {
		return fmt.Errorf("%s is already running", name)
	}
	log, err := os.OpenFile(filepath.Join(cp.logDir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group, so that Stop reaches any child it starts.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	c := &component{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = log.Close()
		close(c.done)
	}()
	cp.procs[name] = c
	return nil
}

// stop ends a component: SIGTERM, then SIGKILL after ten seconds.
func (cp *ControlPlane) stop(name string) error {
	cp.mu.Lock()
	c, ok := cp.procs[name]
	delete(cp.procs, name)
	cp.mu.Unlock()
	if !ok {
		return nil
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
	return nil
}

// waitHealthy polls a component's /healthz on its secure port (its certificate is
// self-signed; /healthz needs no credentials).
func (cp *ControlPlane) waitHealthy(ctx context.Context, name string, port int) error {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a local component's self-signed certificate
	}}
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", port)
	var last error
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		cp.mu.Lock()
		c := cp.procs[name]
		cp.mu.Unlock()
		select {
		case <-c.done:
			return false, fmt.Errorf("%s exited", name)
		default:
		}
		resp, err := client.Get(url)
		if err != nil {
			last = err
			return false, nil
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			last = fmt.Errorf("HTTP %d", resp.StatusCode)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%s not healthy (last: %v): %w\n%s", name, last, err, cp.Logs())
	}
	return nil
}
