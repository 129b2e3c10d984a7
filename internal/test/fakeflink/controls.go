package fakeflink

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
)

// URL is the process's own REST address, e.g. http://127.0.0.1:34567. It is also the REST
// server leader address the process publishes in the HA ConfigMap.
func (p *JobManager) URL() string {
	if p.srv == nil {
		return "http://" + p.name + ".invalid"
	}
	return p.srv.URL
}

// Address is the REST address the process publishes as leader: Config.Address, else URL().
func (p *JobManager) Address() string {
	if p.cfg.Address != "" {
		return p.cfg.Address
	}
	return p.URL()
}

// Name is the process's name (Config.Name or jobmanager-<n>).
func (p *JobManager) Name() string { return p.name }

// Config is the configuration the process was started with.
func (p *JobManager) Config() Config { return p.cfg }

// Cluster is the cluster the process belongs to.
func (p *JobManager) Cluster() *Cluster { return p.c }

// Alive reports whether the process runs.
func (p *JobManager) Alive() bool {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	return p.alive
}

// Leads reports whether the process leads (after bringing leadership up to date with the clock).
func (p *JobManager) Leads() bool {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.c.electLocked()
	return p.alive && p.leader
}

// Kill ends the process at once (SIGKILL, a lost node, an OOM): no cleanup, its lease stays
// in the HA ConfigMap until it expires, its jobs stay in the job graph store.
func (p *JobManager) Kill() {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if p.alive {
		p.dieLocked()
		p.exit = &ExitStatus{Code: ExitKilled}
	}
}

// Crash is Kill: a JobManager that crashes leaves the same traces.
func (p *JobManager) Crash() { p.Kill() }

// Stop shuts the process down gracefully without ending its jobs (SIGTERM while the job
// runs): it gives up its lease at once, so a standby takes over on its next election; the
// job graphs stay.
func (p *JobManager) Stop() {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if !p.alive {
		return
	}
	p.settleCheckpointsLocked()
	if p.leader && p.ha() {
		// Flink releases the lock by updating the ConfigMap: when it is gone (deleted behind
		// the JobManager), nothing is written.
		ctx := context.Background()
		cm, err := p.c.ha.Get(ctx, flinkha.ClusterConfigMapName(p.clusterID()))
		if err == nil && cm != nil {
			if e, err := flinkha.ParseElection(cm.Annotations[flinkha.LeaderAnnotation]); err == nil && e.Holder == p.lockID {
				e.Holder = ""
				cm.Annotations[flinkha.LeaderAnnotation] = flinkha.FormatElection(e)
				_ = p.c.ha.Put(ctx, cm)
			}
		}
	}
	p.dieLocked()
	p.exit = &ExitStatus{Code: ExitTerminated}
	p.c.electLocked()
}

// Exit is the end of an application whose jobs all ended, with
// execution.shutdown-on-application-finish (Flink's default): ApplicationDispatcherBootstrap
// shuts the cluster down with the application's status, so the process exits with that
// status's code (ApplicationStatus.processExitCode: 1443 for FAILED, 0 otherwise).
func (p *JobManager) Exit() {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	code := ExitSucceeded
	for _, j := range p.jobs {
		if j.state == flinkclient.JobStateFailed {
			code = ExitFailed
		}
	}
	if p.app != nil && p.app.state == flinkclient.ApplicationStateFailed {
		code = ExitFailed
	}
	p.shutDownLocked(code)
}

// shutDownLocked is ClusterEntrypoint's general shutdown path, taken when the Dispatcher's
// shutdown future completes (the application ended with shutdown-on-application-finish, or
// DELETE /cluster): the leader cleans up the cluster's HA data (all its HA ConfigMaps), jobs
// that did not end are suspended, and the process exits with code.
func (p *JobManager) shutDownLocked(code int32) {
	if !p.alive {
		return
	}
	p.settleCheckpointsLocked()
	if p.leader && p.ha() {
		_ = p.c.ha.DeleteAll(context.Background(), p.clusterID())
	}
	p.dieLocked()
	p.exit = &ExitStatus{Code: code}
}

// ExitStatus is how the process ended; ok is false while it runs.
func (p *JobManager) ExitStatus() (status ExitStatus, ok bool) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if p.exit == nil {
		return ExitStatus{}, false
	}
	return *p.exit, true
}

// Restart kills the process and starts another with the same configuration, as the kubelet
// restarts a crashed container; it returns the new process.
func (p *JobManager) Restart() *JobManager {
	p.Kill()
	cfg := p.cfg
	return p.c.Start(cfg)
}

// Close kills the process; a process made by New also closes its cluster.
func (p *JobManager) Close() {
	p.Kill()
	if p.owns {
		p.c.Close()
	}
}

// Partition cuts the process off from the API server (true) or reconnects it (false): it
// cannot renew its lease, keeps running its jobs until the lease runs out, then stops
// leading; meanwhile another process may take over once the lease expired.
func (p *JobManager) Partition(cut bool) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.partitioned = cut
	p.c.electLocked()
}

