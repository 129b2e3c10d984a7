package certs

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

// The API server is started by the first test that needs it, so that the pure and file tests
// run without it (go test -run File), and stopped once all tests are done.
var (
	envOnce sync.Once
	env     *testenv.Env
	envErr  error
)

// apiServer returns a client for a real kube-apiserver (envtest), made as serve makes it.
func apiServer(t *testing.T) Client {
	t.Helper()
	envOnce.Do(func() { env, envErr = testenv.Start(testenv.Options{WithoutCRD: true}) })
	require.NoError(t, envErr, "starting kube-apiserver and etcd (KUBEBUILDER_ASSETS)")
	client, err := NewClient(env.Config)
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

func TestNewClientRefusesARateWithoutBurst(t *testing.T) {
	_, err := NewClient(&rest.Config{Host: "https://127.0.0.1:1", QPS: 5})
	require.ErrorContains(t, err, "burst")
	_, err = NewClient(&rest.Config{Host: "https://127.0.0.1:1", QPS: 5, Burst: 10})
	require.NoError(t, err, "a rate with a burst")
}
