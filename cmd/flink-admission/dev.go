//go:build dev

// The dev command links envtest (a local kube-apiserver and etcd) and is built only with
// -tags dev (make run): the image's binary must not carry test tooling.

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/cmd/flink-admission/devenv"
	"github.com/flink-admission/flink-admission/cmd/flink-admission/server"
	"github.com/flink-admission/flink-admission/webhook"
)

// defaultKubeconfigOut is where `flink-admission dev` writes the kubeconfig of the local
// control plane (.dev/ is in .gitignore).
const defaultKubeconfigOut = ".dev/kubeconfig"

// readyLine is printed on a line of its own once the local setup admits FlinkClusters;
// scripts and the end-to-end test wait for it.
const readyLine = "ready"

// devBuilt says this binary has the dev command.
const devBuilt = true

// runDev implements `flink-admission dev`: a local kube-apiserver and etcd with the CRD and
// both webhook configurations, served by this process, until Ctrl-C.
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o devenv.DevOptions
	fs.StringVar(&o.KubeconfigOut, "kubeconfig-out", defaultKubeconfigOut, "where to write the kubeconfig of the local control plane (removed on exit)")
	fs.IntVar(&o.WebhookPort, "webhook-port", 0, "port of the webhook server on 127.0.0.1 (0: a free port)")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", "127.0.0.1:0", "address of /metrics (port 0: a free port; 0: off)")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", "127.0.0.1:0", "address of /healthz and /readyz (port 0: a free port; 0: off)")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log level: error, info, debug, or a number N for V(N) verbosity")
	fs.BoolVar(&o.EnableController, "enable-controller", false,
		"run the FlinkCluster controller too (off: the local control plane has no kubelet, so no Flink pod ever runs)")
	o.Controller.BindFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flink-admission dev [flags]")
		fmt.Fprintln(stderr, "Starts a local kube-apiserver and etcd with the FlinkCluster CRD and both webhook configurations pointing at this process, serves them, and prints kubectl commands to try. Ctrl-C stops everything.")
		printFlags(fs.Output(), fs)
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	if _, err := server.ParseLogLevel(o.LogLevel); err != nil {
		fmt.Fprintf(stderr, "dev: %v\n", err)
		return exitUsage
	}
	o.Progress = stderr

	d, err := devenv.StartDev(ctx, o)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "dev: interrupted while starting; everything is stopped")
			return 0
		}
		fmt.Fprintf(stderr, "dev: %v\n", err)
		return 1
	}
	printReady(stdout, d)

	failed := false
	select {
	case <-ctx.Done():
		fmt.Fprintln(stderr, "stopping the server, kube-apiserver and etcd")
	case <-d.Done():
		fmt.Fprintf(stderr, "dev: the server stopped: %v\n", d.Err())
		failed = true
	}
	if err := d.Stop(); err != nil {
		fmt.Fprintf(stderr, "dev: %v\n", err)
		return 1
	}
	if failed {
		return 1
	}
	fmt.Fprintln(stderr, "stopped")
	return 0
}

// printReady prints the ready line and what to try.
func printReady(w io.Writer, d *devenv.Dev) {
	kc := shellQuote(d.Kubeconfig)
	deployment := shellQuote(relToWorkingDir(d.Sample("deployment-mode.yaml")))
	name := sampleName(d.Sample("deployment-mode.yaml"), "statemachine")

	fmt.Fprintln(w, readyLine)
	fmt.Fprintf(w, `
A local kube-apiserver and etcd run with the FlinkCluster CRD, and both webhook
configurations point at this process:
  kubeconfig  %s (removed on exit)
  webhooks    %s%s
              %s%s
`, kc, d.WebhookURL, webhook.MutatePath, d.WebhookURL, webhook.ValidatePath)
	if d.MetricsURL != "" {
		fmt.Fprintf(w, "  metrics     %s/metrics\n", d.MetricsURL)
	}
	if d.HealthURL != "" {
		fmt.Fprintf(w, "  health      %s/healthz  %s/readyz\n", d.HealthURL, d.HealthURL)
	}
	fmt.Fprintf(w, `
Try, from another terminal:

  # Preview what the webhooks do, storing nothing: the shutdown defaults are added
  # (execution.shutdown-on-application-finish, the JobManager's preStop and grace period).
  kubectl --kubeconfig %[1]s apply --dry-run=server -o yaml -f %[2]s

  # Create a valid FlinkCluster (JobManager as a Deployment, with Flink HA).
  kubectl --kubeconfig %[1]s apply -f %[2]s

  # Change its deploymentType: denied (it cannot change after creation).
  kubectl --kubeconfig %[1]s patch flinkcluster %[3]s --type merge -p '{"spec":{"jobManager":{"deploymentType":"Job"}}}'

Press Ctrl-C to stop everything.
`, kc, deployment, name)
}

// sampleName reads metadata.name from a sample manifest, or returns fallback.
func sampleName(path, fallback string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fallback
	}
	var meta metav1.PartialObjectMetadata
	if err := yaml.Unmarshal(raw, &meta); err != nil || meta.Name == "" {
		return fallback
	}
	return meta.Name
}

// relToWorkingDir returns path relative to the working directory when it lies below it (as
// with `make run` from the repository), so the printed commands stay short.
func relToWorkingDir(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(wd, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
