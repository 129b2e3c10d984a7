package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/flink-admission/flink-admission/internal/devenv"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/server"
)

// dev is the local setup every test talks to: kube-apiserver, etcd, the CRD, both webhook
// configurations and the server, started as `flink-admission dev` starts them.
var dev *devenv.Dev

// The flink-admission binary, built in the background while the control plane starts.
var (
	binPath  string
	binErr   error
	binBuilt = make(chan struct{})
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "flink-admission-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	go buildBinary(tmp)
	defer func() { <-binBuilt }() // never leave a go build running

	// Errors only: the tests read what kubectl prints, not the server's log.
	log := server.NewLogger(zapcore.ErrorLevel, os.Stderr)
	server.SetGlobalLogger(log)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a cold build of kube-apiserver
	defer cancel()
	dev, err = devenv.StartDev(ctx, devenv.DevOptions{
		MetricsBindAddress:     "0",
		HealthProbeBindAddress: "127.0.0.1:0",
		LogLevel:               "error",
		Log:                    log,
		Progress:               os.Stderr,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the local setup: %v\n", err)
		return 1
	}
	code := m.Run()
	if err := dev.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the local setup: %v\n", err)
		code = 1
	}
	return code
}

// buildBinary builds ./cmd/flink-admission into dir with the dev command, as `make run` does.
func buildBinary(dir string) {
	defer close(binBuilt)
	path := filepath.Join(dir, "flink-admission")
	cmd := exec.Command("go", "build", "-tags", "dev", "-o", path, "./cmd/flink-admission")
	cmd.Dir = testenv.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		binErr = fmt.Errorf("go build -tags dev ./cmd/flink-admission: %w\n%s", err, out)
		return
	}
	binPath = path
}

// binary waits for the build and returns the path of the flink-admission binary.
func binary(t *testing.T) string {
	t.Helper()
	<-binBuilt
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}
