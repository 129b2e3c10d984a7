package simulation_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/containerargs"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// brokenMain is what main() throws when a spec update broke the job (the --broken argument).
const brokenMain = "org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: broken"

// deployProperty carries, in a process's configuration, the deploy its pod belongs to (job
// ID and revision); Flink ignores it.
const deployProperty = "simulation.deploy"

// proc is the JobManager container of one pod, as its kubelet sees it: the fake Flink
// process it runs now (a new one per container start), its restarts and how it last exited.
type proc struct {
	pod, ip   string
	jm        *fakeflink.JobManager
	nodeLost  bool
	startedAt time.Time
	restarts  int
	crashing  int // container restarts left in a crash loop
	// unavailable counts the steps the process's REST API still answers 503.
	unavailable int
	// exited records that the current run's end was seen, with its exit code and message.
	exited         bool
	exitedAt       time.Time
	exitCode       int
	exitMessage    string
	jobManagerMode bool // Job mode: restartPolicy Never, the process exits once its job ended
}

func (pr *proc) alive() bool { return pr.jm != nil && pr.jm.Alive() }

// jobID is the job ID the container was started with (--job-id).
func (pr *proc) jobID() string {
	if pr.jm == nil {
		return ""
	}
	return pr.jm.Config().Properties[fakeflink.PropJobID]
}

// from is the savepoint a main() of the current run restores.
func (pr *proc) from() string {
	if pr.jm == nil {
		return ""
	}
	if cfg := pr.jm.Config(); cfg.FromSavepoint != "" {
		return cfg.FromSavepoint
	}
	return pr.jm.Config().Properties[fakeflink.PropSavepointPath]
}

// truth is what happened to one job ID in Flink, whatever the controller believes.
type truth struct {
	mains    int
	ran      bool
	ended    bool
	endState string
	stopped  bool // ended by stop-with-savepoint
	// savepointed is set once a savepoint of the job completed.
	savepointed bool
}

func (w *world) truthOf(id string) *truth {
	t := w.truths[id]
	if t == nil {
		t = &truth{}
		w.truths[id] = t
	}
	return t
}

// ExecutionStarted implements fakeflink.Observer: a job that ended never runs again; a
// JobManager recovers only its own deploy's job; main() never runs again for a job that ran
// while its HA data is there, nor from the deploy's savepoint once the controller saw the
// job run.
func (w *world) ExecutionStarted(p *fakeflink.JobManager, e fakeflink.Execution) {
	t := w.truthOf(e.JobID)
	switch {
	case t.ended && e.Recovered:
		w.violate("job %s rerun after it ended: recovered from a job graph left in HA", e.JobID)
	case t.ended:
		w.violate("job %s rerun after it ended: main() ran again (no job result found)", e.JobID)
	}
	deploy := p.Config().Properties[deployProperty]
	w.checkLastStateRestore(p, e, t) // laststate_test.go
	if e.Recovered && w.graphOf[e.JobID] != deploy {
		// Flink recovers every job graph in the HA store, whatever the command line says.
		w.violate("the JobManager of deploy %s recovered job %s of deploy %s from HA", deploy, e.JobID, w.graphOf[e.JobID])
	}
	if !e.Recovered {
		w.graphOf[e.JobID] = deploy
	}
	if !e.Recovered {
		switch {
		case t.ran && e.RestoredCheckpoint:
			// main() under a job ID whose checkpoints were kept: a last-state redeploy, whose
			// restore checkLastStateRestore checked.
		case t.ran && !w.haDeletedExternally:
			w.violate("job %s re-ran main() from %q after it had run: its state since is lost", e.JobID, e.RestoredFrom)
		case t.ran && w.graphSeen[deploy]:
			// A reconcile read the job's graph in HA (or the status recorded the run): from
			// then on the Deployment's Flink configuration names ResumeFromHAOnly, and main()
			// run again without the HA data fails instead of starting.
			w.violate("job %s re-ran main() from %q after its HA data was deleted, although a reconcile had seen its job graph: its state since is lost", e.JobID, e.RestoredFrom)
		case t.ran && e.RestoredFrom != w.fromOf[e.JobID]:
			w.violate("job %s re-ran main() from %q, not its deploy's restore point %q", e.JobID, e.RestoredFrom, w.fromOf[e.JobID])
		case t.ran:
			// The one window no controller sees: main() submitted the job and the HA data
			// was deleted (the JobManager exits) before any reconcile read the job graph.
			// The rerun restores what the first run restored, the deploy's own restore
			// point: what is lost is what the job did within that window, which no one
			// outside Flink observed (graphSeen closes it at the next reconcile).
		}
		t.mains++
	}
	t.ran = true
}

