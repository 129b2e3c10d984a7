// Package fakeflink is a scriptable stand-in for a JobManager's REST API, served by
// httptest on 127.0.0.1. Tests set the jobs, their exceptions, the applications (Flink 2.3+;
// absent means 404 like older versions) and how savepoints behave, then point the controller's
// Flink client at URL().
package fakeflink

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
)

// SavepointMode is how the fake answers savepoint and stop-with-savepoint triggers.
type SavepointMode int

const (
	// SavepointComplete completes a trigger on its first status poll.
	SavepointComplete SavepointMode = iota
	// SavepointHold keeps triggers IN_PROGRESS until CompleteSavepoints is called.
	SavepointHold
	// SavepointFail completes triggers with a failure cause.
	SavepointFail
)

type trigger struct {
	id       string
	jobID    string
	stop     bool
	done     bool
	location string
	failure  string
	at       int64
}

// Server is the fake JobManager REST endpoint. Its methods are safe for concurrent use.
type Server struct {
	srv *httptest.Server

	mu             sync.Mutex
	unavailable    bool
	jobs           []flinkclient.Job
	exceptions     map[string][]flinkclient.Exception
	appsSupported  bool
	apps           []flinkclient.Application
	appExceptions  map[string][]flinkclient.Exception
	savepointMode  SavepointMode
	savepointDir   string
	triggers       map[string]*trigger
	triggerCounter int
	requests       []string
	savepoints     map[string]*trigger
}

// New starts a fake with no jobs, no application API (Flink before 2.3) and savepoints that
// complete on the first poll. Close it when done.
func New() *Server {
	s := &Server{
		exceptions:    map[string][]flinkclient.Exception{},
		appExceptions: map[string][]flinkclient.Exception{},
		triggers:      map[string]*trigger{},
		savepoints:    map[string]*trigger{},
		savepointDir:  "file:///savepoints",
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs/overview", s.listJobs)
	mux.HandleFunc("GET /jobs/{jobid}", s.getJob)
	mux.HandleFunc("GET /jobs/{jobid}/exceptions", s.getExceptions)
	mux.HandleFunc("POST /jobs/{jobid}/savepoints", s.triggerSavepoint)
	mux.HandleFunc("POST /jobs/{jobid}/stop", s.stop)
	mux.HandleFunc("GET /jobs/{jobid}/savepoints/{triggerid}", s.savepointStatus)
	mux.HandleFunc("GET /jobs/{jobid}/checkpoints", s.checkpoints)
	mux.HandleFunc("PATCH /jobs/{jobid}", s.cancelJob)
	mux.HandleFunc("GET /applications/overview", s.listApplications)
	mux.HandleFunc("GET /applications/{appid}", s.getApplication)
	mux.HandleFunc("POST /applications/{appid}/cancel", s.cancelApplication)
	mux.HandleFunc("GET /applications/{appid}/exceptions", s.getApplicationExceptions)
	s.srv = httptest.NewServer(s.record(mux))
	return s
}

// URL is the REST base address, e.g. http://127.0.0.1:34567.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

func (s *Server) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.Path)
		unavailable := s.unavailable
		s.mu.Unlock()
		if unavailable {
			// What a JobManager that is starting or has lost leadership answers.
			http.Error(w, `{"errors":["Service temporarily unavailable due to an ongoing leader election. Please refresh."]}`, http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// SetUnavailable makes every call answer 503, as while the JobManager restarts.
func (s *Server) SetUnavailable(v bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unavailable = v
}

// SetJobs replaces the job list.
func (s *Server) SetJobs(jobs ...flinkclient.Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs = slices.Clone(jobs)
}

// SetJobState sets one job's state, adding the job when it is not listed yet.
func (s *Server) SetJobState(jobID, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.jobs {
		if s.jobs[i].ID == jobID {
			s.jobs[i].State = state
			return
		}
	}
	s.jobs = append(s.jobs, flinkclient.Job{ID: jobID, Name: "job", State: state})
}

// JobState returns a job's state, or "" when it is not listed.
func (s *Server) JobState(jobID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.jobs {
		if j.ID == jobID {
			return j.State
		}
	}
	return ""
}

// SetExceptions sets a job's exception history, newest first.
func (s *Server) SetExceptions(jobID string, exceptions ...flinkclient.Exception) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exceptions[jobID] = slices.Clone(exceptions)
}

// SetApplications switches the application API on (Flink 2.3+) and sets its list.
func (s *Server) SetApplications(apps ...flinkclient.Application) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appsSupported = true
	s.apps = slices.Clone(apps)
}

