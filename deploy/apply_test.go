package deploy_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/deploy"
	"github.com/flink-admission/flink-admission/deploy/installer"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

// TestApplyDryRunServer applies what a user applies — each overlay with `kubectl apply -k`,
// and the samples — to a real API server with --dry-run=server: the API server validates
// every object against its schema (and the FlinkClusters against the CRD's CEL rules), runs
// admission (Pod Security included), and stores nothing.
func TestApplyDryRunServer(t *testing.T) {
	// envtest logs through controller-runtime's global logger; without one it prints a stack.
	ctrllog.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))
	env, err := testenv.Start(testenv.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })

	// A dry run cannot create the namespace that the namespaced objects go to: create it
	// first, from the base's own manifest, as the only object stored. Its labels then make the
	// API server check the Deployment's pod template against the restricted Pod Security
	// Standard and warn about any violation.
	run(t, env.Kubectl("apply", "-f", filepath.Join("base", "namespace.yaml")))

	t.Run("pod security warnings are checked", func(t *testing.T) {
		// Proof that the check below can fail: a root pod template draws a warning.
		cmd := env.Kubectl("apply", "--dry-run=server", "-f", "-")
		cmd.Stdin = strings.NewReader(rootDeployment)
		_, stderr := run(t, cmd)
		assert.Contains(t, stderr, `would violate PodSecurity "restricted:latest"`)
	})

	t.Run("self-signed", func(t *testing.T) { applyOverlay(t, env, selfSigned) })

	t.Run("cert-manager is refused without cert-manager's CRDs", func(t *testing.T) {
		cmd := env.Kubectl("apply", "-k", certManager.dir, "--dry-run=server")
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "kubectl apply succeeded without cert-manager's CRDs:\n%s", out)
		assert.Contains(t, string(out), `no matches for kind "Certificate" in version "cert-manager.io/v1"`)
	})

	t.Run("cert-manager", func(t *testing.T) {
		installCertManagerCRDs(t, env)
		applyOverlay(t, env, certManager)
	})

	t.Run("admission-policy", func(t *testing.T) { applyOverlay(t, env, admissionPolicy) })

	// The one-file installers of `make installer`, as an admin applies a released file.
	t.Run("installers", func(t *testing.T) {
		installCertManagerCRDs(t, env)
		const image = "registry.example/team/flink-admission:v1.2.3"
		for _, i := range installer.Installers {
			t.Run(i.File, func(t *testing.T) {
				rendered, err := installer.Render(deploy.Files(), i.Overlay, image)
				require.NoError(t, err)
				file := filepath.Join(t.TempDir(), i.File)
				require.NoError(t, os.WriteFile(file, rendered, 0o644))
				stdout, stderr := run(t, env.Kubectl("apply", "-f", file, "--dry-run=server"))
				nodes, err := kio.FromBytes(rendered)
				require.NoError(t, err)
				require.NotEmpty(t, nodes)
				var refs []string
				for _, n := range nodes {
					refs = append(refs, objectRef(n.GetKind(), n.GetApiVersion(), n.GetName()))
					if n.GetKind() == "Deployment" {
						images, err := n.Pipe(yaml.Lookup("spec", "template", "spec", "containers", "[name=flink-admission]", "image"))
						require.NoError(t, err)
						require.NotNil(t, images)
						assert.Equal(t, image, yaml.GetValue(images), "the Deployment runs IMG")
					}
				}
				checkApplied(t, refs, stdout, stderr)
			})
		}
	})

	t.Run("samples", func(t *testing.T) {
		for _, sample := range []string{"job-mode.yaml", "deployment-mode.yaml"} {
			stdout, stderr := run(t, env.Kubectl("apply", "--dry-run=server", "-n", "default", "-f", filepath.Join("samples", sample)))
			assert.Regexp(t, `(?m)^flinkcluster\.flinkoperator\.k8s\.io/\S+ created \(server dry run\)$`, stdout)
			assert.NotContains(t, stderr, "Warning:")
		}
	})

	t.Run("deployment-mode sample commands", func(t *testing.T) {
		// The commands its header tells users to run, as written, from the repository root.
		sample, err := os.ReadFile(filepath.Join("samples", "deployment-mode.yaml"))
		require.NoError(t, err)
		var script []string
		for _, m := range regexp.MustCompile(`(?m)^#   ((?:NS=|kubectl ).*)$`).FindAllStringSubmatch(string(sample), -1) {
			script = append(script, m[1])
		}
		require.Len(t, script, 5, "the header's commands")
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", strings.Join(script, "\n"))
		cmd.Dir = testenv.RepoRoot()
		cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
		stdout, _ := run(t, cmd)
		assert.Contains(t, stdout, "flinkcluster.flinkoperator.k8s.io/statemachine created")
		can, _ := run(t, env.Kubectl("auth", "can-i", "update", "configmaps", "-n", "default",
			"--as", "system:serviceaccount:default:flink"))
		assert.Equal(t, "yes", strings.TrimSpace(can))
	})
}

