package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/tools/benchmark/parse"
)

// benchmarkFunc matches the declaration of a Go benchmark.
var benchmarkFunc = regexp.MustCompile(`(?m)^func Benchmark[A-Z0-9_]\w*\(\w+ \*testing\.B\)`)

// BenchPackages returns the packages under root (as ./relative paths, sorted) whose test
// files declare a benchmark: whatever benchmarks the admission packages have today, under
// whatever names, are run without a list to keep up to date.
func BenchPackages(root string) ([]string, error) {
	var pkgs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "bin" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if benchmarkFunc.Match(src) {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				return err
			}
			pkg := "./" + filepath.ToSlash(rel)
			if rel == "." {
				pkg = "."
			}
			if !slices.Contains(pkgs, pkg) {
				pkgs = append(pkgs, pkg)
			}
		}
		return nil
	})
	slices.Sort(pkgs)
	return pkgs, err
}

// GoBenchOptions configure RunGoBenchmarks.
type GoBenchOptions struct {
	// Root is the module root; Packages the packages to run (BenchPackages).
	Root     string
	Packages []string
	// Filter is the -bench regular expression ("." for all).
	Filter string
	// Benchtime is -benchtime ("1s", "100x"); Go's default when empty.
	Benchtime string
	// Progress receives go test's output as it runs.
	Progress io.Writer
}

// RunGoBenchmarks runs `go test -run '^$' -bench … -benchmem` on the packages and parses the
// results. A package whose benchmarks fail still contributes the lines it printed; the error
// then says which run failed.
func RunGoBenchmarks(ctx context.Context, o GoBenchOptions) ([]GoBenchmark, error) {
	if len(o.Packages) == 0 {
		return nil, fmt.Errorf("no package under %s declares a benchmark", o.Root)
	}
	args := []string{"test", "-run", "^$", "-bench", o.Filter, "-benchmem", "-count", "1"}
	if o.Benchtime != "" {
		args = append(args, "-benchtime", o.Benchtime)
	}
	args = append(args, o.Packages...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = o.Root
	var out bytes.Buffer
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	cmd.Stdout = io.MultiWriter(&out, progress)
	cmd.Stderr = progress
	runErr := cmd.Run()
	results, err := ParseGoBenchmarks(&out, runtime.GOMAXPROCS(0))
	if err != nil {
		return results, err
	}
	if runErr != nil {
		return results, fmt.Errorf("go %s: %w", strings.Join(args, " "), runErr)
	}
	return results, nil
}

// ParseGoBenchmarks reads `go test -bench -benchmem` output: the "pkg:" lines name the
// package of the benchmark lines that follow. The -procs suffix go test appends to names when
// GOMAXPROCS (procs) is above 1 is dropped.
func ParseGoBenchmarks(r io.Reader, procs int) ([]GoBenchmark, error) {
	suffix := ""
	if procs > 1 {
		suffix = "-" + strconv.Itoa(procs)
	}
	var (
		out []GoBenchmark
		pkg string
	)
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		line := s.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		b, err := parse.ParseLine(line)
		if err != nil {
			continue // a benchmark's own log line, or its name alone before the result
		}
		name := strings.TrimSuffix(b.Name, suffix)
		g := GoBenchmark{Package: pkg, Name: name, Iterations: b.N, NsPerOp: b.NsPerOp}
		if b.Measured&parse.AllocedBytesPerOp != 0 {
			g.BytesPerOp = b.AllocedBytesPerOp
		}
		if b.Measured&parse.AllocsPerOp != 0 {
			g.AllocsPerOp = b.AllocsPerOp
		}
		g.Reference = ReferenceFor(pkg, name)
		out = append(out, g)
	}
	return out, s.Err()
}
