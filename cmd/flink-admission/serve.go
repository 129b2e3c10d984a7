package main

import (
	"context"
	"fmt"
	"io"

	"github.com/flink-admission/flink-admission/server"
)

// runServe implements `flink-admission serve [flags]`: the webhook server (and the
// controller) until SIGTERM, then a graceful shutdown.
func runServe(ctx context.Context, args []string, stderr io.Writer) int {
	fs := newFlagSet("serve", stderr)
	var o server.Options
	o.AddFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flink-admission serve [flags]")
		fmt.Fprintln(stderr, "Serves the FlinkCluster admission webhooks over HTTPS, and runs the controller on the elected leader, until SIGTERM.")
		printFlags(fs.Output(), fs)
	}
	if code, done := parseFlags(fs, args, stderr); done {
		return code
	}
	if err := o.Validate(); err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return exitUsage
	}
	if err := server.Run(ctx, o); err != nil {
		fmt.Fprintf(stderr, "serve: %v\n", err)
		return 1
	}
	return 0
}