// Partitioned reports whether the process is cut off from the API server.
func (p *JobManager) Partitioned() bool {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	return p.partitioned
}

// SetUnavailable makes every REST call answer 503, as while the JobManager starts.
func (p *JobManager) SetUnavailable(v bool) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.unavailable = v
}

// SetShutdownHangs makes the process accept DELETE /cluster, close its REST API and never
// exit, as Flink 2.2.1's application entrypoint may (its job's HA cleanup is scheduled on an
// executor the shutdown already stopped).
func (p *JobManager) SetShutdownHangs(v bool) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.shutdownHangs = v
}

// Hold makes REST calls wait (a slow or hung JobManager) until Release, Kill or the
// caller's own timeout.
func (p *JobManager) Hold() {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if p.hold == nil {
		p.hold = make(chan struct{})
	}
}

// Release lets held REST calls go on.
func (p *JobManager) Release() {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if p.hold != nil {
		close(p.hold)
		p.hold = nil
	}
}

// SetJobs replaces the process's jobs with scripted ones (no execution history, no job
// result store): for tests that only need a job list.
func (p *JobManager) SetJobs(jobs ...flinkclient.Job) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	now := p.c.nowMillis()
	p.jobs = nil
	for _, j := range jobs {
		end := j.EndTime
		if end == 0 && !flinkclient.IsTerminalJobState(j.State) {
			end = -1
		}
		name := j.Name
		if name == "" {
			name = "job"
		}
		p.jobs = append(p.jobs, &job{id: j.ID, name: name, state: j.State, start: j.StartTime, end: end, lastModified: now, appID: j.ApplicationID})
	}
}

// SetJobState moves a job to a state as Flink would: a globally terminal state records the
// result in the job result store and cleans up the job's HA data; SUSPENDED, locally terminal
// (JobStatus.isTerminalState), ends the execution on this process and keeps the HA data for
// the next leader to recover. Periodic checkpoints due before the change complete first. An
// unknown job starts an execution on this process.
func (p *JobManager) SetJobState(jobID, state string) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.settleCheckpointsLocked()
	j := p.findJob(jobID)
	if j == nil {
		name := p.programName()
		if p.cfg.Session {
			name = "job"
		}
		j = p.startLocked(jobID, name, false, "")
	}
	if j.state == state {
		return
	}
	if flinkclient.IsTerminalJobState(state) {
		p.terminateLocked(j, state)
		return
	}
	now := p.c.clock.Now()
	j.state, j.lastModified, j.end = state, now.UnixMilli(), -1
	if state == flinkclient.JobStateSuspended {
		j.end = now.UnixMilli()
		if j.exec != nil && j.exec.End.IsZero() {
			j.exec.End, j.exec.State = now, state
			if o := p.c.opts.Observer; o != nil {
				o.ExecutionEnded(p, *j.exec)
			}
		}
	}
}

// JobState returns a job's state on this process, or "" when it does not list the job.
func (p *JobManager) JobState(jobID string) string {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.c.settleJobsLocked()
	p.expireJobsLocked()
	if j := p.findJob(jobID); j != nil {
		return j.state
	}
	return ""
}

// JobIDs lists the jobs of this process.
func (p *JobManager) JobIDs() []string {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.expireJobsLocked()
	var ids []string
	for _, j := range p.jobs {
		ids = append(ids, j.id)
	}
	return ids
}

// SetExceptions sets a job's exception history, newest first (the order Flink's job handler
// answers in).
func (p *JobManager) SetExceptions(jobID string, exceptions ...flinkclient.Exception) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if j := p.findJob(jobID); j != nil {
		j.exceptions = slices.Clone(exceptions)
	}
}

// AddException records a failure of a job in its exception history, as its JobMaster does
// at every failover: newest first, timestamped now when ex has no timestamp.
func (p *JobManager) AddException(jobID string, ex flinkclient.Exception) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if ex.Timestamp == 0 {
		ex.Timestamp = p.c.nowMillis()
	}
	if j := p.findJob(jobID); j != nil {
		j.exceptions = append([]flinkclient.Exception{ex}, j.exceptions...)
	}
}

// SetApplications replaces the modelled application with a scripted list and serves the
// 2.3 endpoints whatever the version.
func (p *JobManager) SetApplications(apps ...flinkclient.Application) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.appsScripted = true
	p.appsOverride = slices.Clone(apps)
}

// SetApplicationExceptions sets an application's exception history, in the order the
// failures happened (the order Flink 2.3's handler answers in: oldest first).
func (p *JobManager) SetApplicationExceptions(appID string, exceptions ...flinkclient.Exception) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.appExceptions[appID] = slices.Clone(exceptions)
	if p.app != nil && p.app.id == appID {
		p.app.exceptions = slices.Clone(exceptions)
	}
}

// ApplicationID is the ID of the process's application (Flink 2.3), or "".
func (p *JobManager) ApplicationID() string {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if p.app == nil {
		return ""
	}
	return p.app.id
}

// ApplicationState is the state of the process's application (Flink 2.3), or "".
func (p *JobManager) ApplicationState() string {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if p.app == nil {
		return ""
	}
	return p.app.state
}

