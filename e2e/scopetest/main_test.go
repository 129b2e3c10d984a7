package scopetest

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/internal/containerargs"
	"github.com/flink-admission/flink-admission/internal/test/controllerenv"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
	"github.com/flink-admission/flink-admission/internal/test/flinksim"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/scope"
	"github.com/flink-admission/flink-admission/server"
)

const (
	serverNamespace  = "flink-admission-system"
	serviceAccount   = "flink-admission"
	selectorLabel    = "flink.example.com/controller"
	selectorValue    = "flink-admission"
	overlayDirectory = "../../deploy/overlays/scoped"
)

var (
	scheme *runtime.Scheme
	// k8s is a cluster admin: the tests, the user and the stand-in operator.
	k8s client.Client
	// env is the real control plane: kube-apiserver and etcd, kube-controller-manager (the
	// garbage collector finishes the foreground deletion of docs/install.md's step 3.2, the
	// Job controller makes the JobManager pods), kube-scheduler and one KWOK node.
	env *testenv.ControlPlane
	// overlayScope is the scope the scoped overlay gives the controller.
	overlayScope scope.Scope
	// sim attaches a simulated Flink JobManager to every running JobManager pod of a
	// cluster that has a fake Flink in fakes.
	sim *flinksim.Simulator
	// fakes maps "namespace/name" of a FlinkCluster to the fake Flink that stands in for its
	// Flink (the move test's cluster); the other clusters have none.
	fakes sync.Map
)

func TestMain(m *testing.M) {
	flag.Parse()
	ctrl.SetLogger(logr.Discard())
	stop, err := start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "scopetest:", err)
		if stop != nil {
			stop()
		}
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// start runs the control plane, installs the scoped overlay's ServiceAccount and RBAC, and
// starts a manager as that ServiceAccount with the overlay's scope flags.
func start() (func(), error) {
	var err error
	if scheme, err = controllerenv.NewScheme(); err != nil {
		return nil, err
	}
	if env, err = testenv.StartControlPlane(testenv.ControlPlaneOptions{Nodes: 1}); err != nil {
		return nil, err
	}
	stop := func() { _ = env.Stop() }
	if k8s, err = client.New(env.Config, client.Options{Scheme: scheme}); err != nil {
		return stop, err
	}
	ctx := context.Background()
	opts, err := installOverlayRBAC(ctx)
	if err != nil {
		return stop, err
	}
	overlayScope = opts.Controller.Scope
	stopWebhooks, err := startWebhooks(ctx)
	if err != nil {
		return stop, err
	}
	stop = func() { stopWebhooks(); _ = env.Stop() }

	// The controller's own identity, so that a permission the Roles lack fails here.
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:%s", serverNamespace, serviceAccount)}
	copts := opts.Controller
	copts.FlinkClientFor = flinkFor
	copts.RequeueInterval = 200 * time.Millisecond
	// One worker: once a reconcile of one cluster has started, every reconcile started
	// before it has finished, which lets the tests wait on a sentinel cluster instead of a
	// clock.
	copts.MaxConcurrentReconciles = 1
	ctl, err := controllerenv.Start(controllerenv.Options{
		Config: cfg, Scheme: scheme, Cache: controller.ScopedCacheOptions(overlayScope), Controller: copts,
		Simulator: flinksim.Options{Config: env.Config, Clusters: fakeFlinkOf},
	})
	if err != nil {
		return stop, err
	}
	sim = ctl.Simulator
	return func() {
		stopWebhooks()
		if err := ctl.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		_ = env.Stop()
	}, nil
}

// flinkFor is the controller's Flink REST client of a cluster: its fake Flink's Service, or,
// for the clusters that have none, an unreachable address (what those tests check happens
// before the controller needs the Flink REST API).
func flinkFor(fc *v1beta1.FlinkCluster) (flinkclient.Client, error) {
	if f := fakeFlinkOf(context.Background(), fc); f != nil {
		return flinkclient.New(f.URL(), nil)
	}
	return flinkclient.New("http://127.0.0.1:1", nil)
}

// fakeFlinkOf returns the fake Flink of a cluster, or nil.
func fakeFlinkOf(_ context.Context, fc *v1beta1.FlinkCluster) *fakeflink.Cluster {
	if f, ok := fakes.Load(fc.Namespace + "/" + fc.Name); ok {
		return f.(*fakeflink.Cluster)
	}
	return nil
}

// installOverlayRBAC renders deploy/overlays/scoped, creates the namespaces (team-a, which
// the overlay does not watch, and the watched ones), the ServiceAccount and every RBAC
// object of the overlay, and returns the serve options its Deployment's arguments parse to.
func installOverlayRBAC(ctx context.Context) (server.Options, error) {
	var o server.Options
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Clean(overlayDirectory))
	if err != nil {
		return o, err
	}
	for _, ns := range []string{serverNamespace, "team-a", "team-b", "team-c"} {
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return o, err
		}
	}
	if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: serviceAccount, Namespace: serverNamespace}}); err != nil {
		return o, err
	}
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return o, err
		}
		switch r.GetKind() {
		case "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
			obj, _, err := decoder.Decode(y, nil, nil)
			if err != nil {
				return o, err
			}
			if err := k8s.Create(ctx, obj.(client.Object)); err != nil {
				return o, fmt.Errorf("creating %s: %w", r.CurId(), err)
			}
		case "Deployment":
			var d appsv1.Deployment
			obj, _, err := decoder.Decode(y, nil, &d)
			if err != nil {
				return o, err
			}
			// As the kubelet runs them: the selector comes from the env.
			args := containerargs.Expand(&obj.(*appsv1.Deployment).Spec.Template.Spec.Containers[0], nil)
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o.BindFlags(fs)
			if err := fs.Parse(args[1:]); err != nil {
				return o, fmt.Errorf("parsing the overlay's arguments %v: %w", args, err)
			}
		}
	}
	if o.Controller.Scope.AllNamespaces() || o.Controller.Scope.Selector == nil {
		return o, fmt.Errorf("the scoped overlay sets no namespaces or no selector: %s", o.Controller.Scope)
	}
	return o, nil
}
