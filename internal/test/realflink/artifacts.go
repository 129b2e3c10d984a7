package realflink

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
)

// Versions are the Flink releases the conformance suite runs, newest last.
var Versions = []string{"2.2.1", "2.3.0"}

// JobsJarInImage is where the FlinkClusters of the tests name the jar of the test jobs
// (spec.job.jarFile), as if it were in their image; the Launcher links it there. Flink's
// application entrypoint loads the entry class from the jars of usrlib/ (beside lib/), not
// from --jars.
const JobsJarInImage = "/opt/flink/usrlib/flink-admission-test-jobs.jar"

// The classes of the test jobs (internal/test/realflink/jobs).
const (
	// CountingJob is a stateful streaming job that reports what it restored (Report).
	CountingJob = "dev.flinkadmission.testjobs.Counting"
	// FiniteJob processes --records records and finishes.
	FiniteJob = "dev.flinkadmission.testjobs.Finite"
	// ThrowingMainJob's main() throws before it submits a job.
	ThrowingMainJob = "dev.flinkadmission.testjobs.ThrowingMain"
)

// module is the module path the repository's go.mod declares.
const module = "github.com/flink-admission/flink-admission"

// repoRoot is the repository's root: the script and the test jobs' sources are read from it.
// Tests find it from this file's location; a binary built with -trimpath (make run's) knows
// no such location, and looks for the repository from its working directory up.
func repoRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", "..")), nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return findRepo(dir)
}

// findRepo is the nearest directory from dir up whose go.mod declares this module.
func findRepo(dir string) (string, error) {
	for {
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && declaresModule(mod) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("real Flink builds its test jobs from the flink-admission repository's sources: run it inside a clone (no go.mod of %s in this directory or above)", module)
		}
		dir = parent
	}
}

// declaresModule reports whether mod, a go.mod file, declares this repository's module.
func declaresModule(mod []byte) bool {
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == module
		}
	}
	return false
}

// script runs hack/flink-artifacts.sh with args and returns what it printed, its progress
// going to progress.
func script(progress io.Writer, args ...string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("bash", append([]string{filepath.Join(root, "hack", "flink-artifacts.sh")}, args...)...)
	cmd.Stderr = progress
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("hack/flink-artifacts.sh %s (it needs Java 17 and Maven with Maven Central): %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Artifacts resolves Flink's jars from Maven Central (once, cached outside the repository).
type Artifacts struct {
	// Progress receives the script's progress lines; os.Stderr when nil.
	Progress io.Writer

	mu   sync.Mutex
	libs map[string]string
	jobs string
}

func (a *Artifacts) progress() io.Writer {
	if a.Progress == nil {
		return os.Stderr
	}
	return a.Progress
}

// Lib returns the directory holding every jar of Flink version (a JobManager's and a
// TaskManager's classpath), fetching them on first use.
func (a *Artifacts) Lib(version string) (string, error) {
	if !releasePattern.MatchString(version) {
		return "", fmt.Errorf("flink version %q: want a release such as 2.2.1", version)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if dir, ok := a.libs[version]; ok {
		return dir, nil
	}
	dir, err := script(a.progress(), version)
	if err != nil {
		return "", err
	}
	if a.libs == nil {
		a.libs = map[string]string{}
	}
	a.libs[version] = dir
	return dir, nil
}

// JobsJar returns the jar of the test jobs, built with Maven on first use.
func (a *Artifacts) JobsJar() (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.jobs != "" {
		return a.jobs, nil
	}
	jar, err := script(a.progress(), "--jobs")
	if err != nil {
		return "", err
	}
	a.jobs = jar
	return jar, nil
}

// releasePattern is a Flink release as Maven Central names it.
var releasePattern = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// imageVersion is the Flink release an image runs, from its tag ("flink:2.2.1",
// "flink:2.3.0-java17", "registry/flink:2.2.1-scala_2.12"): the tag's leading release.
func imageVersion(image string) (string, error) {
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return "", fmt.Errorf("image %q has no tag naming its Flink release", image)
	}
	tag := image[i+1:]
	if m := leadingRelease.FindString(tag); m != "" {
		return m, nil
	}
	return "", fmt.Errorf("image %q: its tag does not start with a Flink release (such as 2.2.1)", image)
}

var leadingRelease = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+`)

// tailBytes keeps the last n bytes written to it, for a failed command's message.
type tailBytes struct {
	n   int
	buf bytes.Buffer
}

func (t *tailBytes) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if over := t.buf.Len() - t.n; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}
