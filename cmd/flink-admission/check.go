package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/flink-admission/flink-admission/check"
)

// Exit codes of `flink-admission check`, as CI pipelines read them.
const (
	exitAllowed = 0
	exitDenied  = 1
	exitUsage   = 2
)

// stringList is a repeatable flag: each use adds one value, commas included.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
func (s *stringList) Type() string       { return "value" }

// runCheck implements `flink-admission check -f PATH... [--old PATH] [-o text|json|yaml|sarif|junit]`.
func runCheck(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("check", stderr)
	var files, olds stringList
	fs.VarP(&files, "filename", "f", "manifest file, directory (recursive: *.yaml, *.yml, *.json) or - for stdin; repeatable")
	fs.Var(&olds, "old", "the previous version of the manifests (file, directory or -): matching objects (namespace and name) are checked as an update; repeatable")
	output := fs.StringP("output", "o", "text", "output format: text, json, yaml, sarif (SARIF 2.1.0, for code scanning) or junit (JUnit XML, for test reports)")
	namespace := fs.StringP("namespace", "n", "default", "namespace for manifests without metadata.namespace")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: flink-admission check -f PATH... [--old PATH...] [-o text|json|yaml|sarif|junit] [-n NAMESPACE]")
		fmt.Fprintln(stderr, "Runs the admission policy offline: exit 0 when every FlinkCluster is allowed, 1 when any is denied, 2 for a usage or parse error.")
		printFlags(fs.Output(), fs)
	}
	if code, done := parseArgs(fs, args, stderr); done {
		return code
	}
	files = append(files, fs.Args()...)
	if len(files) == 0 {
		fmt.Fprintln(stderr, "check: no manifests given: use -f PATH (a file, a directory or - for stdin)")
		return exitUsage
	}
	if !slices.Contains(check.Formats, *output) {
		fmt.Fprintf(stderr, "check: unknown output format %q: use one of %s\n", *output, strings.Join(check.Formats, ", "))
		return exitUsage
	}
	stdinUsed := countStdin(files) + countStdin(olds)
	if stdinUsed > 1 {
		fmt.Fprintln(stderr, "check: standard input (-) can be read only once")
		return exitUsage
	}

	docs, skipped, err := check.Load(files, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "check: %v\n", err)
		return exitUsage
	}
	var oldDocs []check.Document
	if len(olds) > 0 {
		oldDocs, _, err = check.Load(olds, stdin)
		if err != nil {
			fmt.Fprintf(stderr, "check: --old: %v\n", err)
			return exitUsage
		}
	}
	checker, err := check.New(*namespace)
	if err != nil {
		fmt.Fprintf(stderr, "check: %v\n", err)
		return exitUsage
	}
	results := checker.Run(ctx, docs, oldDocs)
	if err := check.Write(stdout, *output, results, skipped); err != nil {
		fmt.Fprintf(stderr, "check: %v\n", err)
		return exitUsage
	}
	if !check.AllAllowed(results) {
		return exitDenied
	}
	return exitAllowed
}

func countStdin(paths []string) int {
	n := 0
	for _, p := range paths {
		if p == "-" {
			n++
		}
	}
	return n
}
