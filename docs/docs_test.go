package docs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The documentation tests. Each one compares what the docs say with the program:
//
//   - TestConsoleBlocks runs every `$ flink-admission check ...` of a console block and
//     compares its output and exit status with the block (console_test.go);
//   - TestFlagTables compares the flag tables of configuration.md with the flags of serve,
//     dev and check (flags_test.go);
//   - TestMakeTargets, TestRepositoryPaths and TestKustomizeDirectories check every make
//     target, repository path, link and kustomization the docs name (references_test.go);
//   - TestPolicyReference and friends check policy.md against package policy, the CRD's CEL
//     rules and package check (policy_test.go);
//   - TestMetricsDocumented checks operations.md against the metrics the webhook and the
//     controller define (metrics_test.go).

// repoRoot is the repository root (the parent of this package's directory), absolute.
var repoRoot string

// binDir holds the flink-admission binary built for the tests, put first in PATH of the
// commands the docs show.
var binDir string

// binary is the path of the flink-admission binary in binDir.
var binary string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	repoRoot = filepath.Dir(wd)
	if binDir, err = os.MkdirTemp("", "flink-admission-docs-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(binDir)
	binary = filepath.Join(binDir, "flink-admission")

	// Built once for every test that runs the program; the build cache makes it quick when
	// nothing changed, and without debug information (-s -w) linking takes a third less.
	// With the dev command (-tags dev, as `make run` builds), whose flags the docs list too.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-tags", "dev", "-ldflags=-s -w", "-o", binary, "./cmd/flink-admission")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building flink-admission: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// commandEnv is the environment of the commands the docs show: the test binary first in
// PATH, and no POD_NAMESPACE (a default of `serve`) leaking in from the machine.
func commandEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PATH=") || strings.HasPrefix(kv, "POD_NAMESPACE=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// runShell runs a command line as the docs show it, with bash in the repository root, and
// returns its combined output (in the order written) and exit status.
func runShell(t *testing.T, command string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir = repoRoot
	cmd.Env = commandEnv()
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s: timed out", command)
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &exitErr):
		return out.String(), exitErr.ExitCode()
	default:
		t.Fatalf("%s: %v", command, err)
		return "", -1
	}
}
