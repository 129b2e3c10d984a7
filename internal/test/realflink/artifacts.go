package realflink

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

// Versions are the Flink releases the conformance suite runs, oldest first: 1.20, the LTS
// release the samples use (Central serves its flink-container at 1.20.0 only), then 2.x.
var Versions = []string{"1.20.0", "2.2.1", "2.3.0"}

// Default is the release make test's conformance subset and the differential test run.
const Default = "2.2.1"

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

// script runs hack/flink-artifacts.sh with args and returns what it printed, its progress
// going to progress.
func script(progress io.Writer, args ...string) (string, error) {
	// Real Flink builds its test jobs from the repository's sources.
	root, err := testenv.LocateRepo()
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
