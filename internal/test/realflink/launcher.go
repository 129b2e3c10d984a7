// Package realflink runs real Apache Flink in the pods of the test and dev control plane: a
// Launcher (flinksim.Launcher) starts one JVM per running JobManager pod
// (StandaloneApplicationClusterEntryPoint, Flink's application-mode entrypoint) and per
// TaskManager pod (TaskManagerRunner), with Flink's own jars from Maven Central (Artifacts,
// hack/flink-artifacts.sh). The flinksim.Simulator plays the kubelet around them, as it does
// around the simulated JobManagers: the preStop delay, SIGTERM, SIGKILL at the grace period,
// the container's end and its restarts.
//
// Each JVM is configured as the Flink image's entrypoint configures it: the cluster's
// configuration file from its ConfigMap, the container's args with the kubelet's variable
// expansion, the memory flags of Flink's BashJavaUtils and the Java 17 options of Flink's
// default configuration. It reaches the API server as its pod's service account (a
// TokenRequest token in kubernetes.config.file), so that Flink's Kubernetes HA runs under the
// RBAC a real pod has. What a pod has that a process on this machine lacks is given to it
// here: its own IP to bind (KWOK allocates pod IPs in the loopback range), its own temporary
// directories (removed when the container ends), and the files of its image (the jar of the
// test jobs at JobsJarInImage).
//
// ServiceTransport stands in for the cluster's DNS and kube-proxy: the controller reaches a
// JobManager Service's ready pod through it.
package realflink

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/containerargs"
	"github.com/flink-admission/flink-admission/internal/test/controllerenv"
	"github.com/flink-admission/flink-admission/internal/test/flinksim"
)

// DefaultMaxJVMs caps the JVMs running at once when Options.MaxJVMs is 0: about 4 GiB of
// resident small JobManagers and TaskManagers (~250 MiB each), 10 GiB at their configured
// sizes, on a 24 GiB machine.
const DefaultMaxJVMs = 16

// The main classes the Flink image's entrypoint runs for its first argument.
const (
	jobManagerMain  = "org.apache.flink.container.entrypoint.StandaloneApplicationClusterEntryPoint"
	taskManagerMain = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"
)

// Options configure a Launcher.
type Options struct {
	// Config reaches the API server as a cluster admin (to read the pods' configuration and
	// issue their service accounts' tokens); required.
	Config *rest.Config
	// Artifacts resolves Flink's jars and the test jobs; a new one when nil.
	Artifacts *Artifacts
	// Dir holds the containers' files (each removed when its container ends) and their
	// logs (kept); required.
	Dir string
	// Java is the java command; "java" when empty.
	Java string
	// MaxJVMs caps the JVMs running at once; DefaultMaxJVMs when 0. A start past the cap
	// fails and is tried again, as a container the kubelet cannot start yet.
	MaxJVMs int
	// Log receives what the Launcher does.
	Log logr.Logger
}

// Launcher starts Flink JVMs for pods; see the package documentation.
type Launcher struct {
	opts    Options
	client  client.Client
	cs      kubernetes.Interface
	spawner *spawner

	seq     atomic.Int64
	mu      sync.Mutex
	running map[*jvm]struct{}
	// pending counts the starts under way, which count against the cap too.
	pending int
	closed  bool
}

