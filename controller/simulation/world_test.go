package simulation_test

import (
	"fmt"
	"maps"
	"math/rand"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

const (
	ns        = "default"
	name      = "wc"
	waitBound = 5 * time.Minute
)

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1beta1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// recorder keeps the controller's Events.
type recorder struct{ notes []string }

func (r *recorder) Eventf(_ runtime.Object, _ runtime.Object, eventtype, reason, _ string, note string, args ...any) {
	r.notes = append(r.notes, eventtype+" "+reason+": "+fmt.Sprintf(note, args...))
}

// world is one simulated cluster: Kubernetes, Flink, the controller, and what really happened.
type world struct {
	t     testing.TB
	seed  int64
	rng   *rand.Rand
	clock *clocktesting.FakeClock
	// skew is how far the controller's clock is ahead of Flink's and Kubernetes' (w.clock);
	// negative when behind.
	skew time.Duration
	cl   *store
	r    *controller.Reconciler
	rec  *recorder
	mode v1beta1.JobManagerDeploymentType
	v23  bool

	// fl is the fake Flink cluster (fakeflink) of the cluster's HA cluster ID; its HA
	// ConfigMaps live in the model's API server, where the controller reads them.
	fl *fakeflink.Cluster
	// manualSavepoints leaves pending savepoints to the directed tests (finishTriggers).
	manualSavepoints bool
	// savepointsStuck keeps every savepoint in progress (a checkpoint storage that hangs)
	// until the quiet phase heals it.
	savepointsStuck bool
	procs           map[string]*proc
	k               *kubeModel // the model's Kubernetes outside its API server (kube_test.go)
	ips             map[string]string
	podSeq          int
	ipSeq           int
	jobPodMade      map[types.UID]bool
	savepoints      []string
	// newestSnapshot is, by job ID, the path of its newest completed checkpoint or savepoint
	// (laststate_test.go): what a last-state redeploy under that job ID must restore.
	newestSnapshot map[string]string
	// graphOf is the deploy whose main() submitted each job ID's graph last.
	graphOf     map[string]string
	conf        map[string]string
	pods        []corev1.Pod
	podsVersion int
	confVersion string
	truths      map[string]*truth
	apiDown     int
	// unanswered, when set, makes the requests it matches time out, as a lossy network
	// drops some calls while others get through.
	unanswered func(r *http.Request) bool
	// haDeletedExternally is set once the HA ConfigMaps were deleted behind the controller.
	haDeletedExternally bool
	// loseStatusWrites, when set, is how many status writes of the next reconcile land; the
	// API server loses the ones after (store.statusWrites).
	loseStatusWrites *int
	// snapshotAt is, by job ID, when its newest checkpoint or savepoint completed (Flink's
	// clock).
	snapshotAt map[string]time.Time
	// graphSeen are the deploys (graphOf) whose job graph a reconcile that ended without
	// error found in the HA ConfigMaps: the controller had its chance to pin the deploy to
	// its HA data.
	graphSeen map[string]bool

	// seen are the JobManager workloads seen, by UID; deployed the job IDs deployed.
	seen       map[types.UID]bool
	deployed   map[string]bool
	lastDeploy string
	// lastWorkloadDeploy is the deploy (workload.deploy) of the newest JobManager workload,
	// a last-state redeploy's too; savepointedIn the deploys one of whose JobManagers
	// completed a savepoint.
	lastWorkloadDeploy string
	savepointedIn      map[string]bool
	// recordedDeployFailed are the deploys (workload.deploy) the controller recorded
	// DeployFailed: a job ID's last-state redeploys are deploys of their own.
	recordedDeployFailed map[string]bool
	fromOf               map[string]string
	// specFromOf is spec.job.fromSavepoint as each deploy's revision had it.
	specFromOf map[string]string
	// statusWrites are the status writes of each reconcile, in order.
	statusWrites []int
	lastStatus   string
	lastLine     string
	stillSince   time.Time
	trace        []string
	violations   []string
	steps        int
}

func newWorld(t testing.TB, seed int64) *world {
	return newWorldWith(t, seed, nil)
}

// setup fixes what newWorld otherwise draws at random.
type setup struct {
	mode v1beta1.JobManagerDeploymentType
	v23  bool
	// skew is the controller's clock skew (world.skew).
	skew time.Duration
	// build adjusts the cluster.
	build func(fc *v1beta1.FlinkCluster)
}

func newWorldWith(t testing.TB, seed int64, fixed *setup) *world {
	rng := rand.New(rand.NewSource(seed))
	w := &world{
		t: t, seed: seed, rng: rng,
		clock:                clocktesting.NewFakeClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)),
		rec:                  &recorder{},
		procs:                map[string]*proc{},
		ips:                  map[string]string{},
		jobPodMade:           map[types.UID]bool{},
		truths:               map[string]*truth{},
		seen:                 map[types.UID]bool{},
		deployed:             map[string]bool{},
		fromOf:               map[string]string{},
		specFromOf:           map[string]string{},
		graphOf:              map[string]string{},
		recordedDeployFailed: map[string]bool{},
		newestSnapshot:       map[string]string{},
		graphSeen:            map[string]bool{},
		savepointedIn:        map[string]bool{},
		snapshotAt:           map[string]time.Time{},
		mode:                 v1beta1.JobManagerDeploymentTypeJob,
		v23:                  rng.Intn(2) == 0,
	}
	wr := builder.MakeAppCluster(name)
	if rng.Intn(3) != 0 {
		w.mode = v1beta1.JobManagerDeploymentTypeDeployment
		wr.Deployment()
	}
	switch rng.Intn(4) {
	case 0:
		wr.RestartFromSavepoint(int32(60 + rng.Intn(1200)))
	case 1:
		wr.CleanupPolicy(v1beta1.CleanupActionKeepCluster, v1beta1.CleanupActionKeepCluster, v1beta1.CleanupActionKeepCluster)
	}
	fc := wr.Obj()
	if fixed == nil && rng.Intn(3) == 0 { // (no draw for a directed test: its seed keeps its sequence)
		// Clock skew between the controller and Flink (and the API server and kubelets that
		// timestamp pods), within what NTP-less nodes drift to: up to 40 s either way,
		// beyond MaxClockSkew sometimes.
		w.skew = time.Duration(rng.Intn(81)-40) * time.Second
	}
	if rng.Intn(4) == 0 {
		fc.Spec.Job.TakeSavepointOnUpdate = ptr.To(false)
		fc.Spec.Job.MaxStateAgeToRestoreSeconds = ptr.To(int32(60 + rng.Intn(1200)))
	}
	randomHAConfiguration(rng, fc)
	drawUpgradeMode(seed, fc) // laststate_test.go; its own generator leaves rng's draws alone
	unsupportedHA := ""
	if fixed == nil {
		_, unsupportedHA = drawUnsupportedHA(seed, fc) // ha_test.go; its own generator too
	}
	if fixed != nil {
		fc = builder.MakeAppCluster(name).DeploymentType(fixed.mode).Obj()
		w.mode, w.v23, w.skew = fixed.mode, fixed.v23, fixed.skew
		if fixed.build != nil {
			fixed.build(fc)
		}
	}
	fc.Finalizers = []string{controller.Finalizer}
	w.cl, w.podsVersion = newStore(scheme, w.clock, fc), -1
	version := fakeflink.Version2_2
	if w.v23 {
		version = fakeflink.Version2_3
	}
	w.manualSavepoints = fixed != nil
	w.fl = fakeflink.NewCluster(fakeflink.Options{
		ClusterID: resources.HAClusterID(fc), Version: version, Clock: w.clock, InProcess: true, Observer: w,
		HA: &fakeflink.KubeHA{Client: w.cl, Namespace: ns},
	})
	r, err := newController(w, &http.Client{Transport: service{w}})
	if err != nil {
		t.Fatal(err)
	}
	w.r = r
	w.stillSince = w.controllerClock().Now()
	if unsupportedHA != "" {
		w.violate("%s", unsupportedHA)
	}
	return w
}

