package fakeflink

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
)

// ServeHTTP answers a REST call as this JobManager process would: a dead process drops the
// connection; a standby answers for the leader (Flink's handlers retrieve the leading
// Dispatcher) or 503 while nobody leads.
func (p *JobManager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := p.c
	c.mu.Lock()
	p.requests = append(p.requests, r.Method+" "+r.URL.Path)
	alive, hold := p.alive, p.hold
	c.mu.Unlock()
	if !alive {
		dropConnection(w)
		return
	}
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	c.mu.Lock()
	if !p.alive {
		c.mu.Unlock()
		dropConnection(w)
		return
	}
	if p.unavailable {
		c.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, leaderElectionUnavailableBody)
		return
	}
	c.electLocked()
	target := p
	if !p.leader {
		target = c.leaderLocked()
	}
	c.mu.Unlock()
	if target == nil {
		writeError(w, http.StatusServiceUnavailable, leaderElectionUnavailableBody)
		return
	}
	target.mux.ServeHTTP(w, r)
}

func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	w.WriteHeader(http.StatusBadGateway)
}

func (p *JobManager) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs/overview", p.locked(p.listJobs))
	mux.HandleFunc("GET /jobs/{jobid}", p.locked(p.getJob))
	mux.HandleFunc("PATCH /jobs/{jobid}", p.locked(p.cancelJob))
	mux.HandleFunc("GET /jobs/{jobid}/exceptions", p.locked(p.getExceptions))
	mux.HandleFunc("GET /jobs/{jobid}/checkpoints", p.locked(p.getCheckpoints))
	mux.HandleFunc("POST /jobs/{jobid}/savepoints", p.locked(func(w http.ResponseWriter, r *http.Request) { p.trigger(w, r, false) }))
	mux.HandleFunc("POST /jobs/{jobid}/stop", p.locked(func(w http.ResponseWriter, r *http.Request) { p.trigger(w, r, true) }))
	mux.HandleFunc("GET /jobs/{jobid}/savepoints/{triggerid}", p.locked(p.savepointStatus))
	mux.HandleFunc("POST /savepoint-disposal", p.locked(p.disposeSavepoint))
	mux.HandleFunc("GET /savepoint-disposal/{triggerid}", p.locked(p.disposalStatus))
	mux.HandleFunc("GET /applications/overview", p.locked(p.apps(p.listApplications)))
	mux.HandleFunc("GET /applications/{appid}", p.locked(p.apps(p.getApplication)))
	mux.HandleFunc("POST /applications/{appid}/cancel", p.locked(p.apps(p.cancelApplication)))
	mux.HandleFunc("GET /applications/{appid}/exceptions", p.locked(p.apps(p.getApplicationExceptions)))
	mux.HandleFunc("DELETE /cluster", p.locked(p.shutdownCluster))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeErrors(w, http.StatusNotFound, "Not found: "+r.URL.Path)
	})
	return mux
}

func (p *JobManager) locked(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p.c.mu.Lock()
		defer p.c.mu.Unlock()
		p.expireJobsLocked()
		h(w, r)
	}
}

