package flinksim

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// Process is what runs in a pod's container: a simulated JobManager (*fakeflink.JobManager)
// or a process a Launcher started (a real Flink JVM).
type Process interface {
	// Name names the process in logs.
	Name() string
	// Alive reports whether it still runs.
	Alive() bool
	// Stop asks it to end, as SIGTERM does; it may take a while to exit (Alive says when).
	Stop()
	// Kill ends it at once, as SIGKILL does.
	Kill()
	// ExitStatus is how it ended; ok is false while it runs.
	ExitStatus() (status fakeflink.ExitStatus, ok bool)
}

// Launcher starts the processes of pods' containers in place of the simulated JobManagers.
type Launcher interface {
	// Launch starts the process of the container named container of pod, which the kubelet
	// has just reported running. It is called off the Simulator's loop and may take a
	// while (reading the pod's configuration, starting a JVM); an error is logged and the
	// start tried again a second later, as for the simulated JobManager's reads.
	Launch(ctx context.Context, pod *corev1.Pod, container string) (Process, error)
}

var _ Process = (*fakeflink.JobManager)(nil)

// containerName is the name of the container the Simulator runs in pod: the JobManager's or
// the TaskManager's, by the pod's component label.
func containerName(pod *corev1.Pod) string {
	if pod.Labels[resources.LabelComponent] == resources.ComponentTaskManager {
		return resources.TaskManagerContainer
	}
	return resources.JobManagerContainer
}

// simulated is the simulated JobManager of p, or nil when p is a launched process.
func simulated(p Process) *fakeflink.JobManager {
	jm, _ := p.(*fakeflink.JobManager)
	return jm
}
