// Package testenv starts a real kube-apiserver and etcd (controller-runtime envtest) with the
// FlinkCluster CRD installed, for tests and for `flink-admission dev`. The binaries are built
// from the Go module proxy by hack/envtest-binaries.sh and cached outside the repository.
//
// It links envtest, so only tests and the dev build (-tags dev) may import it: the image's
// binary must not (cmd/flink-admission's TestNoTestToolingLinked checks).
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/deploy"
	"github.com/flink-admission/flink-admission/hack"
)

// Env is a running control plane.
type Env struct {
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for kubectl, as a cluster admin.
	Kubeconfig string
	// Environment is the underlying envtest environment.
	Environment *envtest.Environment

	dir string
}

// Options tune Start.
type Options struct {
	// WithoutCRD starts the API server without the FlinkCluster CRD.
	WithoutCRD bool
	// KubeconfigDir is where the kubeconfig is written; a temporary directory when empty.
	KubeconfigDir string
	// Webhooks are webhook configurations envtest installs, pointing at a local server.
	Webhooks envtest.WebhookInstallOptions
	// APIServerFlags are set on kube-apiserver's command line (name without dashes → value),
	// e.g. admission-control-config-file.
	APIServerFlags map[string]string
}

// CRD returns the generated FlinkCluster CRD.
func CRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(deploy.CRD, crd); err != nil {
		return nil, fmt.Errorf("decoding the embedded CRD: %w", err)
	}
	return crd, nil
}

// AssetsDir returns the directory holding kube-apiserver and etcd: $KUBEBUILDER_ASSETS when
// set, otherwise the output of hack/envtest-binaries.sh (embedded, so this works from any
// directory), which builds them with the Go toolchain on first use and caches them.
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	cmd := exec.Command("bash", "-c", hack.EnvtestBinariesScript, "envtest-binaries.sh")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building kube-apiserver and etcd with hack/envtest-binaries.sh (it needs bash and the Go toolchain; "+
			"or set KUBEBUILDER_ASSETS to a directory holding both): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// ServiceClusterIPRange is the Service range of the API server: a /16, room for 65,534
// Services. envtest's default /24 ran out at 254, one JobManager Service per FlinkCluster.
const ServiceClusterIPRange = "10.0.0.0/16"

// RepoRoot returns the repository root (the directory of go.mod), found from this source
// file's location so that tests in any package can use it.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

// module is the module path the repository's go.mod declares.
const module = "github.com/flink-admission/flink-admission"

// LocateRepo is RepoRoot for binaries too: one built with -trimpath (make run's) knows no
// source path, and looks for the repository from its working directory up.
func LocateRepo() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return RepoRoot(), nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return findRepo(dir)
}

// findRepo is the nearest directory from dir up whose go.mod declares this module.
func findRepo(dir string) (string, error) {
	for {
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && declaresModule(mod) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("this needs the flink-admission repository's sources: run it inside a clone (no go.mod of %s in this directory or above)", module)
		}
		dir = parent
	}
}

// declaresModule reports whether mod, a go.mod file, declares this repository's module.
func declaresModule(mod []byte) bool {
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == module
		}
	}
	return false
}

// Start starts kube-apiserver and etcd, installs the CRD (unless opts.WithoutCRD) and writes
// an admin kubeconfig. Call Stop when done.
func Start(opts Options) (*Env, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: opts.Webhooks,
		// envtest gives kube-apiserver 20 s to start; on a loaded 2-core machine (several
		// test packages start their own control plane at once) that is not enough.
		ControlPlaneStartTimeout: 3 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", ServiceClusterIPRange)
	for name, value := range opts.APIServerFlags {
		env.ControlPlane.GetAPIServer().Configure().Set(name, value)
	}
	if !opts.WithoutCRD {
		crd, err := CRD()
		if err != nil {
			return nil, err
		}
		env.CRDs = []*apiextensionsv1.CustomResourceDefinition{crd}
		// envtest waits 10 s for the CRD to be served by default; a loaded 2-core CI machine
		// can take longer than that to compile a CRD with CEL rules.
		env.CRDInstallOptions.MaxTime = time.Minute
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	e := &Env{Config: cfg, Environment: env}
	if err := e.writeKubeconfig(opts.KubeconfigDir); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	return e, nil
}

func (e *Env) writeKubeconfig(dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "flink-admission-kubeconfig-")
		if err != nil {
			return err
		}
		dir, e.dir = d, d
	}
	user, err := e.Environment.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("creating an admin user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("rendering the admin kubeconfig: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	e.Kubeconfig = filepath.Join(dir, "kubeconfig")
	return os.WriteFile(e.Kubeconfig, kubeconfig, 0o600)
}

// Kubectl returns a kubectl command that talks to this API server.
func (e *Env) Kubectl(args ...string) *exec.Cmd {
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", e.Kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.Kubeconfig)
	return cmd
}

// WaitEstablished waits until the API server serves the CRD named crd (for one installed with
// kubectl rather than by Start). `kubectl wait --for=condition=Established` fails on a CRD
// that has no status yet, so this polls.
func (e *Env) WaitEstablished(crd string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		out, err := e.Kubectl("get", "crd", crd, "-o", "jsonpath={.status.conditions[?(@.type=='Established')].status}").Output()
		if err == nil && strings.TrimSpace(string(out)) == "True" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CRD %s not established within %s (last: %q, %v)", crd, timeout, out, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop stops the control plane and removes the temporary kubeconfig.
func (e *Env) Stop() error {
	err := e.Environment.Stop()
	if e.dir != "" {
		err = errors.Join(err, os.RemoveAll(e.dir))
	}
	return err
}