// skewedClock is the controller's clock: the model's, off by a fixed skew.
type skewedClock struct {
	*clocktesting.FakeClock
	skew time.Duration
}

// Now implements clock.PassiveClock.
func (c skewedClock) Now() time.Time { return c.FakeClock.Now().Add(c.skew) }

// Since implements clock.PassiveClock.
func (c skewedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// controllerClock is the clock the controller runs on.
func (w *world) controllerClock() clock.Clock {
	if w.skew == 0 {
		return w.clock
	}
	return skewedClock{FakeClock: w.clock, skew: w.skew}
}

func (w *world) violate(format string, args ...any) {
	if v := fmt.Sprintf(format, args...); !slices.Contains(w.violations, v) {
		w.violations = append(w.violations, v)
	}
}

func (w *world) log(format string, args ...any) {
	w.trace = append(w.trace, fmt.Sprintf("[%s] ", w.clock.Now().Format("15:04:05"))+fmt.Sprintf(format, args...))
}

func (w *world) cluster() *v1beta1.FlinkCluster {
	fc := &v1beta1.FlinkCluster{}
	if err := w.cl.Get(bg, types.NamespacedName{Namespace: ns, Name: name}, fc); err != nil {
		return nil
	}
	return fc
}

func (w *world) patchCluster(mutate func(fc *v1beta1.FlinkCluster)) {
	fc := w.cluster()
	if fc == nil {
		return
	}
	mutate(fc)
	w.must(w.cl.Update(bg, fc))
}

// workload is the JobManager Job or Deployment, nil when missing.
type workload struct {
	uid types.UID
	// jobID and revision are what its pods run: the --job-id argument and the revision label.
	jobID, revision string
	// from is what a fresh main() restores: --fromSavepoint, else the Flink configuration's
	// restore path.
	from     string
	replicas int32
	deleting bool
}

// deploy names a deploy: a job ID under a revision (a JobManager that resumes from HA is the
// same deploy).
func (wl *workload) deploy() string { return wl.jobID + "@" + wl.revision }

func (w *world) workloadOf(uid types.UID, tmpl *corev1.PodTemplateSpec, replicas int32, deleting bool) *workload {
	args := tmpl.Spec.Containers[0].Args
	from := argValue(args, "--fromSavepoint")
	if from == "" {
		from = w.configuredSavepoint()
	}
	return &workload{uid: uid, jobID: argValue(args, "--job-id"), revision: tmpl.Labels[resources.LabelRevision],
		from: from, replicas: replicas, deleting: deleting}
}

func (w *world) workload() *workload {
	key := types.NamespacedName{Namespace: ns, Name: resources.JobManagerName(name)}
	d := &appsv1.Deployment{}
	if w.cl.Get(bg, key, d) == nil {
		if from := argValue(d.Spec.Template.Spec.Containers[0].Args, "--fromSavepoint"); from != "" && from != "$("+resources.EnvRestorePath+")" {
			w.violate("the JobManager Deployment's pod template names a savepoint: every restart would restore it")
		}
		return w.workloadOf(d.UID, &d.Spec.Template, ptr.Deref(d.Spec.Replicas, 1), d.DeletionTimestamp != nil)
	}
	j := &batchv1.Job{}
	if w.cl.Get(bg, key, j) == nil {
		return w.workloadOf(j.UID, &j.Spec.Template, 1, j.DeletionTimestamp != nil)
	}
	return nil
}

// flinkConfiguration is what a JobManager starting now reads from the Flink configuration
// ConfigMap; empty when there is none.
func (w *world) flinkConfiguration() map[string]string {
	cm := &corev1.ConfigMap{}
	if w.cl.Get(bg, types.NamespacedName{Namespace: ns, Name: resources.ConfigMapName(name)}, cm) != nil {
		return map[string]string{}
	}
	if cm.ResourceVersion != w.confVersion {
		// Parsed once per version of the ConfigMap: the model reads it many times a step.
		w.conf, w.confVersion = map[string]string{}, cm.ResourceVersion
		_ = yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &w.conf)
		if env, ok := cm.Data[resources.KeyRestorePath]; ok && env != w.conf[resources.KeySavepointPath] {
			w.violate("the ConfigMap's %s (%q) is not the configuration's %s (%q): a restarted JobManager restores another path than a fresh main() reads",
				resources.KeyRestorePath, env, resources.KeySavepointPath, w.conf[resources.KeySavepointPath])
		}
	}
	return maps.Clone(w.conf)
}