// New returns a Launcher for opts.
func New(opts Options) (*Launcher, error) {
	if opts.Config == nil || opts.Dir == "" {
		return nil, errors.New("realflink: Options.Config and Options.Dir are required")
	}
	if opts.Artifacts == nil {
		opts.Artifacts = &Artifacts{}
	}
	if opts.Java == "" {
		opts.Java = "java"
	}
	if opts.MaxJVMs == 0 {
		opts.MaxJVMs = DefaultMaxJVMs
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	s, err := controllerenv.NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(opts.Config, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("realflink: client: %w", err)
	}
	cs, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("realflink: clientset: %w", err)
	}
	// Each JVM runs in its container's directory: every path it is given is absolute.
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	for _, d := range []string{"pods", "logs"} {
		if err := os.MkdirAll(filepath.Join(opts.Dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	return &Launcher{opts: opts, client: c, cs: cs, spawner: newSpawner(), running: map[*jvm]struct{}{}}, nil
}

var _ flinksim.Launcher = (*Launcher)(nil)

// LogDir holds each container's output, <namespace>_<pod>_<n>.log.
func (l *Launcher) LogDir() string { return filepath.Join(l.opts.Dir, "logs") }

// Launch implements flinksim.Launcher: it starts the JVM of the pod's JobManager or
// TaskManager container.
func (l *Launcher) Launch(ctx context.Context, pod *corev1.Pod, container string) (flinksim.Process, error) {
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == container {
			c = &pod.Spec.Containers[i]
		}
	}
	if c == nil {
		return nil, fmt.Errorf("pod %s/%s has no container %s", pod.Namespace, pod.Name, container)
	}
	if pod.Status.PodIP == "" {
		return nil, fmt.Errorf("pod %s/%s has no IP yet", pod.Namespace, pod.Name)
	}
	name := pod.Labels[resources.LabelCluster]
	fc := &v1beta1.FlinkCluster{}
	if err := l.client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, fc); err != nil {
		return nil, fmt.Errorf("reading FlinkCluster %s/%s: %w", pod.Namespace, name, err)
	}
	cm := &corev1.ConfigMap{}
	if err := l.client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: resources.ConfigMapName(name)}, cm); err != nil {
		return nil, fmt.Errorf("reading the Flink configuration of %s/%s: %w", pod.Namespace, name, err)
	}
	conf := map[string]any{}
	file := resources.ConfigFileName(fc)
	if err := yaml.Unmarshal([]byte(cm.Data[file]), &conf); err != nil {
		return nil, fmt.Errorf("parsing %s of %s/%s: %w", file, pod.Namespace, name, err)
	}
	version, err := imageVersion(c.Image)
	if err != nil {
		return nil, err
	}
	lib, err := l.opts.Artifacts.Lib(version)
	if err != nil {
		return nil, err
	}
	jobsJar, err := l.opts.Artifacts.JobsJar()
	if err != nil {
		return nil, err
	}
	args := containerargs.ExpandIn(pod, c, cm)
	if len(args) == 0 {
		return nil, fmt.Errorf("container %s of pod %s/%s has no args: want standalone-job or taskmanager", container, pod.Namespace, pod.Name)
	}
	component, main := "jobmanager", jobManagerMain
	switch args[0] {
	case "standalone-job":
	case "taskmanager":
		component, main = "taskmanager", taskManagerMain
	default:
		return nil, fmt.Errorf("container %s of pod %s/%s runs %q: the Flink image's entrypoint knows standalone-job and taskmanager here", container, pod.Namespace, pod.Name, args[0])
	}
	if err := l.reserve(); err != nil {
		return nil, err
	}
	j, err := l.start(ctx, pod, c, conf, args[1:], startSpec{version: version, lib: lib, jobsJar: jobsJar, component: component, main: main, legacy: !strings.HasSuffix(file, "config.yaml")})
	if err != nil {
		l.release(nil)
		return nil, err
	}
	return j, nil
}

type startSpec struct {
	version, lib, jobsJar, component, main string
	legacy                                 bool
}

// reserve takes a place under the cap on running JVMs.
func (l *Launcher) reserve() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("realflink: the launcher is closed")
	}
	if len(l.running)+l.pending >= l.opts.MaxJVMs {
		return fmt.Errorf("realflink: %d JVMs run or start already (MaxJVMs)", len(l.running)+l.pending)
	}
	l.pending++
	return nil
}

// release gives back the place of a start that failed (j nil) or of j, which ended.
func (l *Launcher) release(j *jvm) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if j == nil {
		l.pending--
		return
	}
	delete(l.running, j)
}

