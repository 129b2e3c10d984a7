package realflink

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// messageLimit bounds a container's termination message, as the kubelet's (4096 bytes).
const messageLimit = 4096

// jvm is one Flink JVM, the process of a pod's container.
type jvm struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	// cleanup removes the container's files once the process exited.
	cleanup func()

	done   chan struct{}
	mu     sync.Mutex
	status fakeflink.ExitStatus
}

// Name implements flinksim.Process.
func (j *jvm) Name() string { return j.name }

// Alive implements flinksim.Process.
func (j *jvm) Alive() bool {
	select {
	case <-j.done:
		return false
	default:
		return true
	}
}

// Stop implements flinksim.Process: SIGTERM, as the kubelet sends at the end of the preStop
// hook. Flink's shutdown hooks run; the JVM exits with 143.
func (j *jvm) Stop() { j.signal(syscall.SIGTERM) }

// Kill implements flinksim.Process: SIGKILL to the JVM and anything it started.
func (j *jvm) Kill() { j.signal(syscall.SIGKILL) }

func (j *jvm) signal(sig syscall.Signal) {
	if !j.Alive() || j.cmd.Process == nil {
		return
	}
	// The JVM leads a process group of its own (Setpgid): the group goes.
	_ = syscall.Kill(-j.cmd.Process.Pid, sig)
}

// ExitStatus implements flinksim.Process: the exit code as a container runtime reports it
// (128 + the signal for a JVM ended by one) and, for a failure, the tail of its output (the
// kubelet's FallbackToLogsOnError).
func (j *jvm) ExitStatus() (fakeflink.ExitStatus, bool) {
	if j.Alive() {
		return fakeflink.ExitStatus{}, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.status, true
}

// wait waits for the JVM, records how it ended and removes its files.
func (j *jvm) wait() {
	err := j.cmd.Wait()
	code := int32(0)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		ws, ok := exit.Sys().(syscall.WaitStatus)
		switch {
		case ok && ws.Signaled():
			code = 128 + int32(ws.Signal())
		default:
			code = int32(exit.ExitCode())
		}
	case err != nil:
		code = 128 + int32(syscall.SIGKILL)
	}
	msg := ""
	if code != 0 {
		msg = tail(j.logPath, messageLimit)
	}
	j.mu.Lock()
	j.status = fakeflink.ExitStatus{Code: code, Message: msg}
	j.mu.Unlock()
	if j.cleanup != nil {
		j.cleanup()
	}
	close(j.done)
}

// tail is the end of the file at path, at most limit bytes, from a line's start.
func tail(path string, limit int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > limit {
		b = b[len(b)-limit:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// spawner starts every JVM from one OS thread that never exits, so that Pdeathsig (sent when
// the thread that started a child exits) means "this test process died": a JVM never
// outlives the test or `make run`, even one killed with SIGKILL.
type spawner struct {
	reqs chan spawnRequest
}

type spawnRequest struct {
	cmd  *exec.Cmd
	errc chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnRequest)}
	go func() {
		runtime.LockOSThread()
		// Never unlocked: the thread lives as long as the process.
		for r := range s.reqs {
			r.errc <- r.cmd.Start()
		}
	}()
	return s
}

// start starts cmd in a process group of its own that dies with this process.
func (s *spawner) start(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	errc := make(chan error, 1)
	s.reqs <- spawnRequest{cmd: cmd, errc: errc}
	if err := <-errc; err != nil {
		return fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	return nil
}