// configuredSavepoint is the savepoint a fresh main() restores now.
func (w *world) configuredSavepoint() string {
	return w.flinkConfiguration()[resources.KeySavepointPath]
}

// recordedRan reports whether the controller's status records that job id of the current
// deploy ran.
func (w *world) recordedRan(id string) bool {
	fc := w.cluster()
	return fc != nil && fc.Status.Components.Job != nil && fc.Status.Components.Job.ID == id && flinkcluster.Ran(fc.Status.Components.Job)
}

// firstCheckpoint is the model's shortest run of a job that persists state: the JVM start,
// main(), the job's scheduling and its first checkpoint interval take at least this long in
// Flink, while the fake runs a job the moment its JobManager starts. The controller's
// state.SubmitBound must not exceed it: a JobManager that failed sooner is taken as a failed
// deploy.
const firstCheckpoint = 10 * time.Second

// persisted reports whether job id persisted state beyond its restore point: a savepoint of
// it completed, or one of its executions ran for firstCheckpoint.
func (w *world) persisted(id string) bool {
	if w.truthOf(id).savepointed {
		return true
	}
	for _, e := range w.fl.Executions() {
		end := e.End
		if end.IsZero() {
			end = w.clock.Now()
		}
		if e.JobID == id && end.Sub(e.Start) >= firstCheckpoint {
			return true
		}
	}
	return false
}

