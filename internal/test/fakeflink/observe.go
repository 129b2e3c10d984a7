package fakeflink

import "strings"

// Observer is told what happens to jobs at the moment it happens, so that a test can check
// an invariant against what it knows then (the controller's status, the Kubernetes objects)
// rather than reconstruct it afterwards from Executions. Its methods run under the cluster's
// lock: they may read their arguments (JobManager.Name, JobManager.Config) but must not call
// the cluster's or a process's other methods.
type Observer interface {
	// ExecutionStarted: process p started running a job, recovered from the job graph store
	// (e.Recovered) or submitted by main().
	ExecutionStarted(p *JobManager, e Execution)
	// ExecutionEnded: an execution of process p reached a globally terminal state (e.State).
	// Executions suspended by a lost leadership or a dead process are not reported.
	ExecutionEnded(p *JobManager, e Execution)
	// SavepointCompleted: process p completed a savepoint of a job at location; stop is a
	// stop-with-savepoint, whose job ends FINISHED right after.
	SavepointCompleted(p *JobManager, jobID, location string, stop bool)
}

// program is what this process's main() does: its own Config.Program, else the cluster's.
// ReleaseMain releases only the cluster's program.
func (p *JobManager) program() Program {
	if p.cfg.Program != nil {
		return *p.cfg.Program
	}
	return p.c.program
}

// rpcHost is the host:port of the process's RPC endpoints as the HA ConfigMap publishes
// them: its listener, or in-process the host of its REST address.
func (p *JobManager) rpcHost() string {
	if p.srv != nil {
		return p.srv.Listener.Addr().String()
	}
	host := p.Address()
	for _, prefix := range []string{"http://", "https://"} {
		host = strings.TrimPrefix(host, prefix)
	}
	return host
}