// SetCancelHold makes cancellations (PATCH /jobs/:id?mode=cancel, 2.3's application cancel)
// leave jobs CANCELLING, and applications CANCELLING, until CompleteCancels: a cancel that
// Flink accepted but has not done yet.
func (p *JobManager) SetCancelHold(hold bool) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.cancelHold = hold
}

// CompleteCancels ends every CANCELLING job CANCELED (and its application with it).
func (p *JobManager) CompleteCancels() {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	for _, j := range p.jobs {
		if j.state == flinkclient.JobStateCancelling {
			p.terminateLocked(j, flinkclient.JobStateCanceled)
		}
	}
	if p.app != nil && p.app.state == flinkclient.ApplicationStateCancelling {
		p.updateAppLocked()
	}
}

// SetSavepointMode sets how this process's new and pending operations complete.
func (p *JobManager) SetSavepointMode(m SavepointMode) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.savepointMode = m
}

// CompleteSavepoints completes every pending operation successfully.
func (p *JobManager) CompleteSavepoints() { p.finishPending("") }

// FailSavepoints completes every pending operation with cause (a default when empty).
func (p *JobManager) FailSavepoints(cause string) {
	if cause == "" {
		cause = savepointFailure
	}
	p.finishPending(cause)
}

func (p *JobManager) finishPending(failure string) {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	for _, op := range p.ops {
		if !op.done {
			p.finishOpLocked(op, failure)
		}
	}
}

// CompleteStopsThenRestart completes every pending stop-with-savepoint whose savepoint is
// taken, but whose job then fails while stopping and is restarted by its restart strategy
// (StopWithSavepointTerminationHandlerImpl): the savepoint exists and the checkpoint
// statistics list it, the operation fails with StopWithSavepointStoppingException naming its
// location, and the job is RUNNING again (RESTARTING in between), in the same execution; on
// 2.3 the application stays RUNNING. Other pending operations complete as CompleteSavepoints.
func (p *JobManager) CompleteStopsThenRestart() {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	for _, op := range p.ops {
		if op.done {
			continue
		}
		j := p.findJob(op.jobID)
		if !op.stop || j == nil || j.state != flinkclient.JobStateRunning {
			p.finishOpLocked(op, "")
			continue
		}
		op.keepRunning = true // the savepoint is taken; the job does not end
		p.finishOpLocked(op, "")
		op.failure = "org.apache.flink.runtime.scheduler.stopwithsavepoint.StopWithSavepointStoppingException: A savepoint has been created at: " +
			op.location + ", but the corresponding job " + op.jobID + " failed during stopping. The savepoint is consistent, but might have uncommitted transactions. If you want to commit the transaction please restart a job from this savepoint."
		op.location = ""
		j.lastModified = p.c.nowMillis()
		j.exceptions = append([]flinkclient.Exception{{Name: "org.apache.flink.util.FlinkException",
			StackTrace: "org.apache.flink.util.FlinkException: the job failed while stopping", Timestamp: j.lastModified}}, j.exceptions...)
	}
}

// ExpireSavepointResults forgets every completed operation now, as Flink does after
// rest.async.store-duration (Cluster.Advance gets there too).
func (p *JobManager) ExpireSavepointResults() {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	for k, op := range p.ops {
		if op.done {
			delete(p.ops, k)
		}
	}
}

// CompleteCheckpoint completes a checkpoint of a running job and returns its path; with HA
// the job's ConfigMap points at it, so a recovering JobManager restores from it.
func (p *JobManager) CompleteCheckpoint(jobID string) string {
	return p.CompleteCheckpointTaking(jobID, 0)
}

// CompleteCheckpointTaking completes a checkpoint of a running job that Flink triggered took
// before now (its trigger_timestamp), and returns its path, as CompleteCheckpoint does.
func (p *JobManager) CompleteCheckpointTaking(jobID string, took time.Duration) string {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	p.settleCheckpointsLocked()
	j := p.findJob(jobID)
	if j == nil || j.state != flinkclient.JobStateRunning {
		return ""
	}
	now := p.c.nowMillis()
	return p.completeCheckpointLocked(j, now-took.Milliseconds(), now)
}

// LatestSavepoint is the path of the job's latest completed savepoint on this process, or "".
func (p *JobManager) LatestSavepoint(jobID string) string {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if j := p.findJob(jobID); j != nil && j.savepoint != nil {
		return j.savepoint.path
	}
	return ""
}

// RestoredFrom is where the job's execution on this process started from, or "".
func (p *JobManager) RestoredFrom(jobID string) string {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if j := p.findJob(jobID); j != nil {
		return j.restoredFrom
	}
	return ""
}

// Requests returns the calls this process received so far, as "METHOD /path".
func (p *JobManager) Requests() []string {
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	return slices.Clone(p.requests)
}

// CountRequests counts the calls received as exactly "METHOD /path".
func (p *JobManager) CountRequests(call string) int {
	n := 0
	for _, r := range p.Requests() {
		if r == call {
			n++
		}
	}
	return n
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
