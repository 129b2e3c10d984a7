package simulation_test

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/state"
)

// Knobs: SIM_SEQUENCES and SIM_STEPS size the run (make soak-controller raises them),
// SIM_SEED replays one sequence.
func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil && v > 0 {
		return v
	}
	return def
}

// event is one random thing that happens to the cluster.
type event struct {
	name   string
	weight int
	do     func(w *world)
}

var events = []event{
	{"reconcile", 30, func(w *world) {}},
	{"time passes", 10, func(w *world) { w.clock.Step(time.Duration(1+w.rng.Intn(40)) * time.Second) }},
	{"clock jump", 3, func(w *world) { w.clock.Step(time.Duration(1+w.rng.Intn(15)) * time.Minute) }},
	{"pod deleted", 3, func(w *world) {
		if p := w.podByRandom(true); p != nil {
			w.log("pod %s deleted", p.Name)
			w.deletePod(p)
		}
	}},
	{"node lost", 2, func(w *world) {
		if pr := w.procOf(w.podByRandom(true)); pr != nil {
			w.loseNode(pr)
		}
	}},
	{"JobManager crash", 3, func(w *world) {
		if pr := w.procOf(w.podByRandom(true)); pr != nil && pr.alive() {
			w.log("JobManager %s crashes", pr.pod)
			w.stop(pr.pod, false, 1, "java.lang.OutOfMemoryError")
		}
	}},
	{"crash loop", 1, func(w *world) {
		if pr := w.procOf(w.podByRandom(true)); pr != nil && pr.alive() {
			w.log("JobManager %s crash-loops (storage outage)", pr.pod)
			w.stop(pr.pod, false, 1, "java.io.IOException: storage unavailable")
			pr.crashing = 3 + w.rng.Intn(6)
		}
	}},
	{"Flink API down or slow", 3, func(w *world) {
		w.apiDown = 1 + w.rng.Intn(6)
		w.log("Flink REST API down or slow (timeouts) for %d steps", w.apiDown)
	}},
	{"JobManager REST unavailable", 2, func(w *world) {
		if pr := w.procOf(w.podByRandom(true)); pr != nil && pr.alive() {
			pr.unavailable = 1 + w.rng.Intn(4)
			pr.jm.SetUnavailable(true)
			w.log("JobManager %s answers 503 for %d steps", pr.pod, pr.unavailable)
		}
	}},
	{"checkpoint completes", 4, func(w *world) { w.completeCheckpoint() }}, // laststate_test.go
	{"job fails", 2, func(w *world) { w.jobEvent(flinkclient.JobStateFailed) }},
	{"job finishes", 1, func(w *world) { w.jobEvent(flinkclient.JobStateFinished) }},
	{"job restarts", 2, func(w *world) { w.jobEvent(flinkclient.JobStateRestarting) }},
	{"stop took its savepoint, the job restarted", 1, func(w *world) {
		// Flink's stop-with-savepoint can complete the savepoint and still fail to end the job,
		// which its restart strategy restarts. The fake's stop always ends
		// the job: it is restarted here by hand, as TestStopThatDidNotEndTheJobIsNotFinal does,
		// and the operation's result (which Flink reports failed) expired unread.
		fc, l := w.cluster(), w.leader()
		if fc == nil || l == nil {
			return
		}
		sp := fc.Status.Savepoint
		if sp == nil || sp.State != controller.SavepointStateInProgress || sp.TriggerReason != controller.SavepointReasonUpdate ||
			l.jm.JobState(sp.JobID) != flinkclient.JobStateRunning {
			return
		}
		l.jm.CompleteSavepoints()
		if l.jm.JobState(sp.JobID) == flinkclient.JobStateFinished {
			l.jm.SetJobState(sp.JobID, flinkclient.JobStateRunning)
			l.jm.ExpireSavepointResults()
			w.log("the stop of job %s took its savepoint, and the job restarted; the result expired", sp.JobID)
		}
	}},
	{"savepoints never complete", 1, func(w *world) {
		w.savepointsStuck = true
		w.log("savepoints hang: none completes until the faults end")
	}},
	{"spec update of flinkVersion", 1, func(w *world) {
		fc := w.cluster()
		if fc == nil {
			return
		}
		next := map[string]string{"2.2.1": "2.1.1", "2.1.1": "2.2.1"}[fc.Spec.FlinkVersion]
		if next == "" {
			return
		}
		w.log("spec update: flinkVersion %s", next)
		w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.FlinkVersion = next })
	}},
	{"a reconcile's status writes lost", 2, func(w *world) {
		n := w.rng.Intn(2)
		w.loseStatusWrites = &n
		w.log("the next reconcile's status writes after %d are lost", n)
	}},
	{"savepoint results lost", 3, func(w *world) {
		w.expireSavepointResults()
		w.log("savepoint results expired")
	}},
	{"spec update", 4, func(w *world) {
		arg := "--rev=" + strconv.Itoa(w.rng.Intn(1000))
		if w.rng.Intn(5) == 0 {
			arg = "--broken"
		}
		w.log("spec update: args %s", arg)
		w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args = []string{arg} })
	}},
	{"savepoint control", 2, func(w *world) { w.annotate(v1beta1.ControlAnnotation, v1beta1.ControlNameSavepoint) }},
	// Savepoints: on request (savepointGeneration, raised as the webhook admits it:
	// to the status's + 1), on schedule, and an update that names the savepoint to restore.
	{"savepointGeneration raised", 2, func(w *world) {
		w.patchCluster(func(fc *v1beta1.FlinkCluster) {
			if j := fc.Status.Components.Job; j != nil && fc.Spec.Job.SavepointGeneration == j.SavepointGeneration {
				w.log("savepointGeneration raised to %d", j.SavepointGeneration+1)
				fc.Spec.Job.SavepointGeneration = j.SavepointGeneration + 1
			}
		})
	}},
	{"autoSavepointSeconds set", 1, func(w *world) {
		secs := int32(30 + w.rng.Intn(600))
		w.log("autoSavepointSeconds %d", secs)
		w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.AutoSavepointSeconds = &secs })
	}},
	{"spec update naming a savepoint", 1, func(w *world) {
		arg, from := "--rev="+strconv.Itoa(w.rng.Intn(1000)), "file:///savepoints/chosen-"+strconv.Itoa(w.rng.Intn(1000))
		if sp := w.newestSavepoint(); sp != "" && w.rng.Intn(2) == 0 {
			from = sp
		}
		w.log("spec update: args %s, fromSavepoint %s", arg, from)
		w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.Args, fc.Spec.Job.FromSavepoint = []string{arg}, &from })
	}},
	{"job-cancel control", 1, func(w *world) { w.annotate(v1beta1.ControlAnnotation, v1beta1.ControlNameJobCancel) }},
	{"cancelRequested", 1, func(w *world) {
		w.log("cancelRequested")
		w.patchCluster(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.CancelRequested = ptr.To(true) })
	}},
	{"HA ConfigMaps deleted", 1, func(w *world) { w.log("HA ConfigMaps deleted"); w.haDeletedExternally = true; w.deleteHA() }},
	{"JobManager workload deleted", 1, func(w *world) {
		if wl := w.workload(); wl != nil {
			w.log("JobManager workload deleted")
			w.deleteWorkload()
		}
	}},
	{"user answers SavepointRequired", 4, func(w *world) {
		fc := w.cluster()
		if fc == nil || !meta.IsStatusConditionTrue(fc.Status.Conditions, controller.ConditionSavepointRequired) {
			return
		}
		choice := controller.RestoreEmptyState
		if sp := w.newestSavepoint(); sp != "" && w.rng.Intn(3) != 0 {
			choice = sp
		}
		w.annotate(controller.RestoreAnnotation, choice)
	}},
}

