package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDevCommand runs the built binary as `make run` does, but from a directory outside the
// repository (everything dev installs is embedded): `flink-admission dev`, waits for its
// ready line, runs the kubectl commands it prints, then
// presses Ctrl-C (SIGINT) and checks that it exits 0 and leaves no kube-apiserver or etcd
// running, and no kubeconfig behind.
func TestDevCommand(t *testing.T) {
	bin := binary(t)
	kubeconfig := filepath.Join(t.TempDir(), "dev", "kubeconfig")
	cmd := exec.Command(bin, "dev", "--kubeconfig-out", kubeconfig, "--log-level", "error")
	cmd.Dir = t.TempDir()
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
	timeout := time.After(3 * time.Minute)
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
			t.Fatalf("no ready line within 3 minutes; printed so far:\n%s", strings.Join(printed, "\n"))
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

	commands := map[string]string{}
	for _, line := range printed {
		line = strings.TrimSpace(line)
		switch {
		case !strings.HasPrefix(line, "kubectl "):
		case strings.Contains(line, "--dry-run=server"):
			commands["preview"] = line
		case strings.Contains(line, " apply "):
			commands["apply"] = line
		case strings.Contains(line, " patch "):
			commands["patch"] = line
		}
	}
	require.Len(t, commands, 3, "three commands to try: %v", commands)

	preview := shell(t, cmd.Dir, commands["preview"])
	require.Equal(t, 0, preview.exitCode)
	assert.Contains(t, preview.stdout, `execution.shutdown-on-application-finish: "false"`, "the dry run shows the injected defaults")

	apply := shell(t, cmd.Dir, commands["apply"])
	require.Equal(t, 0, apply.exitCode)
	assert.Contains(t, apply.stdout, "created")

	patch := shell(t, cmd.Dir, commands["patch"])
	assert.Equal(t, 1, patch.exitCode, "the deploymentType change is denied")
	assert.Contains(t, patch.stderr, "spec.jobManager.deploymentType: Forbidden: deploymentType is immutable")

	children := childProcesses(t, cmd.Process.Pid)
	names := map[string]bool{}
	for _, name := range children {
		names[name] = true
	}
	require.True(t, names["kube-apiserver"] && names["etcd"], "dev runs kube-apiserver and etcd: %v", children)

	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	require.NoError(t, waitExit(cmd, time.Minute), "Ctrl-C is a clean exit (code 0)")
	for pid, name := range children {
		err := syscall.Kill(pid, 0)
		assert.True(t, errors.Is(err, syscall.ESRCH), "%s (pid %d) is no longer running", name, pid)
	}
	_, err = os.Stat(kubeconfig)
	assert.True(t, os.IsNotExist(err), "the kubeconfig is removed on exit")
	assert.Contains(t, stderr.String(), "stopped")
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