// ExecutionEnded implements fakeflink.Observer.
func (w *world) ExecutionEnded(_ *fakeflink.JobManager, e fakeflink.Execution) {
	t := w.truthOf(e.JobID)
	t.ended, t.endState = true, e.State
}

// SavepointCompleted implements fakeflink.Observer: the savepoints in completion order.
func (w *world) SavepointCompleted(p *fakeflink.JobManager, jobID, location string, stop bool) {
	w.savepointedIn[p.Config().Properties[deployProperty]] = true
	w.savepoints = append(w.savepoints, location)
	w.truthOf(jobID).savepointed = true
	w.newestSnapshot[jobID], w.snapshotAt[jobID] = location, w.clock.Now()
	if stop {
		w.truthOf(jobID).stopped = true
	}
}

// startContainer starts a run of a pod's JobManager container: a fake Flink process with the
// pod's command line and the Flink configuration ConfigMap as it is now, publishing the pod's
// address as leader.
func (w *world) startContainer(pr *proc, p *corev1.Pod) {
	// The kubelet expands the container's variables (the restore path of Deployment mode's
	// command line, from the ConfigMap) at every container start.
	cm := &corev1.ConfigMap{}
	if w.cl.Get(bg, types.NamespacedName{Namespace: ns, Name: resources.ConfigMapName(name)}, cm) != nil {
		cm = nil
	}
	args := containerargs.Expand(&p.Spec.Containers[0], cm)
	props := w.flinkConfiguration()
	props[fakeflink.PropJobID] = argValue(args, "--job-id")
	props[deployProperty] = argValue(args, "--job-id") + "@" + p.Labels[resources.LabelRevision]
	cfg := fakeflink.Config{Name: p.Name, Properties: props, Address: "http://" + pr.ip + ":8081",
		FromSavepoint: argValue(args, "--fromSavepoint"), AllowNonRestoredState: slices.Contains(args, "--allowNonRestoredState"), Revision: p.Labels[resources.LabelRevision]}
	if hasArg(args, "--broken") {
		cfg.Program = &fakeflink.Program{Throw: brokenMain}
	}
	pr.exited, pr.startedAt = false, w.clock.Now()
	pr.jm = w.fl.Start(cfg)
	// Savepoints complete when the model says (flink), not on the first status poll.
	pr.jm.SetSavepointMode(fakeflink.SavepointHold)
}

// stop ends a pod's container run: gracefully (SIGTERM: the leader gives up its lease) or
// killed, with the exit the kubelet reports.
func (w *world) stop(pod string, graceful bool, code int, why string) {
	pr := w.procs[pod]
	if pr == nil || !pr.alive() {
		return
	}
	pr.exited, pr.exitedAt, pr.exitCode, pr.exitMessage = true, w.clock.Now(), code, why
	if graceful {
		pr.jm.Stop()
	} else {
		pr.jm.Kill()
	}
}

// exitedOnItsOwn records the exit of a process that ended without the model stopping it, as
// the fake reports it: main() threw on Flink before 2.3 (a startup failure, which repeats:
// a crash loop), or another fatal error such as its HA ConfigMap deleted (one exit).
func (pr *proc) exitedOnItsOwn(now time.Time) {
	if pr.jm == nil || pr.exited || pr.alive() {
		return
	}
	st, _ := pr.jm.ExitStatus()
	pr.exited, pr.exitedAt, pr.exitCode, pr.exitMessage = true, now, int(st.Code), st.Message
	if st.Code == fakeflink.ExitStartupFailure || strings.HasPrefix(st.Message, fakeflink.MainMethodError) {
		// main() threw as the process started (the fake runs it in Start).
		pr.exitedAt = pr.startedAt
		if !pr.jobManagerMode {
			pr.crashing = 3
		}
	}
}

func (w *world) haName() string { return flinkha.ClusterConfigMapName(name) }

func (w *world) haConfigMap() *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	if w.cl.Get(bg, types.NamespacedName{Namespace: ns, Name: w.haName()}, cm) != nil {
		return nil
	}
	return cm
}