// persistedIn reports whether a deploy (job ID @ revision) persisted state itself: one of
// its JobManagers completed a savepoint, or ran one of its executions for firstCheckpoint.
func (w *world) persistedIn(deploy string) bool {
	if deploy == "" {
		return false
	}
	if w.savepointedIn[deploy] {
		return true
	}
	id, rev, _ := strings.Cut(deploy, "@")
	for _, e := range w.fl.Executions() {
		end := e.End
		if end.IsZero() {
			end = w.clock.Now()
		}
		if e.JobID == id && e.ProcessRevision == rev && end.Sub(e.Start) >= firstCheckpoint {
			return true
		}
	}
	return false
}

// reconcile runs the controller once and checks the invariants on what it did; it reports
// whether the controller asked to look again at once (a record its next reconcile acts on).
func (w *world) reconcile() (again bool) {
	before, fcBefore := w.workload(), w.cluster()
	if fcBefore == nil {
		return false
	}
	runningBefore, haLost := w.runningJobInTouch(), w.haLostBehindRunningJob()
	notes := len(w.rec.notes)
	lossy := w.loseStatusWrites != nil
	if n := w.loseStatusWrites; n != nil {
		w.loseStatusWrites = nil
		w.cl.mu.Lock()
		w.cl.statusWrites = *n
		w.cl.mu.Unlock()
		defer func() {
			w.cl.mu.Lock()
			w.cl.statusWrites = -1
			w.cl.mu.Unlock()
		}()
	}
	w.cl.mu.Lock()
	written := w.cl.statusWritten
	w.cl.mu.Unlock()
	res, err := w.r.Reconcile(bg, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	again = err == nil && res.RequeueAfter == time.Millisecond // the controller's lookAgainNow
	w.cl.mu.Lock()
	written = w.cl.statusWritten - written
	w.cl.mu.Unlock()
	if w.statusWrites = append(w.statusWrites, written); written > 1 {
		w.violate("one reconcile wrote the status %d times", written)
	}
	if err != nil {
		w.log("reconcile error: %v", err)
	} else if cm := w.haConfigMap(); cm != nil {
		for _, id := range flinkha.JobGraphs(cm) {
			w.graphSeen[w.graphOf[id]] = true
		}
	}
	w.checkTransitions(w.rec.notes[notes:])
	after, fc := w.workload(), w.cluster()
	if fc == nil {
		return again
	}
	if job := fc.Status.Components.Job; job != nil {
		wait := ""
		if c := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionWaiting); c != nil && c.Status == metav1.ConditionTrue {
			wait = c.Reason + ": " + c.Message
		}
		if line := fmt.Sprintf("controller: job %.8s %s; waiting: %s", job.ID, job.State, wait); line != w.lastLine {
			w.lastLine = line
			w.log("%s", line)
		}
	}
	if job := fc.Status.Components.Job; job != nil && job.State == v1beta1.JobStateDeployFailed {
		if id, _, _ := strings.Cut(w.lastWorkloadDeploy, "@"); id == job.ID {
			w.recordedDeployFailed[w.lastWorkloadDeploy] = true
		}
	}
	w.checkDeploy(before, after, fcBefore)
	w.checkRemoval(before, after, fcBefore, fc, runningBefore)
	w.checkTerminal(fcBefore, fc)
	if !lossy {
		// A wait's bound is said in the status; when the status writes are lost, the
		// reconcile that lands next says it.
		w.checkWaits(fc)
	}
	w.checkHALoss(haLost, fc)
	return again
}