func (l *Launcher) start(ctx context.Context, pod *corev1.Pod, c *corev1.Container, conf map[string]any, args []string, spec startSpec) (*jvm, error) {
	n := l.seq.Add(1)
	id := fmt.Sprintf("%s_%s_%d", pod.Namespace, pod.Name, n)
	home := filepath.Join(l.opts.Dir, "pods", id)
	cleanup := func() { _ = os.RemoveAll(home) }
	ok := false
	defer func() {
		if !ok {
			cleanup()
		}
	}()
	// The image's layout: lib/ (Flink's jars), the user's artifacts, conf/.
	for _, d := range []string{"tmp", "usrlib"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.Symlink(spec.lib, filepath.Join(home, "lib")); err != nil {
		return nil, err
	}
	if err := os.Symlink(spec.jobsJar, filepath.Join(home, strings.TrimPrefix(JobsJarInImage, "/opt/flink/"))); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(home, "kubeconfig")
	if err := writeKubeconfig(ctx, l.cs, l.opts.Config, pod, kubeconfig); err != nil {
		return nil, err
	}
	confDir := filepath.Join(home, "conf")
	if err := writeConfiguration(confDir, podConfiguration(conf, pod, spec.component, home, kubeconfig), spec.legacy); err != nil {
		return nil, err
	}
	jvmMem, dynamic, err := memoryParams(ctx, l.opts.Java, spec.lib, confDir, spec.component)
	if err != nil {
		return nil, err
	}
	hosts := filepath.Join(home, "hosts")
	if err := writeHosts(hosts, pod); err != nil {
		return nil, err
	}
	logPath := filepath.Join(l.LogDir(), id+".log")
	out, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	var jvmArgs []string
	jvmArgs = append(jvmArgs, javaOpens...)
	jvmArgs = append(jvmArgs, startupOpts...)
	jvmArgs = append(jvmArgs, jvmMem...)
	jvmArgs = append(jvmArgs,
		"-Djdk.net.hosts.file="+hosts,
		"-Dlog.file="+logPath,
		"-Dlog4j.configurationFile="+filepath.Join(filepath.Dir(spec.lib), "conf", "log4j-console.properties"),
		"-cp", filepath.Join(spec.lib, "*"), spec.main, "--configDir", confDir)
	jvmArgs = append(jvmArgs, dynamic...)
	jvmArgs = append(jvmArgs, imagePaths(args, home)...)
	cmd := exec.Command(l.opts.Java, jvmArgs...)
	cmd.Dir = home
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), "FLINK_HOME="+home, "FLINK_LIB_DIR="+filepath.Join(home, "lib"), "FLINK_CONF_DIR="+confDir)
	for k, v := range containerargs.Values(pod, c, nil) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	fmt.Fprintf(out, "# realflink: %s %s\n", l.opts.Java, strings.Join(jvmArgs, " "))
	j := &jvm{name: fmt.Sprintf("flink-%s %s %s", spec.version, spec.component, id), cmd: cmd, logPath: logPath, done: make(chan struct{})}
	j.cleanup = func() {
		cleanup()
		l.release(j)
	}
	if err := l.spawner.start(cmd); err != nil {
		return nil, err
	}
	ok = true
	l.mu.Lock()
	l.pending--
	l.running[j] = struct{}{}
	l.mu.Unlock()
	go j.wait()
	l.opts.Log.Info("Flink JVM started", "pod", pod.Namespace+"/"+pod.Name, "component", spec.component, "version", spec.version, "pid", cmd.Process.Pid, "log", logPath)
	return j, nil
}

// imagePaths maps the paths of the image (/opt/flink/...) in args to the container's home.
func imagePaths(args []string, home string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if rest, ok := strings.CutPrefix(a, "/opt/flink/"); ok {
			a = filepath.Join(home, rest)
		}
		out[i] = a
	}
	return out
}

// Close kills every JVM still running and waits for them; later launches fail.
func (l *Launcher) Close() {
	l.mu.Lock()
	l.closed = true
	var js []*jvm
	for j := range l.running {
		js = append(js, j)
	}
	l.mu.Unlock()
	for _, j := range js {
		j.Kill()
	}
	for _, j := range js {
		<-j.done
	}
}

// Running is how many JVMs run now.
func (l *Launcher) Running() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.running)
}
