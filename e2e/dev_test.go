package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

// TestDevCommand runs the built binary as `make run` does, but from a directory outside the
// repository (everything dev installs is embedded): `flink-admission dev`, waits for its
// ready line, checks that it printed what README.md's quick start shows (ports aside), runs
// every kubectl command it prints, in order, as a user pastes them — a Deployment-mode
// cluster reaches Running on a KWOK node; its JobManager pod deleted, a new pod runs the same
// job ID; its node deleted, a pod on another node does; the simulated Flink's savepoints fail
// and its job fails on the pod's annotations; the deploymentType change is denied — then
// presses Ctrl-C (SIGINT) and checks that it exits 0 and leaves no control plane process
// running, and no kubeconfig behind.
func TestDevCommand(t *testing.T) {
	bin := binary(t)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, ".dev", "kubeconfig") // the default --kubeconfig-out, as make run
	cmd := exec.Command(bin, "dev", "--log-level", "error")
	cmd.Dir = dir
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(os.Interrupt)
			_ = waitExit(cmd, time.Minute)
		}
		if t.Failed() {
			t.Logf("flink-admission dev stderr:\n%s", stderr.String())
			for _, name := range []string{"kube-controller-manager.log", "kube-scheduler.log"} {
				if raw, err := os.ReadFile(filepath.Join(dir, ".dev", "logs", name)); err == nil {
					t.Logf("%s (tail):\n%s", name, tail(string(raw), 40))
				}
			}
		}
	})

	// Everything up to "Press Ctrl-C", which ends the printed instructions.
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var printed []string
	timeout := time.After(5 * time.Minute)
read:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("dev exited before printing its instructions:\n%s", strings.Join(printed, "\n"))
			}
			printed = append(printed, line)
			if strings.HasPrefix(line, "Press Ctrl-C") {
				break read
			}
		case <-timeout:
			t.Fatalf("no ready line within 5 minutes; printed so far:\n%s", strings.Join(printed, "\n"))
		}
	}
	go func() {
		for range lines { // keep the pipe drained
		}
	}()
	t.Logf("flink-admission dev printed:\n%s", strings.Join(printed, "\n"))
	require.Equal(t, "ready", printed[0], "the first line is the ready line")
	info, err := os.Stat(kubeconfig)
	require.NoError(t, err, "the kubeconfig is written where --kubeconfig-out says")
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "the kubeconfig holds a client key: owner only")
	assert.Equal(t, withoutPorts(readmeReadyBlock(t)), withoutPorts(strings.Join(printed, "\n")),
		"README.md's quick start shows what make run prints (ports aside)")

	children := childProcesses(t, cmd.Process.Pid)
	names := map[string]bool{}
	for _, name := range children {
		names[name] = true
	}
	// Process names as /proc shows them: cut to 15 characters ("kube-controller").
	for _, want := range []string{"kube-apiserver", "etcd", "kube-controller", "kube-scheduler", "kwok"} {
		require.True(t, names[want], "dev runs %s: %v", want, children)
	}

	var commands []string
	for _, line := range printed {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "kubectl ") {
			commands = append(commands, line)
		}
	}
	require.GreaterOrEqual(t, len(commands), 15, "the lifecycle commands are printed: %v", commands)
	var (
		jobIDs      []string
		podListings []string
		deletedNode string
	)
	for _, line := range commands {
		res := shell(t, cmd.Dir, line)
		switch {
		case strings.Contains(line, " patch "):
			assert.Equal(t, 1, res.exitCode, "the deploymentType change is denied")
			assert.Contains(t, res.stderr, "spec.jobManager.deploymentType: Forbidden: deploymentType is immutable")
			continue
		case strings.Contains(line, "--dry-run=server"):
			assert.Contains(t, res.stdout, `execution.shutdown-on-application-finish: "false"`, "the dry run shows the injected defaults")
		case strings.Contains(line, " apply "):
			assert.Contains(t, res.stdout, "created")
		case strings.Contains(line, "job.id"):
			jobIDs = append(jobIDs, strings.TrimSpace(res.stdout))
		case strings.Contains(line, " get pods ") && strings.Contains(line, "-o wide"):
			// The ReplicaSet creates the new pod right after the old one is gone; a listing
			// taken in between shows none, and a user would run it again: so does the test.
			deadline := time.Now().Add(time.Minute)
			for !onePodRunning(res.stdout) && time.Now().Before(deadline) {
				time.Sleep(time.Second)
				res = shell(t, cmd.Dir, line)
			}
			podListings = append(podListings, res.stdout)
		case strings.Contains(line, " delete node "):
			if _, after, ok := strings.Cut(res.stdout, `node "`); ok {
				deletedNode, _, _ = strings.Cut(after, `"`)
			}
		}
		require.Equal(t, 0, res.exitCode, "%s", res)
	}

	require.Len(t, jobIDs, 2)
	assert.NotEmpty(t, jobIDs[0], "the job has an ID once Running")
	assert.Equal(t, jobIDs[0], jobIDs[1], "the job ID is kept when the JobManager pod is replaced")
	require.Len(t, podListings, 2)
	first, last := podLine(t, podListings[0]), podLine(t, podListings[1])
	assert.Contains(t, first, "kwok-node-", "the JobManager pod runs on a KWOK node")
	require.NotEmpty(t, deletedNode, "the node the JobManager ran on was deleted")
	assert.NotContains(t, last, deletedNode+" ", "after its node is deleted, the JobManager runs on another node")
	assert.NotEqual(t, strings.Fields(first)[0], strings.Fields(last)[0], "a new JobManager pod")

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	require.NoError(t, waitExit(cmd, 2*time.Minute), "Ctrl-C is a clean exit (code 0)")
	for pid, name := range children {
		err := syscall.Kill(pid, 0)
		assert.True(t, errors.Is(err, syscall.ESRCH), "%s (pid %d) is no longer running", name, pid)
	}
	_, err = os.Stat(kubeconfig)
	assert.True(t, os.IsNotExist(err), "the kubeconfig is removed on exit")
	assert.Contains(t, stderr.String(), "stopped")
}

