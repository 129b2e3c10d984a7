package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestStartInstallsCRD proves the generated CRD — with every CEL rule — is accepted by a real
// API server (cost limits, field paths) and that kubectl reaches the control plane.
func TestStartInstallsCRD(t *testing.T) {
	env, err := Start(Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })

	t.Run("CRD established, kubectl reaches the API server", func(t *testing.T) {
		out, err := env.Kubectl("get", "crd", "flinkclusters.flinkoperator.k8s.io", "-o", "jsonpath={.status.conditions[?(@.type=='Established')].status}").CombinedOutput()
		require.NoError(t, err, "kubectl: %s", out)
		require.Equal(t, "True", strings.TrimSpace(string(out)), "CRD not established")
	})

	// One JobManager Service per FlinkCluster: envtest's default /24 was full at 254.
	t.Run("room for thousands of Services", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cfg := rest.CopyConfig(env.Config)
		cfg.QPS, cfg.Burst = -1, 0 // no client-side throttling: the API server is the limit
		cs, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)

		cidr, err := cs.NetworkingV1().ServiceCIDRs().Get(ctx, "kubernetes", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, []string{ServiceClusterIPRange}, cidr.Spec.CIDRs, "the API server's Service range")

		ns := "services"
		_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		const n = 1000
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(16)
		for i := range n {
			g.Go(func() error {
				svc := &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("jobmanager-%d", i)},
					Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "rpc", Port: 6123}}},
				}
				if i == 0 { // the far end of the range, outside any /24 at its start
					svc.Spec.ClusterIP = "10.0.255.254"
				}
				_, err := cs.CoreV1().Services(ns).Create(gctx, svc, metav1.CreateOptions{})
				return err
			})
		}
		require.NoError(t, g.Wait(), "creating %d Services", n)
		list, err := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list.Items, n)
		for _, s := range list.Items {
			assert.NotEmpty(t, s.Spec.ClusterIP, s.Name)
		}
	})
}

// TestRepoRootHoldsGoMod checks that RepoRoot finds the module's root from this package's
// place in the tree (it counts directories up from its own source file).
func TestRepoRootHoldsGoMod(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(RepoRoot(), "go.mod"))
	if err != nil {
		t.Fatalf("RepoRoot %s: %v", RepoRoot(), err)
	}
	if !strings.HasPrefix(string(data), "module github.com/flink-admission/flink-admission\n") {
		t.Fatalf("RepoRoot %s holds another module's go.mod", RepoRoot())
	}
}

// A binary built with -trimpath (make run's) finds the repository from its working
// directory up, and says what is missing outside one.
func TestFindRepoFromAWorkingDirectory(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("// a comment\nmodule "+module+"\n\ngo 1.25\n"), 0o644))
	deep := filepath.Join(root, "internal", "test")
	require.NoError(t, os.MkdirAll(deep, 0o755))
	got, err := findRepo(deep)
	require.NoError(t, err)
	assert.Equal(t, root, got)

	other := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n"), 0o644))
	_, err = findRepo(other)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "run it inside a clone")
}