// transitionNote is the Event of a job state change (setJobState).
var transitionNote = regexp.MustCompile(`^(?:Normal|Warning) (?:JobStateChanged|JobFailed|JobLost): job [0-9a-f]*: (\w+) -> (\w+)`)

// observedTransitions counts the job state changes the simulation saw, by "from -> to",
// across sequences (TestInvariants reports the table's rows never seen).
var observedTransitions = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// checkTransitions: every job state change is a row of the job state machine
// (state.Transitions) — checked by the controller for its step (an UnlistedTransition Event)
// and here from the outside, by its Events.
func (w *world) checkTransitions(notes []string) {
	for _, n := range notes {
		if strings.HasPrefix(n, "Warning "+controller.ReasonUnlistedTransition+":") {
			w.violate("%s", n)
		}
		m := transitionNote.FindStringSubmatch(n)
		if m == nil {
			continue
		}
		if !state.Listed(m[1], m[2]) {
			w.violate("job state change %s -> %s is not in the job state machine", m[1], m[2])
		}
		observedTransitions.Lock()
		observedTransitions.n[m[1]+" -> "+m[2]]++
		observedTransitions.Unlock()
	}
}

// runningJob is the job ID a live JobManager runs RUNNING, "" for none.
func (w *world) runningJob() string { return w.runningOn(true) }

// runningJobInTouch is runningJob on the JobManagers not cut off on a lost node: one there
// is already evicted, its pod Terminating, out of any removal's reach (and, once the HA data
// was deleted behind it, a second leader the removal does not make).
func (w *world) runningJobInTouch() string { return w.runningOn(false) }

func (w *world) runningOn(lostNodes bool) string {
	for _, pr := range w.sortedProcs() {
		if !pr.alive() || (pr.nodeLost && !lostNodes) {
			continue
		}
		for _, id := range pr.jm.JobIDs() {
			if pr.jm.JobState(id) == flinkclient.JobStateRunning {
				return id
			}
		}
	}
	return ""
}