// onePodRunning reports whether a `kubectl get pods -o wide` listing shows one pod, Running.
func onePodRunning(listing string) bool {
	lines := strings.Split(strings.TrimSpace(listing), "\n")
	return len(lines) == 2 && strings.Contains(lines[1], " Running ")
}

// podLine returns the one pod line of a `kubectl get pods -o wide` listing.
func podLine(t *testing.T, listing string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(listing), "\n")
	require.Len(t, lines, 2, "a header and one JobManager pod:\n%s", listing)
	return lines[1]
}

// readmeReadyBlock returns the text block of README.md that shows what `make run` prints:
// the one that starts with the ready line.
func readmeReadyBlock(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "README.md"))
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(raw), "```text\nready\n")
	require.True(t, ok, "README.md has a text block starting with the ready line")
	block, _, ok := strings.Cut(after, "\n```")
	require.True(t, ok)
	return "ready\n" + block
}

var portRE = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// withoutPorts replaces the random ports of a printout.
func withoutPorts(s string) string {
	return portRE.ReplaceAllString(strings.TrimSpace(s), "127.0.0.1:PORT")
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// shell runs a printed command line with bash, as a user pastes it, in dir.
func shell(t *testing.T, dir, line string) result {
	t.Helper()
	cmd := exec.Command("bash", "-c", line)
	cmd.Dir = dir
	return runCommand(t, cmd, line)
}

// childProcesses returns the direct children of pid (pid -> command name), from /proc.
func childProcesses(t *testing.T, pid int) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	children := map[int]string{}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...: comm may contain spaces, so split after the last ')'.
		s := string(stat)
		end := strings.LastIndexByte(s, ')')
		if end < 0 {
			continue
		}
		fields := strings.Fields(s[end+1:])
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		children[child] = s[strings.IndexByte(s, '(')+1 : end]
	}
	return children
}
