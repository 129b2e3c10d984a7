// Command bench is `make bench`: it measures the admission path in process, over HTTPS and
// through a real kube-apiserver, the server's memory and the CEL rules' costs, prints one
// table and writes a JSON copy under .bench/ (see package hack/bench/bench). BENCH_QUICK=1
// runs every piece with small counts.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/flink-admission/flink-admission/hack/bench/bench"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The control plane's and the clients' logs: errors only, on stderr (the progress
	// stream), so that the table on stdout stays alone.
	level, _ := server.ParseLogLevel("error")
	server.SetGlobalLogger(server.NewLogger(level, os.Stderr))
	cfg, err := bench.ConfigFromEnv(testenv.RepoRoot())
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	}
	report, runErr := bench.Run(ctx, cfg)
	path, err := report.Write(cfg.OutDir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: writing the report: %v\n", err)
		os.Exit(1)
	}
	fmt.Println()
	if err := report.WriteMarkdown(os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("\nJSON copy: %s\n", path)
	if runErr != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", runErr)
		os.Exit(1)
	}
}