var totalWeight = func() int {
	n := 0
	for _, e := range events {
		n += e.weight
	}
	return n
}()

func (w *world) pick() event {
	n := w.rng.Intn(totalWeight)
	for _, e := range events {
		if n < e.weight {
			return e
		}
		n -= e.weight
	}
	return events[0]
}

func (w *world) annotate(k, v string) {
	w.log("annotate %s=%s", k, v)
	w.patchCluster(func(fc *v1beta1.FlinkCluster) {
		if fc.Annotations == nil {
			fc.Annotations = map[string]string{}
		}
		fc.Annotations[k] = v
	})
}

func (w *world) deleteWorkload() {
	if wl := w.workload(); wl != nil {
		fc := w.cluster()
		obj := client.Object(nil)
		if fc.Spec.GetDeploymentType() == v1beta1.JobManagerDeploymentTypeDeployment {
			obj = deploymentMeta()
		} else {
			obj = jobMeta()
		}
		w.must(client.IgnoreNotFound(w.cl.Delete(bg, obj)))
	}
}

// jobEvent moves the leader's running job: FAILED and FINISHED end it, RESTARTING is Flink's
// own restart strategy (the job runs again next step).
func (w *world) jobEvent(state string) {
	l := w.fl.Leader()
	if l == nil {
		return
	}
	for _, id := range l.JobIDs() {
		switch cur := l.JobState(id); {
		case cur == flinkclient.JobStateRestarting:
			l.SetJobState(id, flinkclient.JobStateRunning)
		case cur != flinkclient.JobStateRunning:
			continue
		default:
			l.SetJobState(id, state)
		}
		w.log("job %s: %s", id, l.JobState(id))
	}
}

// loseNode loses the node of a container's pod: its heartbeats stop (kube_test.go models
// the taint, the eviction and the pod then stuck Terminating), and its process runs on, cut
// off, leading until its lease runs out.
func (w *world) loseNode(pr *proc) {
	w.stopNode(w.nodeOf(pr.pod))
}

