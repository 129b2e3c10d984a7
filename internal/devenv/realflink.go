package devenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/internal/test/flinksim"
	"github.com/flink-admission/flink-admission/internal/test/realflink"
)

// RealFlinkVersion is the Flink release dev --flink=real runs its sample on.
const RealFlinkVersion = "2.2.1"

// RealFlink is the real Flink of dev --flink=real: a JVM per running JobManager and
// TaskManager pod (package realflink), with flinksim playing the kubelet around them, and
// the controller's REST calls reaching the JobManager Service through realflink's stand-in
// for DNS and kube-proxy.
type RealFlink struct {
	launcher  *realflink.Launcher
	sim       *flinksim.Simulator
	cache     cache.Cache
	transport *realflink.ServiceTransport
	// Dir holds the containers' files and logs (logs/), and the sample's state.
	Dir string
}

// NewRealFlink prepares real Flink for the API server cfg reaches: it fetches Flink's jars
// (RealFlinkVersion) and builds the test jobs first, reporting to progress, so that the
// first pod does not wait for Maven.
func NewRealFlink(cfg *rest.Config, dir string, progress io.Writer, log logr.Logger) (*RealFlink, error) {
	arts := &realflink.Artifacts{Progress: progress}
	fmt.Fprintf(progress, "fetching Flink %s from Maven Central and building the test jobs (cached)\n", RealFlinkVersion)
	if _, err := arts.Lib(RealFlinkVersion); err != nil {
		return nil, err
	}
	if _, err := arts.JobsJar(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l, err := realflink.New(realflink.Options{Config: cfg, Artifacts: arts, Dir: dir, Log: log.WithName("realflink")})
	if err != nil {
		return nil, err
	}
	sim, err := flinksim.New(flinksim.Options{Config: cfg, Launcher: l, TaskManagers: true, Log: log.WithName("kubelet")})
	if err != nil {
		return nil, err
	}
	c, err := cache.New(cfg, cache.Options{})
	if err != nil {
		return nil, err
	}
	return &RealFlink{launcher: l, sim: sim, cache: c, transport: &realflink.ServiceTransport{Reader: c}, Dir: dir}, nil
}

// FlinkClientFor is the controller's Flink REST client of fc: its JobManager Service.
func (r *RealFlink) FlinkClientFor(fc *v1beta1.FlinkCluster) (flinkclient.Client, error) {
	return r.transport.FlinkClient(fc)
}

// Start runs the kubelet stand-in and the Service stand-in's cache until ctx ends, then
// kills every JVM. It implements controller-runtime's Runnable.
func (r *RealFlink) Start(ctx context.Context) error {
	go func() { _ = r.cache.Start(ctx) }()
	err := r.sim.Start(ctx)
	r.launcher.Close()
	return err
}

// LogDir holds the JVMs' output.
func (r *RealFlink) LogDir() string { return r.launcher.LogDir() }

// realSample rewrites the sample of deployment-mode.yaml for real Flink: the release
// RealFlinkVersion, the test jobs' stateful job (it writes what each start restored to
// <state>/report.jsonl), HA, checkpoints and savepoints in directories under state, small
// JobManager and TaskManager memory, and two TaskManagers of one slot each.
func realSample(path, state string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	fc := &v1beta1.FlinkCluster{}
	if err := yaml.Unmarshal(raw, fc); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	file := func(sub string) string { return "file://" + filepath.Join(state, sub) }
	fc.Spec.FlinkVersion = RealFlinkVersion
	fc.Spec.Image.Name = "flink:" + RealFlinkVersion
	fc.Spec.EnvVars = nil
	fc.Spec.JobManager.Resources, fc.Spec.TaskManager.Resources = corev1.ResourceRequirements{}, corev1.ResourceRequirements{}
	j := fc.Spec.Job
	jar, class := realflink.JobsJarInImage, realflink.CountingJob
	j.JarFile, j.ClassName = &jar, &class
	j.Args = []string{"--report", filepath.Join(state, "report.jsonl")}
	sp := file("savepoints")
	j.SavepointsDir = &sp
	for k, v := range map[string]string{
		"high-availability.storageDir":     file("ha"),
		"state.checkpoints.dir":            file("checkpoints"),
		"execution.checkpointing.interval": "10s",
		"taskmanager.numberOfTaskSlots":    "1",
		"jobmanager.memory.process.size":   "768m",
		"taskmanager.memory.process.size":  "1024m",
	} {
		fc.Spec.FlinkProperties[k] = v
	}
	out, err := yaml.Marshal(fc)
	if err != nil {
		return err
	}
	header := "# deployment-mode.yaml for dev --flink=real: real Flink " + RealFlinkVersion + " JobManagers and TaskManagers\n" +
		"# run the project's stateful test job; its state lives under " + state + ".\n"
	return os.WriteFile(path, []byte(header+strings.TrimPrefix(string(out), "---\n")), 0o644)
}

// createFlinkRole gives the samples' service account what Flink's Kubernetes HA needs, as
// the samples tell a user to: a Role on ConfigMaps in the samples' namespace and its binding.
func createFlinkRole(ctx context.Context, cs kubernetes.Interface) error {
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "flink-ha", Namespace: DevSampleNamespace}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"},
		Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"},
	}}}
	if _, err := cs.RbacV1().Roles(DevSampleNamespace).Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the Role %s/%s of the samples: %w", DevSampleNamespace, role.Name, err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "flink-ha", Namespace: DevSampleNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: DevServiceAccount, Namespace: DevSampleNamespace}},
	}
	if _, err := cs.RbacV1().RoleBindings(DevSampleNamespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the RoleBinding %s/%s of the samples: %w", DevSampleNamespace, rb.Name, err)
	}
	return nil
}