// TestKubectlKustomizeAgrees: users run `kubectl apply -k`, whose kustomize is built into
// kubectl and may be older than the one the golden files come from; both must render the
// same objects.
func TestKubectlKustomizeAgrees(t *testing.T) {
	for _, k := range everything {
		t.Run(k.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command("kubectl", "kustomize", k.dir)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Run(), "kubectl kustomize %s: %s", k.dir, stderr.String())
			fromKubectl := byID(t, stdout.String())
			goAPI, err := render(t, k).AsYaml()
			require.NoError(t, err)
			assert.Equal(t, byID(t, string(goAPI)), fromKubectl)
		})
	}
}

// byID indexes the objects of a multi-document YAML stream by apiVersion, kind, namespace
// and name.
func byID(t *testing.T, stream string) map[string]map[string]any {
	t.Helper()
	nodes, err := kio.FromBytes([]byte(stream))
	require.NoError(t, err)
	out := map[string]map[string]any{}
	for _, n := range nodes {
		id := strings.Join([]string{n.GetApiVersion(), n.GetKind(), n.GetNamespace(), n.GetName()}, "/")
		require.NotContains(t, out, id, "duplicate object")
		y, err := n.String()
		require.NoError(t, err)
		var obj map[string]any
		require.NoError(t, sigsyaml.Unmarshal([]byte(y), &obj))
		out[id] = obj
	}
	return out
}

// installCertManagerCRDs installs cert-manager's CRDs, from its Go module, for the
// cert-manager overlay's Issuers and Certificates.
func installCertManagerCRDs(t *testing.T, env *testenv.Env) {
	t.Helper()
	crds, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{
		Paths:              []string{certManagerCRDDir(t)},
		ErrorIfPathMissing: true,
	})
	require.NoError(t, err)
	require.NotEmpty(t, crds)
}

// applyOverlay runs `kubectl apply -k` with a server-side dry run and checks that kubectl
// reports every rendered object as accepted.
func applyOverlay(t *testing.T, env *testenv.Env, k kustomization) {
	t.Helper()
	stdout, stderr := run(t, env.Kubectl("apply", "-k", k.dir, "--dry-run=server"))
	var refs []string
	for _, r := range render(t, k).Resources() {
		refs = append(refs, objectRef(r.GetKind(), r.GetGvk().ApiVersion(), r.GetName()))
	}
	checkApplied(t, refs, stdout, stderr)
}

// objectRef is how kubectl names an object in its output: kind.group/name.
func objectRef(kind, apiVersion, name string) string {
	ref := strings.ToLower(kind)
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		ref += "." + g
	}
	return ref + "/" + name
}

// checkApplied checks that kubectl reports every object as accepted, with no warning.
func checkApplied(t *testing.T, refs []string, stdout, stderr string) {
	t.Helper()
	for _, ref := range refs {
		assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(ref)+` (created|configured|unchanged) \(server dry run\)$`, stdout)
	}
	// testenv installed the CRD without kubectl, so kubectl warns that it cannot compute a
	// three-way merge for it; any other warning (Pod Security, deprecated API) is a defect.
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if line == "" {
			continue
		}
		assert.Regexp(t, `^Warning: resource customresourcedefinitions/flinkclusters\.flinkoperator\.k8s\.io is missing the kubectl\.kubernetes\.io/last-applied-configuration annotation`, line)
	}
}

// run runs a command and returns its stdout and stderr, failing the test when it fails.
func run(t *testing.T, cmd *exec.Cmd) (string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "%s\nstdout:\n%s\nstderr:\n%s", strings.Join(cmd.Args, " "), stdout.String(), stderr.String())
	t.Logf("%s\n%s%s", strings.Join(cmd.Args, " "), stdout.String(), stderr.String())
	return stdout.String(), stderr.String()
}

// certManagerCRDDir is where the cert-manager Go module (a dependency) ships its CRDs as
// plain YAML.
func certManagerCRDDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cert-manager/cert-manager").Output()
	require.NoError(t, err, "locating the cert-manager module")
	dir := filepath.Join(strings.TrimSpace(string(out)), "deploy", "crds")
	require.DirExists(t, dir)
	return dir
}

// rootDeployment violates the restricted Pod Security Standard.
const rootDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: runs-as-root
  namespace: flink-admission-system
spec:
  selector:
    matchLabels: {app: runs-as-root}
  template:
    metadata:
      labels: {app: runs-as-root}
    spec:
      containers:
      - name: c
        image: busybox
`
