package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/server"
	"github.com/flink-admission/flink-admission/webhook"
)

// helperServeEnv makes the test binary act as `flink-admission serve` (the helper-process
// pattern), so that StartServe is tested on the real server without building the binary.
const helperServeEnv = "FLINK_ADMISSION_BENCH_HELPER_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(helperServeEnv) == "1" {
		os.Exit(helperServe(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helperServe runs the server with the flags of `flink-admission serve` until SIGTERM.
func helperServe(args []string) int {
	if len(args) == 0 || args[0] != "serve" {
		fmt.Fprintf(os.Stderr, "helper: want serve [flags], got %q\n", args)
		return 2
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var o server.Options
	o.BindFlags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := server.Run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// unreachableKubeconfig points at a port nobody listens on: the webhook server with the
// controller off never calls the API server.
const unreachableKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {token: none}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
`

func TestServeAdmitsTheHTTPSReviewsAndStops(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(unreachableKubeconfig), 0o600))
	cert, err := WriteServingCert(dir)
	require.NoError(t, err)
	log, err := os.Create(filepath.Join(dir, "serve.log"))
	require.NoError(t, err)
	defer log.Close()
	self, err := os.Executable()
	require.NoError(t, err)
	t.Setenv(helperServeEnv, "1")

	srv, err := StartServe(t.Context(), ServeOptions{Binary: self, Kubeconfig: kubeconfig, Cert: cert, Log: log}, time.Minute)
	if err != nil {
		out, _ := os.ReadFile(log.Name())
		t.Fatalf("%v\nserver output:\n%s", err, out)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = srv.Stop()
		}
	}()
	mem, err := ReadMemory(srv.Pid())
	require.NoError(t, err)
	assert.Positive(t, mem.RSS)

	reviews, err := HTTPSReviews()
	require.NoError(t, err)
	clientTLS, err := cert.ClientTLS()
	require.NoError(t, err)
	runs, err := RunHTTPS(t.Context(), HTTPSOptions{
		BaseURL: srv.WebhookURL, TLS: clientTLS, Reviews: reviews,
		Concurrency: []int{1, 4}, Requests: map[int]int{1: 3, 4: 8}, Warmup: 1,
	})
	require.NoError(t, err)
	require.Len(t, runs, 4)
	for _, r := range runs {
		assert.Empty(t, r.Errors, "%s c=%d: %v", r.Review, r.Concurrency, r.ErrorSamples)
	}

	// Every review went through controller-runtime's instrumented webhook; per path, at each
	// level, a warm-up of max(Warmup, c) requests, then the measured ones: (1+3) + (4+8).
	for _, path := range []string{webhook.ValidatePath, webhook.MutatePath} {
		n, err := srv.Counter(t.Context(), "controller_runtime_webhook_requests_total", map[string]string{"webhook": path, "code": "200"})
		require.NoError(t, err)
		assert.Equal(t, float64(1+3+4+8), n, path)
	}

	stopped = true
	require.NoError(t, srv.Stop(), "SIGTERM stops the server gracefully")
}

// TestRunControllerRefusesAnUnmeasurableRun guards the options that would measure nothing:
// no cluster, or a steady window that can fall between two Flink polls and count none.
func TestRunControllerRefusesAnUnmeasurableRun(t *testing.T) {
	for name, o := range map[string]ControllerOptions{
		"no cluster":                         {Clusters: 0, SteadyWindow: time.Minute},
		"a window shorter than a poll cycle": {Clusters: 3, SteadyWindow: controller.DefaultSteadyPollInterval / 2},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := RunController(t.Context(), o)
			require.Error(t, err)
		})
	}
}
