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

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/devenv"
	"github.com/flink-admission/flink-admission/internal/test/flinksim"
	"github.com/flink-admission/flink-admission/server"
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

// runDev implements `flink-admission dev`: a local control plane (kube-apiserver, etcd,
// kube-controller-manager, kube-scheduler, KWOK nodes) with the CRD and both webhook
// configurations, served by this process, the controller and a simulated Flink, until Ctrl-C.
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("dev", stderr)
	var o devenv.DevOptions
	var flinkMode string
	fs.StringVar(&o.KubeconfigOut, "kubeconfig-out", defaultKubeconfigOut, "where to write the kubeconfig of the local control plane (removed on exit)")
	fs.IntVar(&o.WebhookPort, "webhook-port", 0, "port of the webhook server on 127.0.0.1 (0: a free port)")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", "127.0.0.1:0", "address of /metrics (port 0: a free port; 0: off)")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", "127.0.0.1:0", "address of /healthz and /readyz (port 0: a free port; 0: off)")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log level: error, info, debug, or a number N for V(N) verbosity")
	fs.BoolVar(&o.ControlPlane, "control-plane", true,
		"run kube-controller-manager, kube-scheduler and KWOK nodes beside kube-apiserver and etcd, so that JobManager pods are created and run (off: the API server and etcd only)")
	fs.IntVar(&o.Nodes, "nodes", devenv.DefaultDevNodes, "how many KWOK nodes the control plane has")
	fs.BoolVar(&o.EnableController, "enable-controller", true, "run the FlinkCluster controller (off: the webhooks only)")
	fs.BoolVar(&o.SimulateFlink, "simulate-flink", true,
		"attach a simulated Flink JobManager to each running JobManager pod and point the controller at it, in process (needs --control-plane; off: the controller calls the JobManager Service, which nothing answers)")
	fs.StringVar(&flinkMode, "flink", "simulated",
		"what runs in the JobManager and TaskManager pods: simulated (an in-process simulated Flink JobManager), real (a Flink "+devenv.RealFlinkVersion+" JVM per pod, its jars fetched from Maven Central into the user cache; needs Java 17 and Maven) or none")
	fs.DurationVar(&o.AuditInterval, "audit-interval", 0,
		"how often to audit the stored FlinkClusters, as serve does (0: off)")
	controllerFlags := flag.NewFlagSet("dev", flag.ContinueOnError)
	o.Controller.BindFlags(controllerFlags)
	fs.AddGoFlagSet(controllerFlags)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flink-admission dev [flags]")
		fmt.Fprintln(stderr, "Starts a local control plane (kube-apiserver, etcd, kube-controller-manager, kube-scheduler, KWOK nodes) with the FlinkCluster CRD and both webhook configurations pointing at this process, runs the webhooks, the controller and a simulated Flink JobManager for each JobManager pod, and prints kubectl commands to try. Ctrl-C stops everything.")
		printFlags(fs.Output(), fs)
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	if _, err := server.ParseLogLevel(o.LogLevel); err != nil {
		fmt.Fprintf(stderr, "dev: %v\n", err)
		return exitUsage
	}
	if o.AuditInterval < 0 {
		fmt.Fprintf(stderr, "dev: --audit-interval %s is negative (0 turns the audit off)\n", o.AuditInterval)
		return exitUsage
	}
	switch flinkMode {
	case "simulated":
	case "real":
		if fs.Changed("simulate-flink") && o.SimulateFlink {
			fmt.Fprintln(stderr, "dev: --flink=real and --simulate-flink exclude each other")
			return exitUsage
		}
		o.SimulateFlink, o.RealFlink = false, true
	case "none":
		o.SimulateFlink = false
	default:
		fmt.Fprintf(stderr, "dev: --flink %q: want simulated, real or none\n", flinkMode)
		return exitUsage
	}
	if err := checkDevFlags(fs, &o); err != nil {
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
		fmt.Fprintln(stderr, "stopping the server and the control plane")
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

// checkDevFlags rejects settings that cannot work together. The simulated Flink needs pods
// that run: without --control-plane it is off, unless asked for explicitly, which is an error.
func checkDevFlags(fs *pflag.FlagSet, o *devenv.DevOptions) error {
	if o.Nodes < 1 {
		return fmt.Errorf("--nodes %d: the control plane needs at least one node", o.Nodes)
	}
	if !o.ControlPlane {
		if o.SimulateFlink && fs.Changed("simulate-flink") {
			return fmt.Errorf("--simulate-flink needs --control-plane: without nodes no JobManager pod runs")
		}
		if o.RealFlink {
			return fmt.Errorf("--flink=real needs --control-plane: without nodes no JobManager pod runs")
		}
		o.SimulateFlink = false
	}
	return nil
}

// printReady prints the ready line and what to try.
func printReady(w io.Writer, d *devenv.Dev) {
	kc := shellQuote(d.Kubeconfig)
	deployment := shellQuote(relToWorkingDir(d.Sample("deployment-mode.yaml")))
	name := sampleName(d.Sample("deployment-mode.yaml"), "statemachine")

	fmt.Fprintln(w, readyLine)
	fmt.Fprintln(w)
	if d.ControlPlane != nil {
		containers := "pods run, no container does"
		if d.Real != nil {
			containers = "pods run, their containers are Flink JVMs on this machine"
		}
		fmt.Fprintf(w, "A local control plane runs: kube-apiserver, etcd, kube-controller-manager, kube-scheduler and\n"+
			"%d KWOK nodes (simulated kubelets: %s).\n", d.Nodes, containers)
	} else {
		fmt.Fprintln(w, "A local kube-apiserver and etcd run (no nodes: no pod runs).")
	}
	fmt.Fprintf(w, "The FlinkCluster CRD is installed and both webhook configurations point at this process.\n")
	switch {
	case d.Server.Options.EnableController && d.Simulation != nil:
		fmt.Fprintln(w, "The controller runs, and every running JobManager pod gets a SIMULATED Flink JobManager\n"+
			"(in this process, no Flink, no network): it runs the job, recovers it from its simulated HA\n"+
			"storage, and takes orders from the pod's simulate.flink-admission.dev/* annotations.")
	case d.Server.Options.EnableController && d.Real != nil:
		fmt.Fprintf(w, "The controller runs, and every running JobManager and TaskManager pod runs a REAL Flink %s JVM\n"+
			"on this machine, bound to the pod's IP (--flink=real); the sample runs the project's stateful test job,\n"+
			"which writes what each start restored to %s.\n",
			devenv.RealFlinkVersion, shellQuote(relToWorkingDir(filepath.Join(d.Real.Dir, "..", "statemachine", "report.jsonl"))))
	case d.Server.Options.EnableController:
		fmt.Fprintln(w, "The controller runs; no simulated Flink (--flink=none): nothing answers its Flink REST calls.")
	default:
		fmt.Fprintln(w, "The controller is off (--enable-controller=false): the webhooks only.")
	}
	fmt.Fprintf(w, `  kubeconfig  %s (removed on exit)
  webhooks    %s%s
              %s%s
              %s%s
`, kc, d.WebhookURL, webhook.MutatePath, d.WebhookURL, webhook.ValidatePath, d.WebhookURL, webhook.ValidateWarnPath)
	if d.MetricsURL != "" {
		fmt.Fprintf(w, "  metrics     %s/metrics\n", d.MetricsURL)
	}
	if d.HealthURL != "" {
		fmt.Fprintf(w, "  health      %s/healthz  %s/readyz\n", d.HealthURL, d.HealthURL)
	}
	if d.LogDir != "" {
		fmt.Fprintf(w, "  logs        %s (kube-controller-manager, kube-scheduler, KWOK nodes; kept on exit)\n", shellQuote(relToWorkingDir(d.LogDir)))
	}
	if d.Real != nil {
		fmt.Fprintf(w, "  flink logs  %s (one file per JVM; kept on exit)\n", shellQuote(relToWorkingDir(d.Real.LogDir())))
	}
	fmt.Fprintf(w, `
Try, from another terminal:

  # Preview what the webhooks do, storing nothing: the shutdown defaults are added
  # (execution.shutdown-on-application-finish, the JobManager's preStop and grace period).
  kubectl --kubeconfig %[1]s apply --dry-run=server -o yaml -f %[2]s

  # Create a valid FlinkCluster (JobManager as a Deployment, with Flink HA).
  kubectl --kubeconfig %[1]s apply -f %[2]s
`, kc, deployment)
	if lifecycle(d) {
		sel := shellQuote(fmt.Sprintf("%s=%s,%s=%s", resources.LabelCluster, name, resources.LabelComponent, resources.ComponentJobManager))
		fmt.Fprintf(w, `
  # Wait for its job to run, then see its job ID and its JobManager pod on a KWOK node.
  kubectl --kubeconfig %[1]s wait flinkcluster/%[2]s --for=jsonpath='{.status.components.job.state}'=Running --timeout=3m
  kubectl --kubeconfig %[1]s get flinkcluster %[2]s -o jsonpath='{.status.components.job.id}{"\n"}'
  kubectl --kubeconfig %[1]s get pods -l %[3]s -o wide

  # Delete the JobManager pod (it ends after its preStop delay, 15 s): the ReplicaSet starts
  # a new one, which recovers the job from HA: the same job ID, Running again.
  kubectl --kubeconfig %[1]s delete pod -l %[3]s
  kubectl --kubeconfig %[1]s wait flinkcluster/%[2]s --for=jsonpath='{.status.components.job.state}'=Running --timeout=3m
  kubectl --kubeconfig %[1]s get flinkcluster %[2]s -o jsonpath='{.status.components.job.id}{"\n"}'

  # Delete the node the JobManager runs on: its pod stays Running in the API until pod
  # garbage collection removes it (about a minute), then the ReplicaSet starts a new one on
  # another node, which recovers the job.
  kubectl --kubeconfig %[1]s delete node "$(kubectl --kubeconfig %[1]s get pods -l %[3]s -o jsonpath='{.items[0].spec.nodeName}')"
  kubectl --kubeconfig %[1]s wait pod -l %[3]s --for=delete --timeout=3m
  kubectl --kubeconfig %[1]s wait flinkcluster/%[2]s --for=jsonpath='{.status.components.job.state}'=Running --timeout=3m
  kubectl --kubeconfig %[1]s get pods -l %[3]s -o wide
`, kc, name, sel)
	}
	if lifecycle(d) && d.Simulation != nil {
		sel := shellQuote(fmt.Sprintf("%s=%s,%s=%s", resources.LabelCluster, name, resources.LabelComponent, resources.ComponentJobManager))
		fmt.Fprintf(w, `
  # Drive the simulated Flink through the JobManager pod's annotations: savepoints fail (or ok)...
  kubectl --kubeconfig %[1]s annotate pod -l %[3]s --overwrite %[4]s=fail
  kubectl --kubeconfig %[1]s annotate flinkcluster %[2]s --overwrite %[5]s=savepoint
  kubectl --kubeconfig %[1]s wait flinkcluster/%[2]s --for=jsonpath='{.status.control.state}'=Failed --timeout=3m
  # ...and the job ends FAILED (or FINISHED, or RUNNING again).
  kubectl --kubeconfig %[1]s annotate pod -l %[3]s --overwrite %[6]s=FAILED
  kubectl --kubeconfig %[1]s wait flinkcluster/%[2]s --for=jsonpath='{.status.components.job.state}'=Failed --timeout=3m
`, kc, name, sel, flinksim.SavepointsAnnotation, v1beta1.ControlAnnotation, flinksim.JobAnnotation)
	}
	fmt.Fprintf(w, `
  # Change its deploymentType: denied (it cannot change after creation).
  kubectl --kubeconfig %[1]s patch flinkcluster %[2]s --type merge -p '{"spec":{"jobManager":{"deploymentType":"Job"}}}'

Press Ctrl-C to stop everything.
`, kc, name)
}

// lifecycle reports whether dev runs everything the lifecycle commands need: nodes, the
// controller and a Flink, simulated or real.
func lifecycle(d *devenv.Dev) bool {
	return d.ControlPlane != nil && d.Server.Options.EnableController && (d.Simulation != nil || d.Real != nil)
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
