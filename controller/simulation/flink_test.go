package simulation_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
)

// leaseDuration is the model's HA lease (Flink's default is 15 s).
const leaseDuration = 15 * time.Second

// proc is one JobManager process (a container run of a pod).
type proc struct {
	pod, ip         string
	jobID, from     string
	jrsPath         string
	alive, nodeLost bool
	leader          bool
	startedAt       time.Time
	restarts        int
	crashing        int // container restarts left in a crash loop
	exitCode        int
	exitMessage     string
	broken          bool // main() throws
	job             *fjob
	others          []*fjob // job graphs of other IDs recovered from HA
	driverFailed    bool
	triggers        map[string]*trigger
	latestSavepoint string
	renewedAt       time.Time
	jobManagerMode  bool // Job mode: the process exits once its job ended
}

// fjob is a job in a JobManager process.
type fjob struct {
	id, state string
}

type trigger struct {
	stop      bool
	stepsLeft int
	fail      bool
	done      bool
	location  string
	failure   string
}

// truth is what happened to one job ID, whatever the controller believes.
type truth struct {
	mains    int
	ran      bool
	ended    bool
	endState string
	stopped  bool // ended by stop-with-savepoint
}

func (w *world) truthOf(id string) *truth {
	t := w.truths[id]
	if t == nil {
		t = &truth{}
		w.truths[id] = t
	}
	return t
}

// start starts the JobManager container of a pod.
func (w *world) start(p *corev1.Pod) *proc {
	pr := &proc{pod: p.Name, ip: w.ips[p.Name], jobManagerMode: p.Spec.RestartPolicy == corev1.RestartPolicyNever}
	w.procs[p.Name] = pr
	w.restart(pr, p)
	return pr
}

// restart starts a new run of the process: it reads its command line and configuration,
// then competes for the leadership.
func (w *world) restart(pr *proc, p *corev1.Pod) {
	args := p.Spec.Containers[0].Args
	pr.jobID = argValue(args, "--job-id")
	pr.broken = hasArg(args, "--broken")
	pr.alive, pr.leader, pr.job, pr.others, pr.driverFailed = true, false, nil, nil, false
	pr.triggers, pr.latestSavepoint = map[string]*trigger{}, ""
	pr.startedAt = w.clock.Now()
	pr.jrsPath = ""
	conf := w.flinkConfiguration()
	if conf[resources.KeyJRSDeleteOnCommit] == "false" {
		pr.jrsPath = conf[resources.KeyJRSStoragePath]
	}
	pr.from = conf[resources.KeySavepointPath]
	w.lead(pr)
}

// stop kills a process.
func (w *world) stop(pod, why string) {
	pr := w.procs[pod]
	if pr == nil || !pr.alive {
		return
	}
	pr.alive, pr.leader = false, false
	pr.exitCode, pr.exitMessage = 143, why
}

func (w *world) haName() string { return flinkha.ClusterConfigMapName(name) }

func (w *world) haConfigMap() *corev1.ConfigMap {
	cm := &corev1.ConfigMap{}
	if w.cl.Get(bg, types.NamespacedName{Namespace: ns, Name: w.haName()}, cm) != nil {
		return nil
	}
	return cm
}

// lead makes a live, connected process the leader when the lease is free, and renews a
// leader's lease; a leader that cannot renew steps down when its lease ends. A new leader
// recovers the job graphs in the HA store, else looks its job up in the job result store,
// else runs main().
func (w *world) lead(pr *proc) {
	now := w.clock.Now()
	if pr.leader && now.After(pr.renewedAt.Add(leaseDuration)) {
		pr.leader = false
	}
	if !pr.alive || pr.nodeLost {
		return
	}
	cm := w.haConfigMap()
	if cm != nil {
		if e, err := flinkha.ParseElection(cm.Annotations[flinkha.LeaderAnnotation]); err == nil &&
			e.Holder != "" && e.Holder != pr.pod && now.Before(e.RenewTime.Add(e.LeaseDuration)) {
			pr.leader = false
			return
		}
	}
	if cm == nil {
		cm = flinkha.NewConfigMap(ns, w.haName(), name)
	}
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[flinkha.LeaderAnnotation] = flinkha.FormatElection(flinkha.Election{Holder: pr.pod, LeaseDuration: leaseDuration, AcquireTime: now, RenewTime: now})
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[flinkha.LeaderKey(flinkha.ComponentRestServer)] = flinkha.FormatLeaderInformation("session-"+pr.pod, "http://"+pr.ip+":8081")
	gained := !pr.leader
	pr.leader, pr.renewedAt = true, now
	if gained {
		w.recover(pr, cm)
	}
	if cm.ResourceVersion == "" {
		w.must(w.cl.Create(bg, cm))
	} else {
		w.must(client.IgnoreNotFound(w.cl.Update(bg, cm)))
	}
}

