package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/server"
)

// TestServeWithControllerAndLeaderElection runs `flink-admission serve` as the self-signed
// overlay does (controller and leader election on, their defaults) against the API server:
// it turns ready, creates its CA Secret, wins the Lease, starts the controller on it, and on
// SIGTERM exits 0 and releases the Lease for the next replica. Names differ from the local
// setup's so that the two servers do not share a CA or webhook configurations.
func TestServeWithControllerAndLeaderElection(t *testing.T) {
	bin := binary(t)
	ns := newNamespace(t, nil)
	metricsPort, healthPort := freePort(t), freePort(t)
	proc := startServe(t, bin,
		"--cert-mode=self-signed",
		"--namespace="+ns,
		"--ca-secret-name=e2e-serve-ca",
		"--mutating-webhook-configuration=e2e-serve-none",
		"--validating-webhook-configuration=e2e-serve-none",
		"--webhook-port="+strconv.Itoa(freePort(t)),
		"--metrics-bind-address=127.0.0.1:"+strconv.Itoa(metricsPort),
		// Plain HTTP on loopback: the test reads /metrics without a token.
		"--metrics-secure=false",
		"--health-probe-bind-address=127.0.0.1:"+strconv.Itoa(healthPort),
		"--kubeconfig="+dev.Env.Kubeconfig,
	)
	eventually(t, 60*time.Second, "serve is ready", func() error {
		return httpOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
	})
	require.NoError(t, httpOK(fmt.Sprintf("http://127.0.0.1:%d/healthz", healthPort)))

	cs := clientset(t)
	ctx := context.Background()
	_, err := cs.CoreV1().Secrets(ns).Get(ctx, "e2e-serve-ca", metav1.GetOptions{})
	require.NoError(t, err, "the CA Secret is created in --namespace")

	eventually(t, 60*time.Second, "the Lease is held", func() error {
		lease, err := cs.CoordinationV1().Leases(ns).Get(ctx, server.LeaderElectionID, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return fmt.Errorf("no holder")
		}
		return nil
	})
	eventually(t, 60*time.Second, "the controller runs on the leader", func() error {
		metrics, err := httpBody(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
		if err != nil {
			return err
		}
		if !strings.Contains(metrics, `controller_runtime_active_workers{controller="flinkcluster"}`) {
			return fmt.Errorf("no flinkcluster controller metrics yet")
		}
		return nil
	})

	require.NoError(t, proc.Process.Signal(syscall.SIGTERM))
	require.NoError(t, waitExit(proc, 60*time.Second), "serve exits 0 on SIGTERM")
	lease, err := cs.CoordinationV1().Leases(ns).Get(ctx, server.LeaderElectionID, metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "",
		"the Lease is released on shutdown, so another replica takes over at once")
}

func httpBody(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
