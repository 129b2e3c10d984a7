package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// result is what one kubectl run printed.
type result struct {
	stdout, stderr string
	exitCode       int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.exitCode, withNewline(r.stdout), r.stderr)
}

func withNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}

// kubectl runs kubectl against the local API server as a cluster admin.
func kubectl(t *testing.T, args ...string) result {
	t.Helper()
	return runCommand(t, dev.Env.Kubectl(args...), "kubectl "+strings.Join(args, " "))
}

// runCommand runs cmd, logs it as line with what it printed, and returns the result; a
// non-zero exit is a result, a command that cannot start fails the test.
func runCommand(t *testing.T, cmd *exec.Cmd, line string) result {
	t.Helper()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.exitCode = exit.ExitCode()
	case err != nil:
		t.Fatalf("running %s: %v", line, err)
	}
	t.Logf("$ %s\n%s", line, r)
	return r
}

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	cs := clientset(t)
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-", Labels: labels},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

func clientset(t *testing.T) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(dev.Env.Config)
	require.NoError(t, err)
	return cs
}

// crClient is a controller-runtime client that knows FlinkCluster.
func crClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(dev.Env.Config, client.Options{Scheme: dev.Server.Manager.GetScheme()})
	require.NoError(t, err)
	return c
}

// writeManifest writes a manifest into the test's temporary directory and returns its path.
func writeManifest(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// sample returns the path of one of deploy/samples.
func sample(name string) string { return dev.Sample(name) }

// readSample decodes one of deploy/samples.
func readSample(t *testing.T, name string) *v1beta1.FlinkCluster {
	t.Helper()
	raw, err := os.ReadFile(sample(name))
	require.NoError(t, err)
	fc := &v1beta1.FlinkCluster{}
	require.NoError(t, yaml.UnmarshalStrict(raw, fc))
	return fc
}

// eventually retries f every 200 ms until it returns nil or timeout passes, and fails the
// test with f's last error.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