// checkDeploy: a new deploy (a workload of a job ID not deployed before) restores the newest
// savepoint unless the user accepted otherwise, finds no other deploy's HA data, and starts
// while no old JobManager may lead.
func (w *world) checkDeploy(before, after *workload, fc *v1beta1.FlinkCluster) {
	if after == nil || w.seen[after.uid] {
		return
	}
	w.seen[after.uid] = true
	if w.deployed[after.deploy()] {
		return // the same deploy's JobManager created again (HA resume)
	}
	prevDeploy := w.lastWorkloadDeploy
	w.lastWorkloadDeploy = after.deploy()
	if w.lastDeploy == after.jobID {
		// A last-state redeploy: the next revision under the same job ID restores from the
		// checkpoint store, checked when its execution starts (laststate_test.go).
		w.deployed[after.deploy()] = true
		return
	}
	prev, prevDeployFailed := "", false
	if fc.Status.Components.Job != nil {
		prev = fc.Status.Components.Job.ID
		prevDeployFailed = w.recordedDeployFailed[prevDeploy]
	}
	w.log("deploy job %s from %q (newest savepoint %q)", after.jobID, after.from, w.newestSavepoint())
	_, accepted := fc.Annotations[controller.RestoreAnnotation]
	accepted = accepted || fc.Spec.Job.RestartPolicy != nil || !flinkcluster.TakesSavepointOnUpdate(fc.Spec.Job) ||
		fc.Spec.Job.GetUpgradeMode() == v1beta1.UpgradeModeStateless // empty state, on purpose
	specFrom := strings.TrimSpace(ptr.Deref(fc.Spec.Job.FromSavepoint, ""))
	// A fromSavepoint the update set anew is the user's choice (the operator's rule); one
	// left as the previous deploy's revision had it is not, and restoring it would rewind.
	accepted = accepted || (specFrom != "" && specFrom != w.specFromOf[w.lastDeploy] && after.from == specFrom)
	if w.lastDeploy != "" && !accepted {
		// The newest state is the newest savepoint, or, when the previous deploy never ran,
		// what that deploy restored (the user's choice, or the newest savepoint then).
		newest := w.newestSavepoint()
		switch t, persisted := w.truthOf(w.lastDeploy), w.persisted(w.lastDeploy); {
		case prevDeployFailed && w.persistedIn(prevDeploy):
			// DeployFailed is the deploy's verdict: the deploy that failed (also the last-state
			// redeploy of a job ID whose earlier revisions persisted state) must not have
			// persisted any itself. No exemption for a run the controller did not see: what
			// Kubernetes recorded of the JobManager (its container's start and finish) says
			// it may have run.
			w.violate("job %s recorded DeployFailed although its deploy %s ran long enough to checkpoint; the next deploy restores %q", prev, prevDeploy, after.from)
		case !persisted && after.from != w.fromOf[w.lastDeploy] && after.from != newest:
			w.violate("job %s deployed from %q, but the previous deploy %s persisted no state and restored %q", after.jobID, after.from, prev, w.fromOf[w.lastDeploy])
		case !persisted:
			// Never ran, or ran shorter than its first checkpoint: its restore point is still
			// its newest state.
		case t.ran && after.from != newest:
			w.violate("job %s deployed from %q while the newest savepoint is %q (previous job %s ran)", after.jobID, after.from, newest, prev)
		case t.ran && newest == "":
			// With the HA data deleted behind the controller too: the run is in the status (or
			// the job's graph pinned the deploy to HA, observeSubmitted), so the controller
			// asks (SavepointRequired) rather than deploy from empty state.
			w.violate("job %s deployed from empty state after job %s ran, with no savepoint", after.jobID, prev)
		}
	}
	w.deployed[after.deploy()] = true
	w.lastDeploy = after.jobID
	w.fromOf[after.jobID] = after.from
	w.specFromOf[after.jobID] = specFrom
	if cm := w.haConfigMap(); cm != nil {
		// The new deploy's JobManager has not started yet: any job graph is another deploy's
		// (with the same job ID too, if a controller reuses IDs across revisions).
		for _, id := range flinkha.JobGraphs(cm) {
			w.violate("job %s deployed while job %s's graph remains in HA", after.deploy(), id)
		}
	}
	for _, pr := range w.sortedProcs() {
		if pr.jobID() == after.jobID || !pr.alive() {
			continue
		}
		if pr.jm.Leads() || !pr.nodeLost {
			w.violate("job %s deployed while the JobManager %s of job %s may still lead", after.jobID, pr.pod, pr.jobID())
		}
	}
}