// SetApplicationExceptions sets an application's exception history, newest first.
func (s *Server) SetApplicationExceptions(appID string, exceptions ...flinkclient.Exception) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.appExceptions[appID] = slices.Clone(exceptions)
}

// SetSavepointMode sets how new and pending triggers complete.
func (s *Server) SetSavepointMode(m SavepointMode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.savepointMode = m
}

// CompleteSavepoints completes every held trigger successfully.
func (s *Server) CompleteSavepoints() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.triggers {
		if !t.done {
			s.complete(t)
		}
	}
}

// Requests returns the calls received so far, as "METHOD /path".
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// CountRequests counts the calls received as exactly "METHOD /path".
func (s *Server) CountRequests(call string) int {
	n := 0
	for _, r := range s.Requests() {
		if r == call {
			n++
		}
	}
	return n
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func notFound(w http.ResponseWriter, what string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	_ = json.NewEncoder(w).Encode(map[string][]string{"errors": {what + " not found"}})
}

func (s *Server) listJobs(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, map[string]any{"jobs": s.jobs})
}

func (s *Server) findJob(id string) *flinkclient.Job {
	for i := range s.jobs {
		if s.jobs[i].ID == id {
			return &s.jobs[i]
		}
	}
	return nil
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.findJob(r.PathValue("jobid"))
	if j == nil {
		notFound(w, "job")
		return
	}
	writeJSON(w, j)
}

type historyEntries struct {
	Entries []flinkclient.Exception `json:"entries"`
}

func (s *Server) getExceptions(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.PathValue("jobid")
	if s.findJob(id) == nil {
		notFound(w, "job")
		return
	}
	writeJSON(w, map[string]any{"exceptionHistory": historyEntries{Entries: s.exceptions[id]}})
}

func (s *Server) newTrigger(w http.ResponseWriter, r *http.Request, stop bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.PathValue("jobid")
	j := s.findJob(id)
	if j == nil {
		notFound(w, "job")
		return
	}
	var body struct {
		TriggerID string `json:"triggerId"`
	}
	_ = json.NewDecoder(r.Body).Decode(&body)
	if t, ok := s.triggers[body.TriggerID]; ok && t.jobID == id {
		// Flink registers an operation idempotently by (job, trigger ID).
		writeJSON(w, map[string]string{"request-id": t.id})
		return
	}
	if j.State != flinkclient.JobStateRunning {
		w.WriteHeader(http.StatusConflict)
		writeJSON(w, map[string][]string{"errors": {"job " + id + " is " + j.State + ", not RUNNING"}})
		return
	}
	s.triggerCounter++
	tid := body.TriggerID
	if tid == "" {
		tid = fmt.Sprintf("%032x", s.triggerCounter)
	}
	t := &trigger{id: tid, jobID: id, stop: stop, at: int64(s.triggerCounter)}
	s.triggers[tid] = t
	writeJSON(w, map[string]string{"request-id": tid})
}

func (s *Server) triggerSavepoint(w http.ResponseWriter, r *http.Request) { s.newTrigger(w, r, false) }

func (s *Server) stop(w http.ResponseWriter, r *http.Request) { s.newTrigger(w, r, true) }

// complete finishes a trigger successfully: a stop leaves the job FINISHED, as Flink does
// after stop-with-savepoint. Callers hold s.mu.
func (s *Server) complete(t *trigger) {
	t.done = true
	t.location = fmt.Sprintf("%s/savepoint-%.6s-%s", s.savepointDir, t.jobID, t.id)
	s.savepoints[t.jobID] = t
	if t.stop {
		if j := s.findJob(t.jobID); j != nil {
			j.State = flinkclient.JobStateFinished
		}
	}
}