// procOf is the container of a pod, nil for none.
func (w *world) procOf(p *corev1.Pod) *proc {
	if p == nil {
		return nil
	}
	return w.procs[p.Name]
}

// expireSavepointResults makes every live JobManager forget its completed savepoint
// operations, as after rest.async.store-duration.
func (w *world) expireSavepointResults() {
	for _, pr := range w.procs {
		if pr.alive() {
			pr.jm.ExpireSavepointResults()
		}
	}
}

var (
	hexID     = regexp.MustCompile(`[0-9a-f]{32}`)
	quoted    = regexp.MustCompile(`"[^"]*"`)
	duration  = regexp.MustCompile(`[0-9][0-9hms.]*s\b`)
	podName   = regexp.MustCompile(`wc-jobmanager-[0-9]+|wc-[0-9a-f]{10}`)
	stateWord = regexp.MustCompile(`job <id> (Updating|Deploying|Running|Restarting|Lost|Pending|Stopping|Cancelling) for`)
)

// violationKind is a violation without its IDs, paths, pods and durations, to count
// violations by invariant.
func violationKind(v string) string {
	v = hexID.ReplaceAllString(v, "<id>")
	v = quoted.ReplaceAllString(v, "<path>")
	v = podName.ReplaceAllString(v, "<name>")
	v = duration.ReplaceAllString(v, "<d>")
	return stateWord.ReplaceAllString(v, "job <id> <state> for")
}

// run plays one sequence of steps, checking the invariants after every reconcile.
func run(t testing.TB, seed int64, steps int) (w *world) {
	w = newWorld(t, seed)
	defer func() {
		if r := recover(); r != nil {
			me, ok := r.(modelError)
			if !ok {
				panic(r)
			}
			w.violate("model error: %v", me.error)
		}
	}()
	for i := 0; i < steps; i++ {
		w.steps++
		e := w.pick()
		e.do(w)
		if w.apiDown > 0 {
			w.apiDown--
		}
		w.clock.Step(time.Duration(1+w.rng.Intn(3)) * time.Second)
		w.kube()
		w.flink()
		w.reconcile()
		if w.rng.Intn(2) == 0 {
			w.kube()
			w.reconcile()
		}
		if len(w.violations) > 0 {
			w.log("after %q", e.name)
			return w
		}
	}
	w.checkUpdatesEnd()
	return w
}

// TestInvariants explores random sequences of events against the controller and checks, after
// every reconcile, the invariants: no job rerun after it ended; no deploy marked
// Succeeded or Cancelled from another deploy's execution; no restore from a savepoint older
// than the newest completed one (unless the user accepted it); no new deploy while another
// deploy's HA data remains; no JobManager removed under a running job without a completed
// savepoint (explicit cleanup, cancel and deletion aside); no replacement JobManager while an
// old one may still lead; no wait without a bound. A failure prints the seed: replay it with
// SIM_SEED=<seed>.
func TestInvariants(t *testing.T) {
	// The default keeps make test lean; make soak-controller explores far more.
	sequences, steps := envInt("SIM_SEQUENCES", 1000), envInt("SIM_STEPS", 60)
	if testing.Short() {
		sequences = 100
	}
	// make test explores a fixed set of sequences, so that its verdict is the code's and not the
	// draw's; make soak-controller (SIM_BASE=random) draws new ones each run.
	base := int64(envInt("SIM_BASE", 1796170000))
	if os.Getenv("SIM_BASE") == "random" {
		base = time.Now().UnixNano()
	}
	if s := os.Getenv("SIM_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		w := run(t, seed, steps)
		if len(w.violations) > 0 {
			t.Fatalf("violations %v\n%s", w.violations, w.dump())
		}
		return
	}
	var (
		explored, totalSteps atomic.Int64
		mu                   sync.Mutex
		failures             []*world
		wg                   sync.WaitGroup
		next                 atomic.Int64
	)
	start := time.Now()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(sequences) {
					return
				}
				w := run(t, base+i, steps)
				explored.Add(1)
				totalSteps.Add(int64(w.steps))
				if len(w.violations) > 0 {
					mu.Lock()
					failures = append(failures, w)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("explored %d sequences, %d steps in %s; %d sequences violated an invariant",
		explored.Load(), totalSteps.Load(), time.Since(start).Round(time.Millisecond), len(failures))
	kinds := map[string]int{}
	for _, w := range failures {
		for _, v := range w.violations {
			kinds[violationKind(v)]++
		}
	}
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		t.Logf("%4d × %s", kinds[k], k)
	}
	observedTransitions.Lock()
	for _, tr := range state.Transitions {
		for _, from := range tr.From {
			if observedTransitions.n[from+" -> "+tr.To] == 0 {
				t.Logf("job state machine: %s -> %s (%s) not seen", from, tr.To, tr.Step)
			}
		}
	}
	observedTransitions.Unlock()
	for i, w := range failures {
		if i == 3 {
			break
		}
		t.Errorf("violations %v\n%s", w.violations, w.dump())
	}
}