// checkRemoval: no JobManager deleted or scaled down under a running job without a completed
// savepoint, unless the user asked (cancel, an accepted restore, takeSavepointOnUpdate
// false, an update naming a new fromSavepoint) or the job is recorded as ended (cleanup;
// checkTerminal vouches for the record). The upgrade modes that keep no savepoint have their
// own invariants: stateless removes it because the spec says so (and the next deploy starts
// empty on purpose, checkDeploy); last-state only while the checkpoint store the next deploy
// restores is intact and fresh enough (checkLastStateRemoval). The Lost timeout removes no
// JobManager of a job Flink still runs: a job that is Lost is one no JobManager in touch
// reports, and afterJobFails applies only to one that cannot resume from HA
// (keepRecoverableLostJob).
func (w *world) checkRemoval(before, after *workload, fcBefore, fc *v1beta1.FlinkCluster, running string) {
	if before == nil || before.deleting || before.replicas == 0 || running == "" || running != before.jobID {
		return
	}
	removed := after == nil || after.uid != before.uid || after.deleting || after.replicas == 0
	if !removed {
		return
	}
	job := fc.Status.Components.Job
	if job == nil || flinkcluster.Terminal(job.State) {
		return
	}
	if l := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionLost); l != nil &&
		l.Status == metav1.ConditionTrue && l.Reason == controller.ConditionReasonLostTimeout {
		w.violate("the Lost timeout removed the JobManager of job %s, which Flink runs (a JobManager in touch reports it RUNNING)", running)
		return
	}
	_, accepted := fcBefore.Annotations[controller.RestoreAnnotation]
	cancel := ptr.Deref(fc.Spec.Job.CancelRequested, false) || (fc.Status.Control != nil && fc.Status.Control.Name == v1beta1.ControlNameJobCancel)
	if accepted || cancel || !flinkcluster.TakesSavepointOnUpdate(fc.Spec.Job) || fc.Spec.Job.RestartPolicy != nil {
		return
	}
	if _, named := flinkcluster.UpdateRestore(fcBefore.Status.Components.Job, fcBefore.Spec.Job); named {
		return // an update that names a new fromSavepoint takes none (the operator's rule)
	}
	switch fc.Spec.Job.GetUpgradeMode() {
	case v1beta1.UpgradeModeStateless:
		return // the spec keeps no state: the next deploy starts empty on purpose
	case v1beta1.UpgradeModeLastState:
		w.checkLastStateRemoval(running, fc)
		return
	}
	// No exemption for a final savepoint on record: Flink runs the job now, so whatever that
	// savepoint holds is older than the job's state (a stop that took its savepoint but did
	// not end the job).
	w.violate("the JobManager of running job %s was removed without a completed savepoint (job %s)", running, job.State)
}

// checkLastStateRemoval: a last-state removal of a running job's JobManager keeps the job's
// checkpoint store, which the next deploy restores (checkLastStateRestore checks that it
// restores the newest entry): the store must hold a completed checkpoint, or the job's newest
// state be a savepoint, and with the operator's max checkpoint age set that newest state must
// be no older than the bound. The controller reads the checkpoint's age on its own clock
// against Flink's timestamps, so the bound holds up to their skew (and a step of the model).
func (w *world) checkLastStateRemoval(id string, fc *v1beta1.FlinkCluster) {
	newest := w.newestSnapshot[id]
	if newest == "" {
		w.violate("last-state removed the JobManager of running job %s, which has no completed checkpoint or savepoint", id)
		return
	}
	cm := &corev1.ConfigMap{}
	stored := w.cl.Get(bg, types.NamespacedName{Namespace: ns, Name: flinkha.JobConfigMapName(resources.HAClusterID(fc), id)}, cm) == nil &&
		len(flinkha.CheckpointIDs(cm)) > 0
	if !stored && !slices.Contains(w.savepoints, newest) {
		w.violate("last-state removed the JobManager of running job %s while its checkpoint store is gone from HA (newest checkpoint %q)", id, newest)
		return
	}
	maxAge, bounded := flinkcluster.LastStateMaxCheckpointAge(fc.Spec.FlinkProperties)
	slack := w.skew.Abs() + 3*time.Second
	if age := w.clock.Since(w.snapshotAt[id]); bounded && age > maxAge+slack {
		w.violate("last-state removed the JobManager of running job %s whose newest checkpoint %q is %s old, beyond the max checkpoint age %s", id, newest, age, maxAge)
	}
}

