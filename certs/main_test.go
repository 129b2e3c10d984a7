package certs

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

// The API server is started by the first test that needs it, so that the pure and file tests
// run without it (go test -run File), and stopped once all tests are done.
var (
	envOnce sync.Once
	env     *testenv.Env
	envErr  error
)

// apiServer returns a clientset for a real kube-apiserver (envtest).
func apiServer(t *testing.T) kubernetes.Interface {
	t.Helper()
	envOnce.Do(func() { env, envErr = testenv.Start(testenv.Options{WithoutCRD: true}) })
	require.NoError(t, envErr, "starting kube-apiserver and etcd (KUBEBUILDER_ASSETS)")
	client, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	return client
}

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the API server:", err)
		}
	}
	os.Exit(code)
}
