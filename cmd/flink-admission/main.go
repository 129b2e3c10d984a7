// Command flink-admission is the admission webhook server and lightweight controller for
// FlinkCluster resources, with a local development mode and an offline policy check.
//
//	flink-admission serve     the webhook server (and the controller) in a cluster
//	flink-admission dev       a local control plane, the CRD, the webhooks and the server, on one machine
//	flink-admission check     the policy offline, for CI pipelines
//	flink-admission audit     the stored clusters of a live cluster, judged by the policy
//	flink-admission version   which build this is
//
// The dev command links a local control plane (envtest), test tooling that the image's
// binary must not carry: it is only in builds with -tags dev, as `make run` builds.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/flink-admission/flink-admission/internal/version"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: flink-admission <command> [flags]

commands:
  serve     run the admission webhook server (and the controller) in a cluster
  dev       run a local control plane with the CRD and webhooks installed, and serve (make run;
            only in builds with -tags dev)
  check     check FlinkCluster manifests offline against the admission policy
  audit     judge the FlinkClusters stored in a cluster by the admission policy, as if created now
  version   print the version and the commit of this build

Run 'flink-admission <command> --help' for the flags of a command.
`

// run dispatches a subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "check":
		return runCheck(ctx, args[1:], stdin, stdout, stderr)
	case "audit":
		return runAudit(ctx, args[1:], stdout, stderr)
	case "serve":
		return runServe(ctx, args[1:], stderr)
	case "dev":
		return runDev(ctx, args[1:], stdout, stderr)
	case "version":
		return runVersion(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
}

// runVersion implements `flink-admission version`.
func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flink-admission version")
		fmt.Fprintln(stderr, "Prints the version and the commit this binary was built from.")
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	fmt.Fprintln(stdout, version.Get())
	return 0
}