// checkTerminal: a job recorded Succeeded or Cancelled ended that way in Flink (or, for a
// cancel, its JobManager is gone); never another deploy's result.
func (w *world) checkTerminal(before, fc *v1beta1.FlinkCluster) {
	job, prev := fc.Status.Components.Job, before.Status.Components.Job
	if job == nil || (prev != nil && prev.State == job.State && prev.ID == job.ID) {
		return
	}
	t := w.truthOf(job.ID)
	switch job.State {
	case v1beta1.JobStateSucceeded:
		if !t.ended || t.endState != flinkclient.JobStateFinished || t.stopped {
			w.violate("job %s recorded Succeeded, but Flink says ended=%v %s stopped=%v", job.ID, t.ended, t.endState, t.stopped)
		}
	case v1beta1.JobStateCancelled:
		if job.ID != "" && !t.ended && w.runningJob() == job.ID {
			w.violate("job %s recorded Cancelled while Flink still runs it", job.ID)
		}
	}
}

// checkWaits: every wait is bounded — a Waiting condition older than the bound says so, and
// the controller never sits still, silently, on a job that is neither running nor ended.
func (w *world) checkWaits(fc *v1beta1.FlinkCluster) {
	now := w.controllerClock().Now() // the conditions carry the controller's times
	if c := meta.FindStatusCondition(fc.Status.Conditions, controller.ConditionWaiting); c != nil && c.Status == metav1.ConditionTrue &&
		now.Sub(c.LastTransitionTime.Time) > waitBound+time.Second && !strings.Contains(c.Message, "longer than the wait bound") {
		w.violate("waiting (%s) since %s without saying it exceeded the bound", c.Reason, c.LastTransitionTime)
	}
	job := fc.Status.Components.Job
	key := ""
	if job != nil {
		key = job.ID + "/" + job.State + "/" + fc.Status.State
	}
	waiting := meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionWaiting)
	stopped := meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired)
	said := job == nil || job.State == v1beta1.JobStateRunning || flinkcluster.Terminal(job.State) ||
		job.State == v1beta1.JobStateLost || waiting || stopped
	if key != w.lastStatus || said {
		w.lastStatus, w.stillSince = key, now
		return
	}
	if now.Sub(w.stillSince) > 4*waitBound {
		w.violate("job %s %s for %s with nothing said about why", job.ID, job.State, now.Sub(w.stillSince))
		w.stillSince = now
	}
}

func (w *world) dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d (mode %s, Flink 2.3 %v, controller clock skew %s), %d steps\n", w.seed, w.mode, w.v23, w.skew, w.steps)
	for _, v := range w.violations {
		b.WriteString("  VIOLATION: " + v + "\n")
	}
	start := 0
	if len(w.trace) > 60 && os.Getenv("SIM_TRACE") != "all" {
		start = len(w.trace) - 60
	}
	for _, l := range w.trace[start:] {
		b.WriteString("  " + l + "\n")
	}
	if fc := w.cluster(); fc != nil {
		fmt.Fprintf(&b, "  status: %s job=%+v\n", fc.Status.State, fc.Status.Components.Job)
		fmt.Fprintf(&b, "  savepoint: %+v\n", fc.Status.Savepoint)
		for _, c := range fc.Status.Conditions {
			fmt.Fprintf(&b, "  condition %s=%s/%s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	n := len(w.rec.notes)
	for _, e := range w.rec.notes[max(0, n-25):] {
		b.WriteString("  event " + e + "\n")
	}
	return b.String()
}

// podByRandom picks a JobManager pod, nil when there is none.
func (w *world) podByRandom(live bool) *corev1.Pod {
	var pods []corev1.Pod
	for _, p := range w.jmPods() {
		if !live || p.DeletionTimestamp == nil {
			pods = append(pods, p)
		}
	}
	if len(pods) == 0 {
		return nil
	}
	return &pods[w.rng.Intn(len(pods))]
}