// apps answers 404 for the application endpoints before Flink 2.3 (unless a test scripted
// applications), as Flink's router does for an unknown path.
func (p *JobManager) apps(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !p.appsScripted && !p.c.opts.Version.hasApplications() {
			writeErrors(w, http.StatusNotFound, "Not found: "+r.URL.Path)
			return
		}
		h(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// writeErrors writes Flink's ErrorResponseBody.
func writeErrors(w http.ResponseWriter, status int, msgs ...string) {
	writeJSON(w, status, map[string][]string{"errors": msgs})
}

// jobStates are Flink's JobStatus values.
var jobStates = []string{
	flinkclient.JobStateInitializing, flinkclient.JobStateCreated, flinkclient.JobStateRunning, flinkclient.JobStateFailing,
	flinkclient.JobStateFailed, flinkclient.JobStateCancelling, flinkclient.JobStateCanceled, flinkclient.JobStateFinished,
	flinkclient.JobStateRestarting, flinkclient.JobStateSuspended, flinkclient.JobStateReconciling,
}

// applicationStates are Flink's ApplicationState values (2.3).
var applicationStates = []string{
	flinkclient.ApplicationStateCreated, flinkclient.ApplicationStateRunning, flinkclient.ApplicationStateFailing,
	flinkclient.ApplicationStateFailed, flinkclient.ApplicationStateCancelling, flinkclient.ApplicationStateCanceled,
	flinkclient.ApplicationStateFinished,
}

// nullable is s, or JSON null when empty.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// executionStates are Flink's ExecutionState values, lower-cased as JobDetails writes them.
var executionStates = []string{"created", "scheduled", "deploying", "running", "finished", "canceling", "canceled", "failed", "reconciling", "initializing"}

func (p *JobManager) duration(start, end int64) int64 {
	if end >= 0 {
		return end - start
	}
	return p.c.nowMillis() - start
}

// jobDetails is a job as /jobs/overview lists it (JobDetails.JobDetailsSerializer).
func (p *JobManager) jobDetails(j *job) map[string]any {
	tasks := map[string]int{"total": 1}
	for _, s := range executionStates {
		tasks[s] = 0
	}
	switch j.state {
	case flinkclient.JobStateRunning:
		tasks["running"] = 1
	case flinkclient.JobStateFinished:
		tasks["finished"] = 1
	case flinkclient.JobStateCanceled:
		tasks["canceled"] = 1
	case flinkclient.JobStateFailed:
		tasks["failed"] = 1
	default:
		tasks["created"] = 1
	}
	return map[string]any{
		"jid": j.id, "name": j.name, "state": j.state,
		"start-time": j.start, "end-time": j.end, "duration": p.duration(j.start, j.end),
		"last-modification": j.lastModified, "tasks": tasks,
	}
}

func (p *JobManager) listJobs(w http.ResponseWriter, _ *http.Request) {
	jobs := []map[string]any{}
	for _, j := range p.jobs {
		jobs = append(jobs, p.jobDetails(j))
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": jobs})
}

func (p *JobManager) jobOr404(w http.ResponseWriter, r *http.Request) *job {
	j := p.findJob(r.PathValue("jobid"))
	if j == nil {
		writeErrors(w, http.StatusNotFound, "org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job ("+r.PathValue("jobid")+")")
	}
	return j
}

// getJob answers JobDetailsInfo.
func (p *JobManager) getJob(w http.ResponseWriter, r *http.Request) {
	j := p.jobOr404(w, r)
	if j == nil {
		return
	}
	counts := map[string]int{}
	for _, s := range executionStates {
		counts[strings.ToUpper(s)] = 0
	}
	timestamps := map[string]int64{}
	for _, s := range jobStates {
		timestamps[s] = 0
	}
	timestamps[flinkclient.JobStateInitializing] = j.start
	timestamps[flinkclient.JobStateCreated] = j.start
	timestamps[j.state] = j.lastModified
	body := map[string]any{
		"jid": j.id, "name": j.name, "isStoppable": false, "state": j.state, "job-type": "STREAMING",
		"schedulerType": "Default",
		"start-time":    j.start, "end-time": j.end, "duration": p.duration(j.start, j.end), "maxParallelism": -1,
		"now": p.c.nowMillis(), "timestamps": timestamps,
		"vertices": []any{}, "status-counts": counts,
		"plan": map[string]any{"jid": j.id, "name": j.name, "type": "STREAMING", "nodes": []any{}},
	}
	if p.c.opts.Version != Version1_20 {
		// FLIP-469 (Flink 2.0) added the operators not yet in the job graph.
		body["pending-operators"] = 0
	}
	if p.c.opts.Version.hasApplications() {
		body["application-id"] = nullable(j.appID)
	}
	writeJSON(w, http.StatusOK, body)
}

// exceptionEntry is an entry of JobExceptionsInfoWithHistory.RootExceptionInfo.
func exceptionEntry(e flinkclient.Exception) map[string]any {
	m := map[string]any{
		"exceptionName": e.Name, "stacktrace": e.StackTrace, "timestamp": e.Timestamp,
		"failureLabels": map[string]string{}, "concurrentExceptions": []any{},
	}
	if e.TaskName != "" {
		m["taskName"] = e.TaskName
	}
	return m
}

// getExceptions answers JobExceptionsInfoWithHistory, newest first as Flink's handler does;
// Flink 1.20 still sends the deprecated root-exception fields.
func (p *JobManager) getExceptions(w http.ResponseWriter, r *http.Request) {
	j := p.jobOr404(w, r)
	if j == nil {
		return
	}
	entries := []map[string]any{}
	for _, e := range j.exceptions {
		entries = append(entries, exceptionEntry(e))
	}
	body := map[string]any{"exceptionHistory": map[string]any{"entries": entries, "truncated": false}}
	if p.c.opts.Version == Version1_20 {
		body["all-exceptions"] = []any{}
		body["truncated"] = false
		if len(j.exceptions) > 0 {
			body["root-exception"] = j.exceptions[0].StackTrace
			body["timestamp"] = j.exceptions[0].Timestamp
		}
	}
	writeJSON(w, http.StatusOK, body)
}

// checkpointStats is a CheckpointStatistics entry.
func checkpointStats(cp *checkpoint) map[string]any {
	if cp == nil {
		return nil
	}
	typ := "CHECKPOINT"
	switch {
	case cp.sync:
		typ = flinkclient.CheckpointTypeSyncSavepoint
	case cp.savepoint:
		typ = "SAVEPOINT"
	}
	return map[string]any{
		"className": "completed", "id": cp.id, "status": "COMPLETED", "is_savepoint": cp.savepoint,
		"savepointFormat": nil, "trigger_timestamp": cp.trigger, "latest_ack_timestamp": cp.ack,
		"checkpointed_size": 0, "state_size": 0, "end_to_end_duration": cp.ack - cp.trigger,
		"alignment_buffered": 0, "processed_data": 0, "persisted_data": 0,
		"num_subtasks": 1, "num_acknowledged_subtasks": 1, "checkpoint_type": typ, "tasks": map[string]any{},
		"external_path": cp.path, "discarded": false,
	}
}

// getCheckpoints answers CheckpointingStatistics.
func (p *JobManager) getCheckpoints(w http.ResponseWriter, r *http.Request) {
	j := p.jobOr404(w, r)
	if j == nil {
		return
	}
	var restored any
	if j.restoredFrom != "" {
		restored = map[string]any{
			"id": j.restoredID, "restore_timestamp": j.start, "is_savepoint": strings.Contains(j.restoredFrom, "savepoint"),
			"external_path": QualifyPath(j.restoredFrom),
		}
	}
	history := []any{}
	for _, cp := range j.cpHistory {
		history = append(history, checkpointStats(cp))
	}
	var inProgress int64
	if p.checkpointInProgress(j) {
		inProgress = 1
	}
	numRestored := 0
	if restored != nil {
		numRestored = 1
	}
	stat := map[string]int{"min": 0, "max": 0, "avg": 0, "p50": 0, "p90": 0, "p95": 0, "p99": 0, "p999": 0}
	writeJSON(w, http.StatusOK, map[string]any{
		"counts": map[string]any{"restored": numRestored, "total": j.cpCompleted + j.cpFailed + inProgress, "in_progress": inProgress, "completed": j.cpCompleted, "failed": j.cpFailed},
		"summary": map[string]any{
			"checkpointed_size": stat, "state_size": stat, "end_to_end_duration": stat,
			"alignment_buffered": stat, "processed_data": stat, "persisted_data": stat,
		},
		"latest": map[string]any{
			"completed": checkpointStats(j.completed), "savepoint": checkpointStats(j.savepoint),
			"failed": nil, "restored": restored,
		},
		"history": history,
	})
}

// trigger starts a savepoint or stop-with-savepoint (SavepointTriggerRequestBody,
// StopWithSavepointRequestBody). The same triggerId for the same job is the same operation
// while Flink remembers it.
func (p *JobManager) trigger(w http.ResponseWriter, r *http.Request, stop bool) {
	var body struct {
		TargetDirectory  string `json:"targetDirectory"`
		TargetDirectory2 string `json:"target-directory"`
		TriggerID        string `json:"triggerId"`
		CancelJob        bool   `json:"cancel-job"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeErrors(w, http.StatusBadRequest, "Request body is not a valid JSON object: "+err.Error())
		return
	}
	if body.TriggerID != "" && !flinkclient.IsID(body.TriggerID) {
		writeErrors(w, http.StatusBadRequest, "Invalid triggerId "+body.TriggerID)
		return
	}
	jobID := r.PathValue("jobid")
	if !flinkclient.IsID(jobID) {
		writeErrors(w, http.StatusBadRequest, "Invalid JobID "+jobID)
		return
	}
	p.expireLocked()
	tid := body.TriggerID
	if tid == "" {
		tid = deriveID(p.lockID, "trigger", fmt.Sprint(len(p.ops)), jobID, fmt.Sprint(p.c.nowMillis()))
	}
	key := jobID + "/" + tid
	if _, ok := p.ops[key]; !ok {
		op := &operation{jobID: jobID, triggerID: tid, stop: stop, target: body.TargetDirectory}
		if !stop {
			op.target, op.cancelJob = body.TargetDirectory2, body.CancelJob
		}
		p.ops[key] = op
		// The Dispatcher accepts the trigger before it looks for the job's JobMaster
		// (DispatcherCachedOperationsHandler): a job it does not run (unknown, or ended and
		// gone from the running jobs) fails the operation, not the request.
		switch j := p.findJob(jobID); {
		case j == nil || flinkclient.IsTerminalJobState(j.state):
			p.finishOpLocked(op, "java.util.concurrent.CompletionException: org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job ("+jobID+")")
		case j.state != flinkclient.JobStateRunning:
			p.finishOpLocked(op, fmt.Sprintf("org.apache.flink.runtime.checkpoint.CheckpointException: Job %s is not running (%s).", j.id, j.state))
		}
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"request-id": tid})
}

// expireLocked forgets completed operations older than rest.async.store-duration.
func (p *JobManager) expireLocked() {
	now := p.c.clock.Now()
	for k, op := range p.ops {
		if op.done && !now.Before(op.completedAt.Add(p.storeDuration())) {
			delete(p.ops, k)
		}
	}
}

// finishOpLocked completes an operation: with failure, failed; otherwise the savepoint is
// taken (and a stop ends the job FINISHED).
func (p *JobManager) finishOpLocked(op *operation, failure string) {
	op.done, op.completedAt = true, p.c.clock.Now()
	if failure != "" {
		op.failure = failure
		return
	}
	j := p.findJob(op.jobID)
	if j == nil || j.state != flinkclient.JobStateRunning {
		op.failure = "org.apache.flink.runtime.checkpoint.CheckpointException: job " + op.jobID + " is not running"
		return
	}
	cm, gone := p.checkpointConfigMapLocked(j)
	if gone {
		// A stop's savepoint fails before any task stops: the job runs on.
		op.failure = p.jobConfigMapGone(j.id)
		return
	}
	dir := QualifyPath(op.target)
	if dir == "" {
		dir = p.savepointDir()
	}
	now := p.c.nowMillis()
	syncCounter(j, cm)
	j.lastCheckpointID++
	cpID := j.lastCheckpointID
	// AbstractFsCheckpointStorageAccess names a savepoint's directory savepoint-<the job ID's
	// first 6 hex>-<12 random hex>.
	op.location = fmt.Sprintf("%s/savepoint-%.6s-%.12s", dir, j.id, deriveID(op.triggerID, j.id, itoa(cpID)))
	if o := p.c.opts.Observer; o != nil {
		o.SavepointCompleted(p, j.id, op.location, op.stop && !op.keepRunning)
	}
	j.savepoint = &checkpoint{id: cpID, savepoint: true, sync: op.stop, path: op.location, trigger: now, ack: now}
	p.recordStatsLocked(j, j.savepoint)
	p.c.noteSavepointFileLocked(op.location, cpID)
	p.advanceCounterLocked(j.id, cpID+1)
	switch {
	case op.stop && !op.keepRunning:
		p.terminateLocked(j, flinkclient.JobStateFinished)
	case op.cancelJob:
		p.terminateLocked(j, flinkclient.JobStateCanceled)
	}
}

// savepointStatus answers AsynchronousOperationResult<SavepointInfo>, or 404 once the
// result expired (or never existed on this process).
func (p *JobManager) savepointStatus(w http.ResponseWriter, r *http.Request) {
	p.expireLocked()
	op, ok := p.ops[r.PathValue("jobid")+"/"+r.PathValue("triggerid")]
	if !ok {
		writeErrors(w, http.StatusNotFound, "There is no savepoint operation with triggerId="+r.PathValue("triggerid")+" for job "+r.PathValue("jobid")+".")
		return
	}
	if !op.done {
		switch p.savepointMode {
		case SavepointComplete:
			p.finishOpLocked(op, "")
		case SavepointFail:
			p.finishOpLocked(op, savepointFailure)
		}
	}
	if !op.done {
		writeJSON(w, http.StatusOK, map[string]any{"status": map[string]string{"id": flinkclient.OperationInProgress}, "operation": nil})
		return
	}
	info := map[string]any{}
	if op.failure != "" {
		class, _, _ := strings.Cut(op.failure, ":")
		info["failure-cause"] = map[string]string{"class": class, "stack-trace": op.failure + "\n\tat org.apache.flink.runtime.checkpoint.CheckpointCoordinator.triggerCheckpoint(CheckpointCoordinator.java:1)", "serialized-throwable": ""}
	} else {
		info["location"] = op.location
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": map[string]string{"id": flinkclient.OperationCompleted}, "operation": info})
}

// cancelJob answers PATCH /jobs/:jobid?mode=cancel (JobCancellationHandler).
func (p *JobManager) cancelJob(w http.ResponseWriter, r *http.Request) {
	if mode := r.URL.Query().Get("mode"); mode != "cancel" && mode != "" {
		writeErrors(w, http.StatusBadRequest, "Invalid mode "+mode)
		return
	}
	j := p.jobOr404(w, r)
	if j == nil {
		return
	}
	switch j.state {
	case flinkclient.JobStateCanceled, flinkclient.JobStateCancelling:
	case flinkclient.JobStateFinished, flinkclient.JobStateFailed:
		writeErrors(w, http.StatusConflict, "Job cancellation failed because the job has already reached another terminal state ("+j.state+").")
		return
	default:
		p.cancelLocked(j)
	}
	writeJSON(w, http.StatusAccepted, map[string]any{})
}

// cancelLocked cancels a job: at once, or with SetCancelHold, CANCELLING until CompleteCancels.
func (p *JobManager) cancelLocked(j *job) {
	if p.cancelHold {
		j.state, j.lastModified = flinkclient.JobStateCancelling, p.c.nowMillis()
		return
	}
	p.terminateLocked(j, flinkclient.JobStateCanceled)
}

// applications returns the scripted list or the modelled application.
func (p *JobManager) applications() []*application {
	if p.appsScripted {
		var out []*application
		for _, a := range p.appsOverride {
			out = append(out, &application{id: a.ID, name: a.Name, state: a.Status, start: a.StartTime, end: a.EndTime,
				exceptions: p.appExceptions[a.ID], timestamps: map[string]int64{}})
		}
		return out
	}
	if p.app == nil {
		return nil
	}
	return []*application{p.app}
}

func (p *JobManager) findApp(id string) *application {
	for _, a := range p.applications() {
		if a.id == id {
			return a
		}
	}
	return nil
}

func (p *JobManager) appJobCounts(a *application) map[string]int {
	counts := map[string]int{}
	for _, id := range a.jobIDs {
		if j := p.findJob(id); j != nil {
			counts[j.state]++
		}
	}
	if p.appsScripted {
		for _, s := range p.appsOverride {
			if s.ID == a.id && s.JobCounts != nil {
				counts = s.JobCounts
			}
		}
	}
	return counts
}

// listApplications answers MultipleApplicationsDetails of ApplicationDetails.
func (p *JobManager) listApplications(w http.ResponseWriter, _ *http.Request) {
	apps := []map[string]any{}
	for _, a := range p.applications() {
		apps = append(apps, map[string]any{
			"id": a.id, "name": a.name, "status": a.state, "start-time": a.start, "end-time": a.end,
			"duration": p.duration(a.start, a.end), "jobs": p.appJobCounts(a),
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"applications": apps})
}

func (p *JobManager) appOr404(w http.ResponseWriter, r *http.Request) *application {
	a := p.findApp(r.PathValue("appid"))
	if a == nil {
		writeErrors(w, http.StatusNotFound, "Application could not be found.")
	}
	return a
}

// getApplication answers ApplicationDetailsInfo: "jobs" lists JobDetails.
func (p *JobManager) getApplication(w http.ResponseWriter, r *http.Request) {
	a := p.appOr404(w, r)
	if a == nil {
		return
	}
	jobs := []map[string]any{}
	for _, id := range a.jobIDs {
		if j := p.findJob(id); j != nil {
			jobs = append(jobs, p.jobDetails(j))
		}
	}
	timestamps := map[string]int64{}
	for _, s := range applicationStates {
		timestamps[s] = a.timestamps[s]
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": a.id, "name": a.name, "status": a.state, "start-time": a.start, "end-time": a.end,
		"duration": p.duration(a.start, a.end), "timestamps": timestamps, "jobs": jobs,
	})
}

// cancelApplication answers POST /applications/:id/cancel (ApplicationCancellationHandler).
func (p *JobManager) cancelApplication(w http.ResponseWriter, r *http.Request) {
	a := p.appOr404(w, r)
	if a == nil {
		return
	}
	switch a.state {
	case flinkclient.ApplicationStateCanceled, flinkclient.ApplicationStateCancelling:
	case flinkclient.ApplicationStateFinished, flinkclient.ApplicationStateFailed:
		writeErrors(w, http.StatusConflict, "Application cancellation failed because the application has already reached another terminal state ("+a.state+").")
		return
	default:
		if p.appsScripted {
			for i := range p.appsOverride {
				if p.appsOverride[i].ID == a.id {
					p.appsOverride[i].Status = flinkclient.ApplicationStateCanceled
				}
			}
		} else {
			p.mainBlocked = false
			p.setAppStateLocked(flinkclient.ApplicationStateCancelling)
			for _, id := range a.jobIDs {
				if j := p.findJob(id); j != nil && !flinkclient.IsTerminalJobState(j.state) {
					p.cancelLocked(j)
				}
			}
			if !p.cancelHold && p.app != nil && p.app.state == flinkclient.ApplicationStateCancelling {
				// No job to wait for (main() had not submitted one yet).
				p.setAppStateLocked(flinkclient.ApplicationStateCanceled)
			}
		}
	}
	writeJSON(w, http.StatusAccepted, map[string]any{})
}

// getApplicationExceptions answers the application's exception history in the order the
// failures happened (the 2.3 handler does not reverse it), in the shape of
// ApplicationExceptionsInfoWithHistory: entries of exceptionName, stacktrace, timestamp and
// jobId, which is left out when the failure has no job.
func (p *JobManager) getApplicationExceptions(w http.ResponseWriter, r *http.Request) {
	a := p.appOr404(w, r)
	if a == nil {
		return
	}
	entries := []map[string]any{}
	for _, e := range a.exceptions {
		entry := map[string]any{"exceptionName": e.Name, "stacktrace": e.StackTrace, "timestamp": e.Timestamp}
		if e.JobID != "" {
			entry["jobId"] = e.JobID // @JsonInclude(NON_NULL)
		}
		entries = append(entries, entry)
	}
	writeJSON(w, http.StatusOK, map[string]any{"exceptionHistory": map[string]any{"entries": entries}})
}

// disposalKey keys a disposal in JobManager.ops: disposals belong to no job.
func disposalKey(triggerID string) string { return "savepoint-disposal/" + triggerID }

// disposeSavepoint answers POST /savepoint-disposal (SavepointDisposalHandlers'
// SavepointDisposalTriggerHandler with a SavepointDisposalRequest {"savepoint-path"}): the
// Dispatcher disposes of the savepoint asynchronously and answers a TriggerResponse. The
// request takes no triggerId from the caller. Disposal here is immediate: a savepoint this
// cluster took and that still exists is removed; any other path fails as Flink fails to
// load its metadata.
func (p *JobManager) disposeSavepoint(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Path string `json:"savepoint-path"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeErrors(w, http.StatusBadRequest, "Request body is not a valid JSON object: "+err.Error())
		return
	}
	if body.Path == "" {
		writeErrors(w, http.StatusBadRequest, "Field 'savepoint-path' is missing.")
		return
	}
	p.expireLocked()
	tid := deriveID(p.lockID, "disposal", fmt.Sprint(len(p.ops)), body.Path, fmt.Sprint(p.c.nowMillis()))
	op := &operation{triggerID: tid, target: body.Path, done: true, completedAt: p.c.clock.Now()}
	if !p.c.savepointFiles[body.Path] {
		op.failure = "java.io.FileNotFoundException: Cannot find meta data file '_metadata' in directory '" + body.Path +
			"'. Please try to load the checkpoint/savepoint directly from the metadata file instead of the directory."
	} else {
		p.c.savepointFiles[body.Path] = false
	}
	p.ops[disposalKey(tid)] = op
	writeJSON(w, http.StatusAccepted, map[string]string{"request-id": tid})
}

// disposalStatus answers GET /savepoint-disposal/:triggerid
// (AsynchronousOperationResult<AsynchronousOperationInfo>), or 404 for a trigger this
// process does not know (expired, or taken by another JobManager).
func (p *JobManager) disposalStatus(w http.ResponseWriter, r *http.Request) {
	p.expireLocked()
	op, ok := p.ops[disposalKey(r.PathValue("triggerid"))]
	if !ok {
		writeErrors(w, http.StatusNotFound, "Operation not found under key: "+r.PathValue("triggerid"))
		return
	}
	info := map[string]any{"failure-cause": nil}
	if op.failure != "" {
		class, _, _ := strings.Cut(op.failure, ":")
		info["failure-cause"] = map[string]string{"class": class, "stack-trace": op.failure + "\n\tat org.apache.flink.runtime.dispatcher.Dispatcher.disposeSavepoint(Dispatcher.java:1)", "serialized-throwable": ""}
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": map[string]string{"id": flinkclient.OperationCompleted}, "operation": info})
}

// noteSavepointFileLocked records a savepoint written to the "filesystem", and its
// checkpoint ID.
func (c *Cluster) noteSavepointFileLocked(location string, id int64) {
	if c.savepointFiles == nil {
		c.savepointFiles = map[string]bool{}
	}
	c.savepointFiles[location] = true
	c.opts.FileSystem.writeSavepoint(location, id)
}

// checkpointIDLocked is the checkpoint ID of the savepoint or checkpoint at path, as Flink
// reads it from its metadata: a savepoint this cluster took, or a chk-<id> directory; 0 for
// a path the fake knows nothing of.
func (c *Cluster) checkpointIDLocked(path string) int64 {
	path = QualifyPath(path)
	if id, ok := c.opts.FileSystem.savepointID(path); ok {
		return id
	}
	if i := strings.LastIndex(path, "/chk-"); i >= 0 {
		if id, err := strconv.ParseInt(path[i+len("/chk-"):], 10, 64); err == nil {
			return id
		}
	}
	return 0
}

// SavepointExists reports whether a savepoint this cluster took is still on the
// "filesystem" (false once disposed of, and for a path it never wrote).
func (c *Cluster) SavepointExists(location string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.savepointFiles[location]
}

// shutdownCluster is DELETE /cluster (ShutdownHandler): the leading Dispatcher's
// shutDownCluster() completes its shutdown future with ApplicationStatus.SUCCEEDED, whatever
// its jobs' states, so the entrypoint exits 0 after its HA cleanup (shutDownLocked). The 200
// answer (an empty body) goes out first: the REST endpoint closes as the shutdown begins.
func (p *JobManager) shutdownCluster(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, struct{}{})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if p.shutdownHangs {
		p.unavailable = true
		return
	}
	p.shutDownLocked(ExitSucceeded)
}
