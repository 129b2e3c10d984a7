package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

// TestUpgradeCommands runs the console blocks of install.md's "Moving between installs", as
// written, with kubectl against a real API server, in the order a cluster could go through
// them: from the flink-on-k8s-operator's webhook to flink-admission (self-signed), from there
// to the admission policy, and back to the webhook install. After each block it checks what
// is installed, and that the FlinkCluster stored at the start is still there.
//
// The API server runs without kube-controller-manager, so nothing finishes a namespace's
// deletion: `kubectl delete namespace` is run without waiting (a kubectl wrapper adds
// --wait=false), and the test then finalizes the namespace as its controller would.
func TestUpgradeCommands(t *testing.T) {
	doc := readDoc(t, "docs/install.md")
	secs := doc.sectionsUnder("Moving between installs")
	require.NotEmpty(t, secs, "install.md has no section \"Moving between installs\"")
	var blocks [][]consoleCommand
	for _, s := range secs {
		for _, b := range s.blocks {
			if b.lang() == "console" {
				blocks = append(blocks, parseConsole(b))
			}
		}
	}
	require.Len(t, blocks, 3, "webhook → policy, policy → webhook, operator → flink-admission")
	toPolicy, toWebhook, fromOperator := blocks[0], blocks[1], blocks[2]

	env, err := testenv.Start(testenv.Options{WithoutCRD: true})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })
	kubectl := func(args ...string) string {
		t.Helper()
		out, err := env.Kubectl(args...).CombinedOutput()
		require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	exists := func(resource string) bool {
		t.Helper()
		out, err := env.Kubectl("get", resource, "--ignore-not-found", "-o", "name").CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.TrimSpace(string(out)) != ""
	}
	wrapper := kubectlWrapper(t)
	runBlock := func(cmds []consoleCommand) {
		t.Helper()
		for _, c := range cmds {
			require.True(t, strings.HasPrefix(c.command, "kubectl "), "line %d: only kubectl commands: %q", c.line, c.command)
			cmd := exec.Command("bash", "-c", c.command)
			cmd.Dir = repoRoot
			cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "PATH="+wrapper+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "line %d: %s\n%s", c.line, c.command, out)
			t.Logf("$ %s\n%s", c.command, out)
		}
	}

	// The starting point: the operator's CRD (here, this one: a superset) with a stored
	// cluster, and the operator's two webhook configurations.
	kubectl("apply", "-k", filepath.Join(repoRoot, "deploy", "crd"))
	require.NoError(t, env.WaitEstablished("flinkclusters.flinkoperator.k8s.io", 2*time.Minute))
	kubectl("apply", "-f", filepath.Join(repoRoot, "docs", "testdata", "flink-operator-webhooks.yaml"))
	kubectl("apply", "-n", "default", "-f", filepath.Join(repoRoot, "deploy", "samples", "job-mode.yaml"))
	cluster := "flinkcluster/" + strings.TrimSpace(kubectl("get", "-n", "default", "flinkclusters", "-o", "jsonpath={.items[0].metadata.name}"))
	clusterKept := func() { t.Helper(); assert.True(t, existsIn(t, env, "default", cluster), "%s is kept", cluster) }

	t.Run("from the flink-on-k8s-operator's webhook", func(t *testing.T) {
		runBlock(fromOperator)
		assert.False(t, exists("mutatingwebhookconfiguration/flink-operator-mutating-webhook-configuration"))
		assert.False(t, exists("validatingwebhookconfiguration/flink-operator-validating-webhook-configuration"))
		assert.True(t, exists("mutatingwebhookconfiguration/flink-admission"))
		assert.True(t, exists("validatingwebhookconfiguration/flink-admission"))
		assert.True(t, existsIn(t, env, "flink-admission-system", "deployment/flink-admission"))
		clusterKept()
	})

	t.Run("from a webhook install to the admission policy", func(t *testing.T) {
		runBlock(toPolicy)
		assert.True(t, exists("mutatingadmissionpolicy/flink-admission-deployment-defaults"))
		assert.True(t, exists("mutatingadmissionpolicybinding/flink-admission-deployment-defaults"))
		assert.False(t, exists("mutatingwebhookconfiguration/flink-admission"))
		assert.False(t, exists("validatingwebhookconfiguration/flink-admission"))
		for _, o := range []string{"clusterrole/flink-admission", "clusterrole/flink-admission-controller", "clusterrole/flink-admission-metrics-reader",
			"clusterrolebinding/flink-admission", "clusterrolebinding/flink-admission-controller", "priorityclass/flink-admission-critical"} {
			assert.False(t, exists(o), o)
		}
		assert.Contains(t, kubectl("get", "namespace", "flink-admission-system", "-o", "jsonpath={.status.phase}"), "Terminating")
		clusterKept()
		// What the namespace controller does once the namespace is empty.
		finalizeNamespace(t, env, "flink-admission-system")
	})

	t.Run("from the admission policy to a webhook install", func(t *testing.T) {
		runBlock(toWebhook)
		assert.False(t, exists("mutatingadmissionpolicy/flink-admission-deployment-defaults"))
		assert.False(t, exists("mutatingadmissionpolicybinding/flink-admission-deployment-defaults"))
		assert.True(t, exists("mutatingwebhookconfiguration/flink-admission"))
		assert.True(t, existsIn(t, env, "flink-admission-system", "deployment/flink-admission"))
		clusterKept()
	})
}

func existsIn(t *testing.T, env *testenv.Env, ns, resource string) bool {
	t.Helper()
	out, err := env.Kubectl("get", "-n", ns, resource, "--ignore-not-found", "-o", "name").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return strings.TrimSpace(string(out)) != ""
}

// finalizeNamespace removes a terminating namespace's finalizer, as the namespace controller
// does once it has deleted its content.
func finalizeNamespace(t *testing.T, env *testenv.Env, ns string) {
	t.Helper()
	for _, kind := range []string{"deployments", "services", "serviceaccounts", "poddisruptionbudgets", "roles", "rolebindings", "secrets"} {
		out, err := env.Kubectl("delete", "-n", ns, kind, "--all", "--wait=false").CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	finalize := exec.Command("bash", "-c",
		`kubectl get namespace "$NS" -o json | sed 's/"kubernetes"//' | kubectl replace --raw "/api/v1/namespaces/$NS/finalize" -f -`)
	finalize.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "NS="+ns)
	out, err := finalize.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Eventually(t, func() bool { return !existsNamespace(env, ns) }, time.Minute, 200*time.Millisecond, "namespace %s finalized", ns)
}

func existsNamespace(env *testenv.Env, ns string) bool {
	out, err := env.Kubectl("get", "namespace", ns, "--ignore-not-found", "-o", "name").CombinedOutput()
	return err != nil || strings.TrimSpace(string(out)) != ""
}

// kubectlWrapper is a directory with a kubectl that runs the real one, adding --wait=false
// to `kubectl delete namespace` (nothing finishes a namespace's deletion here).
func kubectlWrapper(t *testing.T) string {
	t.Helper()
	real, err := exec.LookPath("kubectl")
	require.NoError(t, err)
	dir := t.TempDir()
	script := `#!/usr/bin/env bash
for a in "$@"; do
  if [[ "$a" == namespace || "$a" == namespaces || "$a" == ns ]] && [[ " $* " == *" delete "* ]]; then
    exec "` + real + `" "$@" --wait=false
  fi
done
exec "` + real + `" "$@"
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kubectl"), []byte(script), 0o755))
	return dir
}