// recover is what a JobManager that gains the leadership does in Application mode.
func (w *world) recover(pr *proc, cm *corev1.ConfigMap) {
	if pr.job != nil {
		return
	}
	for _, id := range flinkha.JobGraphs(cm) {
		t := w.truthOf(id)
		if t.ended {
			w.violate("job %s rerun after it ended: recovered from a job graph left in HA", id)
		}
		if id == pr.jobID {
			pr.job = &fjob{id: id, state: flinkclient.JobStateRunning}
			t.ran = true
			continue
		}
		// Another deploy's job graph: Flink recovers and runs it, whatever the command line.
		w.violate("the JobManager of job %s recovered job %s of another deploy from HA", pr.jobID, id)
		pr.others = append(pr.others, &fjob{id: id, state: flinkclient.JobStateRunning})
	}
	if pr.job != nil {
		return
	}
	if res, ok := w.jrs[pr.jrsPath+"/"+pr.jobID]; ok && pr.jrsPath != "" {
		pr.job = &fjob{id: pr.jobID, state: res}
		w.jobEndedInProcess(pr)
		return
	}
	t := w.truthOf(pr.jobID)
	if t.ended {
		w.violate("job %s rerun after it ended: main() ran again (no job result found)", pr.jobID)
	}
	switch {
	case t.ran && !w.haDeletedExternally:
		w.violate("job %s re-ran main() from %q after it had run: its state since is lost", pr.jobID, pr.from)
	case t.ran && pr.from != "" && w.recordedRan(pr.jobID):
		// Even with the HA data deleted behind the controller, a restart must not rewind the
		// job to its deploy's savepoint once the controller saw it run: the savepoint is in
		// the Flink configuration only until then, never in the pod template.
		w.violate("job %s re-ran main() from its deploy's savepoint %q after the controller saw it run: its state since is lost", pr.jobID, pr.from)
	case t.ran:
		// The HA ConfigMaps were deleted while no JobManager ran the job (crashed, restarting,
		// its pod replaced): the kubelet restarting the container re-runs main() (from empty
		// state) before any controller can see it. Deleted behind a JobManager that runs the
		// job, the controller must answer before a restart (checkHALoss).
	}
	t.mains++
	if pr.broken {
		// main() throws.
		if w.v23 {
			pr.driverFailed = true
			return
		}
		pr.alive, pr.leader = false, false
		pr.exitCode, pr.exitMessage = 1, "org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: broken"
		if !pr.jobManagerMode {
			pr.crashing = 3
		}
		return
	}
	pr.job = &fjob{id: pr.jobID, state: flinkclient.JobStateRunning}
	t.ran = true
	cm.Data[flinkha.JobGraphKey(pr.jobID)] = "graph"
}

// endJob ends a process's job in a globally terminal state: the result goes to the job
// result store, the job graph leaves the HA store, and in Job mode the JobManager exits.
func (w *world) endJob(pr *proc, state string, stopped bool) {
	pr.job.state = state
	t := w.truthOf(pr.job.id)
	t.ended, t.endState, t.stopped = true, state, stopped
	if pr.jrsPath != "" {
		w.jrs[pr.jrsPath+"/"+pr.job.id] = state
	}
	if cm := w.haConfigMap(); cm != nil {
		delete(cm.Data, flinkha.JobGraphKey(pr.job.id))
		w.must(client.IgnoreNotFound(w.cl.Update(bg, cm)))
	}
	w.jobEndedInProcess(pr)
}

func (w *world) jobEndedInProcess(pr *proc) {
	if pr.jobManagerMode {
		pr.alive, pr.leader = false, false
		pr.exitCode = 0
		if pr.job.state == flinkclient.JobStateFailed {
			pr.exitCode = 1
		}
	}
}