// flink runs the Flink side once: leases are renewed or taken over, pending savepoints
// complete or fail (unless a directed test drives them), and in Job mode a JobManager whose
// application ended exits when it runs with execution.shutdown-on-application-finish
// (Flink's default; the controller's configuration turns it off).
func (w *world) flink() {
	w.fl.Leader()
	for _, pr := range w.sortedProcs() {
		if !pr.alive() {
			continue
		}
		if pr.unavailable > 0 {
			if pr.unavailable--; pr.unavailable == 0 {
				pr.jm.SetUnavailable(false)
			}
		}
		if !w.manualSavepoints && !w.savepointsStuck {
			switch r := w.rng.Intn(10); {
			case r < 3: // still in progress
			case r == 3:
				pr.jm.FailSavepoints("")
			default:
				pr.jm.CompleteSavepoints()
			}
		}
		if pr.jobManagerMode && shutsDownOnFinish(pr.jm) && pr.jm.Leads() && applicationEnded(pr.jm) {
			code := 0
			for _, id := range pr.jm.JobIDs() {
				if pr.jm.JobState(id) == flinkclient.JobStateFailed {
					code = 1
				}
			}
			if pr.jm.ApplicationState() == flinkclient.ApplicationStateFailed {
				code = 1
			}
			pr.exited, pr.exitedAt, pr.exitCode, pr.exitMessage = true, w.clock.Now(), code, "application finished"
			pr.jm.Exit()
		}
	}
}

// shutsDownOnFinish reports whether a process runs with execution.shutdown-on-application-finish
// (Flink's default, true). The controller's configuration sets it false in both modes: the
// JobManager then outlives its job until the controller ends it (DELETE /cluster), whose exit
// the kubelet sees as any other (exitedOnItsOwn).
func shutsDownOnFinish(jm *fakeflink.JobManager) bool {
	return !strings.EqualFold(jm.Config().Properties[resources.KeyShutdownOnApplicationEnd], "false")
}

// applicationEnded reports whether every job of a process ended globally (or, on Flink 2.3,
// its application did).
func applicationEnded(jm *fakeflink.JobManager) bool {
	if flinkclient.IsTerminalApplicationState(jm.ApplicationState()) {
		return true
	}
	ids := jm.JobIDs()
	for _, id := range ids {
		if !flinkclient.IsTerminalJobState(jm.JobState(id)) {
			return false
		}
	}
	return len(ids) > 0
}

func (w *world) sortedProcs() []*proc {
	var out []*proc
	for _, p := range w.jmPods() {
		if pr := w.procs[p.Name]; pr != nil {
			out = append(out, pr)
		}
	}
	return out
}

// newestSavepoint is the newest completed savepoint of the cluster, "" for none.
func (w *world) newestSavepoint() string {
	if len(w.savepoints) == 0 {
		return ""
	}
	return w.savepoints[len(w.savepoints)-1]
}

// service is the JobManager Service: a request reaches a random ready pod's process, which
// answers for the leader (or 503 while nobody leads). The Flink API is down (a timeout)
// while apiDown lasts.
type service struct{ w *world }

// RoundTrip implements http.RoundTripper.
func (s service) RoundTrip(r *http.Request) (*http.Response, error) {
	w := s.w
	if w.apiDown > 0 || w.unanswered != nil && w.unanswered(r) {
		return nil, fmt.Errorf("dial tcp %s: i/o timeout", r.URL.Host)
	}
	var ready []*proc
	for _, p := range w.jmPods() {
		pr := w.procs[p.Name]
		if p.DeletionTimestamp == nil && pr != nil && pr.alive() && !pr.nodeLost {
			ready = append(ready, pr)
		}
	}
	if len(ready) == 0 {
		return nil, fmt.Errorf("dial tcp %s: connection refused", r.URL.Host)
	}
	rec := httptest.NewRecorder()
	ready[w.rng.Intn(len(ready))].jm.ServeHTTP(rec, r)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// deleteHA deletes the cluster's HA ConfigMaps, as a careless kubectl delete would: the
// leading JobManager exits (fakeflink.Cluster.LoseHA).
func (w *world) deleteHA() {
	w.must(w.fl.LoseHA())
}

// deleteJobGraphs deletes only the job graphs and job ConfigMaps: the leader runs on, unable
// to take a checkpoint or savepoint.
func (w *world) deleteJobGraphs() {
	w.must(w.fl.LoseJobGraphs())
}

// deleteExecutionPlans deletes only the job graphs: the leader runs on, and its jobs'
// ConfigMaps stay.
func (w *world) deleteExecutionPlans() {
	w.must(w.fl.LoseExecutionPlans())
}