func (s *Server) savepointStatus(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.triggers[r.PathValue("triggerid")]
	if !ok || t.jobID != r.PathValue("jobid") {
		notFound(w, "trigger")
		return
	}
	if !t.done {
		switch s.savepointMode {
		case SavepointComplete:
			s.complete(t)
		case SavepointFail:
			t.done = true
			t.failure = "java.util.concurrent.CompletionException: checkpoint coordinator is suspending"
		}
	}
	if !t.done {
		writeJSON(w, map[string]any{"status": map[string]string{"id": flinkclient.OperationInProgress}})
		return
	}
	op := map[string]any{}
	if t.failure != "" {
		op["failure-cause"] = map[string]string{"class": "java.lang.Exception", "stack-trace": t.failure}
	} else {
		op["location"] = t.location
	}
	writeJSON(w, map[string]any{"status": map[string]string{"id": flinkclient.OperationCompleted}, "operation": op})
}

func (s *Server) listApplications(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.appsSupported {
		notFound(w, "handler")
		return
	}
	writeJSON(w, map[string]any{"applications": s.apps})
}

func (s *Server) getApplicationExceptions(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.appsSupported {
		notFound(w, "handler")
		return
	}
	writeJSON(w, map[string]any{"exceptionHistory": historyEntries{Entries: s.appExceptions[r.PathValue("appid")]}})
}

func (s *Server) checkpoints(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.PathValue("jobid")
	if s.findJob(id) == nil {
		notFound(w, "job")
		return
	}
	latest := map[string]any{"completed": nil, "savepoint": nil, "failed": nil, "restored": nil}
	if t := s.savepoints[id]; t != nil {
		latest["savepoint"] = map[string]any{
			"@class": "completed", "id": t.at, "status": "COMPLETED", "is_savepoint": true,
			"trigger_timestamp": t.at, "latest_ack_timestamp": t.at, "external_path": t.location, "discarded": false,
		}
	}
	writeJSON(w, map[string]any{"counts": map[string]int{}, "latest": latest, "history": []any{}})
}

func (s *Server) cancelJob(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.findJob(r.PathValue("jobid"))
	if j == nil {
		notFound(w, "job")
		return
	}
	if r.URL.Query().Get("mode") != "cancel" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	switch j.State {
	case flinkclient.JobStateCanceled:
	case flinkclient.JobStateFinished, flinkclient.JobStateFailed:
		w.WriteHeader(http.StatusConflict)
		writeJSON(w, map[string][]string{"errors": {"Job cancellation failed because the job has already reached another terminal state (" + j.State + ")."}})
		return
	default:
		j.State = flinkclient.JobStateCanceled
	}
	w.WriteHeader(http.StatusAccepted)
	writeJSON(w, map[string]any{})
}

func (s *Server) findApp(id string) *flinkclient.Application {
	for i := range s.apps {
		if s.apps[i].ID == id {
			return &s.apps[i]
		}
	}
	return nil
}

func (s *Server) getApplication(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.appsSupported {
		notFound(w, "handler")
		return
	}
	a := s.findApp(r.PathValue("appid"))
	if a == nil {
		notFound(w, "application")
		return
	}
	writeJSON(w, a)
}

func (s *Server) cancelApplication(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.appsSupported {
		notFound(w, "handler")
		return
	}
	a := s.findApp(r.PathValue("appid"))
	if a == nil {
		notFound(w, "application")
		return
	}
	switch a.Status {
	case flinkclient.ApplicationStateCanceled:
	case flinkclient.ApplicationStateFinished, flinkclient.ApplicationStateFailed:
		w.WriteHeader(http.StatusConflict)
		writeJSON(w, map[string][]string{"errors": {"Application cancellation failed because the application has already reached another terminal state (" + a.Status + ")."}})
		return
	default:
		a.Status = flinkclient.ApplicationStateCanceled
		for i := range s.jobs {
			if !flinkclient.IsTerminalJobState(s.jobs[i].State) {
				s.jobs[i].State = flinkclient.JobStateCanceled
			}
		}
	}
	w.WriteHeader(http.StatusAccepted)
	writeJSON(w, map[string]any{})
}