// flink runs the processes once: leases are renewed or taken over, savepoints progress.
func (w *world) flink() {
	for _, pr := range w.sortedProcs() {
		w.lead(pr)
		for id, tr := range pr.triggers {
			if tr.done {
				continue
			}
			if tr.stepsLeft > 0 {
				tr.stepsLeft--
				continue
			}
			tr.done = true
			if tr.fail || pr.job == nil || pr.job.state != flinkclient.JobStateRunning {
				tr.failure = "org.apache.flink.runtime.checkpoint.CheckpointException: declined"
				continue
			}
			w.spSeq++
			tr.location = fmt.Sprintf("file:///savepoints/savepoint-%d", w.spSeq)
			w.savepoints = append(w.savepoints, tr.location)
			pr.latestSavepoint = tr.location
			if tr.stop {
				w.endJob(pr, flinkclient.JobStateFinished, true)
			}
			_ = id
		}
	}
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

// rest is the Flink REST API behind the JobManager Service: a ready pod's process, which
// answers for the cluster only while it leads.
type rest struct{ w *world }

var errUnavailable = &flinkclient.HTTPError{Method: "GET", Path: "/", StatusCode: 503, Body: "leader election ongoing"}

func notFound(what string) error {
	return &flinkclient.HTTPError{Method: "GET", Path: what, StatusCode: 404, Body: "not found"}
}

func (r rest) target() (*proc, error) {
	w := r.w
	if w.apiDown > 0 {
		return nil, fmt.Errorf("dial tcp: i/o timeout")
	}
	var ready []*proc
	for _, p := range w.jmPods() {
		pr := w.procs[p.Name]
		if p.DeletionTimestamp == nil && pr != nil && pr.alive && !pr.nodeLost {
			ready = append(ready, pr)
		}
	}
	if len(ready) == 0 {
		return nil, fmt.Errorf("connection refused")
	}
	pr := ready[w.rng.Intn(len(ready))]
	if !pr.leader {
		return nil, errUnavailable
	}
	return pr, nil
}

func (r rest) jobs(pr *proc) []flinkclient.Job {
	var out []flinkclient.Job
	if pr.job != nil {
		out = append(out, flinkclient.Job{ID: pr.job.id, Name: "job", State: pr.job.state})
	}
	for _, o := range pr.others {
		out = append(out, flinkclient.Job{ID: o.id, Name: "job", State: o.state})
	}
	if pr.driverFailed {
		out = append(out, flinkclient.Job{ID: pr.jobID, Name: flinkclient.ApplicationDriverJobName, State: flinkclient.JobStateFailed})
	}
	return out
}

func (r rest) ListJobs(context.Context) ([]flinkclient.Job, error) {
	pr, err := r.target()
	if err != nil {
		return nil, err
	}
	return r.jobs(pr), nil
}

func (r rest) GetJob(_ context.Context, id string) (*flinkclient.Job, error) {
	pr, err := r.target()
	if err != nil {
		return nil, err
	}
	for _, j := range r.jobs(pr) {
		if j.ID == id {
			return &j, nil
		}
	}
	return nil, notFound("/jobs/" + id)
}

func (r rest) GetExceptions(context.Context, string) ([]flinkclient.Exception, error) {
	return []flinkclient.Exception{{Name: "java.lang.RuntimeException: model failure", Timestamp: 1}}, nil
}

func (r rest) trigger(id string, req flinkclient.SavepointRequest, stop bool) (string, error) {
	pr, err := r.target()
	if err != nil {
		return "", err
	}
	if pr.job == nil || pr.job.id != id {
		return "", notFound("/jobs/" + id)
	}
	if tr, ok := pr.triggers[req.TriggerID]; ok && req.TriggerID != "" {
		_ = tr // idempotent: the same operation
		return req.TriggerID, nil
	}
	if pr.job.state != flinkclient.JobStateRunning {
		return "", &flinkclient.HTTPError{Method: "POST", Path: "/jobs/" + id, StatusCode: 409, Body: "job is " + pr.job.state}
	}
	tid := req.TriggerID
	if tid == "" {
		tid = flinkclient.NewID()
	}
	pr.triggers[tid] = &trigger{stop: stop, stepsLeft: r.w.rng.Intn(3), fail: r.w.rng.Intn(8) == 0}
	return tid, nil
}

func (r rest) TriggerSavepoint(_ context.Context, id string, req flinkclient.SavepointRequest) (string, error) {
	return r.trigger(id, req, false)
}

func (r rest) StopWithSavepoint(_ context.Context, id string, req flinkclient.SavepointRequest) (string, error) {
	return r.trigger(id, req, true)
}

func (r rest) SavepointStatus(_ context.Context, id, tid string) (*flinkclient.SavepointStatus, error) {
	pr, err := r.target()
	if err != nil {
		return nil, err
	}
	tr, ok := pr.triggers[tid]
	if !ok {
		return nil, notFound("/jobs/" + id + "/savepoints/" + tid)
	}
	if !tr.done {
		return &flinkclient.SavepointStatus{State: flinkclient.OperationInProgress}, nil
	}
	return &flinkclient.SavepointStatus{State: flinkclient.OperationCompleted, Location: tr.location, FailureCause: tr.failure}, nil
}

func (r rest) GetCheckpoints(_ context.Context, id string) (*flinkclient.Checkpoints, error) {
	pr, err := r.target()
	if err != nil {
		return nil, err
	}
	if pr.job == nil || pr.job.id != id {
		return nil, notFound("/jobs/" + id + "/checkpoints")
	}
	cps := &flinkclient.Checkpoints{}
	if pr.latestSavepoint != "" {
		cps.Latest.Savepoint = &flinkclient.Checkpoint{IsSavepoint: true, ExternalPath: pr.latestSavepoint, Status: "COMPLETED"}
	}
	return cps, nil
}

func (r rest) CancelJob(_ context.Context, id string) error {
	pr, err := r.target()
	if err != nil {
		return err
	}
	if pr.job == nil || pr.job.id != id {
		return notFound("/jobs/" + id)
	}
	if pr.job.state != flinkclient.JobStateRunning && pr.job.state != flinkclient.JobStateRestarting {
		return &flinkclient.HTTPError{Method: "PATCH", Path: "/jobs/" + id, StatusCode: 409, Body: "job is " + pr.job.state}
	}
	r.w.endJob(pr, flinkclient.JobStateCanceled, false)
	return nil
}

func (r rest) app(pr *proc) flinkclient.Application {
	a := flinkclient.Application{ID: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", Status: flinkclient.ApplicationStateRunning}
	switch {
	case pr.driverFailed:
		a.Status = flinkclient.ApplicationStateFailed
	case pr.job != nil && pr.job.state == flinkclient.JobStateFinished:
		a.Status = flinkclient.ApplicationStateFinished
	case pr.job != nil && pr.job.state == flinkclient.JobStateFailed:
		a.Status = flinkclient.ApplicationStateFailed
	case pr.job != nil && pr.job.state == flinkclient.JobStateCanceled:
		a.Status = flinkclient.ApplicationStateCanceled
	}
	return a
}

func (r rest) ListApplications(context.Context) ([]flinkclient.Application, error) {
	if !r.w.v23 {
		return nil, notFound("/applications/overview")
	}
	pr, err := r.target()
	if err != nil {
		return nil, err
	}
	return []flinkclient.Application{r.app(pr)}, nil
}

func (r rest) GetApplication(context.Context, string) (*flinkclient.Application, error) {
	if !r.w.v23 {
		return nil, notFound("/applications")
	}
	pr, err := r.target()
	if err != nil {
		return nil, err
	}
	a := r.app(pr)
	return &a, nil
}

func (r rest) CancelApplication(_ context.Context, _ string) error {
	if !r.w.v23 {
		return notFound("/applications")
	}
	pr, err := r.target()
	if err != nil {
		return err
	}
	if pr.job != nil && pr.job.state == flinkclient.JobStateRunning {
		r.w.endJob(pr, flinkclient.JobStateCanceled, false)
	}
	return nil
}

func (r rest) GetApplicationExceptions(context.Context, string) ([]flinkclient.Exception, error) {
	return []flinkclient.Exception{{Name: "java.lang.RuntimeException: main() failed", Timestamp: 1}}, nil
}

// deleteHA deletes the cluster's HA ConfigMaps, as a careless kubectl delete would.
func (w *world) deleteHA() {
	if cm := w.haConfigMap(); cm != nil {
		if err := w.cl.Delete(bg, cm); err != nil && !apierrors.IsNotFound(err) {
			w.must(err)
		}
	}
}
