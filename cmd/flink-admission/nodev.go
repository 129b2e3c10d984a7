//go:build !dev

package main

import (
	"context"
	"fmt"
	"io"
)

// devBuilt says this binary has the dev command: not without -tags dev.
const devBuilt = false

// runDev explains how to get the dev command, which this build leaves out so that it links
// no test tooling (envtest).
func runDev(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "dev: this build of flink-admission has no dev command (it would link a local control plane);\n"+
		"build it with `go build -tags dev ./cmd/flink-admission`, or run `make run` in a checkout")
	return exitUsage
}
