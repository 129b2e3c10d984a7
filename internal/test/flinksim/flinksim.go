// Package flinksim is simulated Flink for JobManager pods: it attaches a fake Flink JobManager
// process (package fakeflink) to every JobManager pod whose container runs, and plays the part
// of the kubelet that KWOK leaves out, the container's own life.
//
// KWOK (internal/test/testenv's stages) binds, starts and removes pods; it never ends a container
// by itself. A Simulator watches JobManager pods and:
//
//   - starts a fakeflink.JobManager when the pod's container is reported running, with the
//     Flink configuration of the cluster's ConfigMap and the job ID of the pod's --job-id
//     argument, publishing the pod's IP as its leader address;
//   - on a graceful delete runs the preStop delay (the container's `sleep N` hook) on its
//     clock, then sends SIGTERM (the process stops gracefully, giving up its leadership) and
//     writes the container's terminated state and the pod's terminal phase, as the kubelet
//     does; KWOK then removes the pod. When KWOK ends the container first (the grace period
//     ran out) the process is killed;
//   - keeps a process running when its pod merely vanishes from the API (a force delete, pod
//     garbage collection of a pod on an unreachable node): the container of a force-deleted
//     pod runs on, until the user of the Simulator kills it (a live kubelet would stop it a
//     little later; one on an unreachable node never does). Only a pod whose Node is gone
//     takes its process with it;
//   - does nothing for pods on a node whose kubelet is stopped (Options.NodeStopped);
//   - when a process exits on its own (main() threw before Flink 2.3, a Job-mode application
//     ended with execution.shutdown-on-application-finish true, a shutdown asked through
//     DELETE /cluster, a test's Kill) writes the
//     container's end exactly as the kubelet does: restartPolicy Never gives phase Succeeded
//     or Failed; Always (and OnFailure on a non-zero code) restarts the container with
//     restartCount+1, lastState terminated and, from the second restart on, CrashLoopBackOff
//     with the kubelet's back-off (10 s doubling to 5 min, reset after 10 min of running);
//   - lets a test hold a deleted pod's container in its preStop hook (Options.HoldTermination)
//     or fail a container's start before Flink runs (Options.StartupFailure: a class that
//     cannot be loaded, an unreachable HA storage), written as the kubelet writes any exit;
//   - applies the user's annotations on the pod: simulate.flink-admission.dev/job moves the
//     job of its leading process to any state Flink reports (JobAnnotation),
//     simulate.flink-admission.dev/savepoints makes its savepoints fail, hang or complete
//     (SavepointsAnnotation), and simulate.flink-admission.dev/startup=fail makes the
//     container fail at every start, before Flink runs (StartupAnnotation). An unknown value
//     is logged and ignored.
//
// The job checkpoints as the cluster's Flink configuration says: fakeflink takes a checkpoint
// every execution.checkpointing.interval while the job runs and keeps it in the HA store, so
// a last-state redeploy restores the newest one.
//
// A fake cluster made with fakeflink.Options.Driven has its timers run by the Simulator, as
// Flink's threads run them (timers.go): its leader renews the lease from a loop once a retry
// period (high-availability.kubernetes.leader-election.retry-period, 5 s by default) and each
// checkpoint is written to the HA store when it completes, on the cluster's clock, while its
// REST answers read no HA ConfigMap: the load a simulated cluster puts on the API server is a
// real one's, whatever polls its REST API.
//
// The Simulator owns no fakeflink.Cluster: Options.Clusters maps a FlinkCluster to the one
// standing in for its Flink (tests own theirs; `flink-admission dev` makes one per cluster).
package flinksim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/containerargs"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// Annotations on a JobManager pod by which a user drives its simulated job from kubectl.
const (
	// JobAnnotation moves the jobs of the pod's leading JobManager to a state of Flink's
	// JobStatus, as if Flink had (see jobMoves): RUNNING, RESTARTING (a failover, as when a
	// TaskManager is lost: savepoints fail until the job runs again), FAILING, FAILED,
	// CANCELLING, CANCELED, FINISHED, SUSPENDED, CREATED (the adaptive scheduler waiting for
	// slots) or INITIALIZING. A job that ended (FAILED, CANCELED, FINISHED, or SUSPENDED on
	// this JobManager) stays ended, as in Flink.
	JobAnnotation = "simulate.flink-admission.dev/job"
	// SavepointsAnnotation makes the pod's JobManager fail its savepoints ("fail"), keep them
	// IN_PROGRESS for as long as it says so ("hold"), or complete them ("ok", also once the
	// annotation is removed). Operations already triggered follow the new value.
	SavepointsAnnotation = "simulate.flink-admission.dev/savepoints"
	// StartupAnnotation set to "fail" makes the pod's JobManager container exit 1 at every
	// start, before any Flink process runs, with the entrypoint's error as termination
	// message: the kubelet restarts it in CrashLoopBackOff (or the pod of a Job fails). Put in
	// spec.jobManager.podAnnotations, it makes a deploy crash-loop from its first start.
	StartupAnnotation = "simulate.flink-admission.dev/startup"
)

// The kubelet's container restart back-off: 10 s doubling to 5 min.
const (
	DefaultBackOff    = 10 * time.Second
	DefaultMaxBackOff = 5 * time.Minute
)

// The failures the annotations simulate: a job's exception (FAILED, FAILING), a TaskManager
// lost (RESTARTING), and the entrypoint's error of a container that fails to start.
const (
	simulatedFailure  = "org.apache.flink.runtime.JobException: simulated failure (annotation " + JobAnnotation + ")"
	simulatedFailover = "java.util.concurrent.TimeoutException: Heartbeat of TaskManager with id simulated-taskmanager-1 timed out (annotation " + JobAnnotation + "=RESTARTING)"
	simulatedStartup  = "org.apache.flink.runtime.entrypoint.ClusterEntrypointException: Failed to initialize the cluster entrypoint KubernetesApplicationClusterEntrypoint.\n" +
		"Caused by: java.io.IOException: simulated startup failure (annotation " + StartupAnnotation + "=fail)"
)

// jobMove is what a JobAnnotation value does to a job: the state it moves to and, for a
// failure, the exception its JobMaster records in the job's history.
type jobMove struct {
	state     string
	exception *flinkclient.Exception
}

// jobMoves are the JobAnnotation values, upper-cased. RECONCILING is left out: no scheduler of
// Flink's reports it.
var jobMoves = map[string]jobMove{
	flinkclient.JobStateRunning:      {state: flinkclient.JobStateRunning},
	flinkclient.JobStateRestarting:   {state: flinkclient.JobStateRestarting, exception: &flinkclient.Exception{Name: "java.util.concurrent.TimeoutException", StackTrace: simulatedFailover, TaskName: "Source: simulated (1/1)"}},
	flinkclient.JobStateFailing:      {state: flinkclient.JobStateFailing, exception: &flinkclient.Exception{Name: "org.apache.flink.runtime.JobException", StackTrace: simulatedFailure}},
	flinkclient.JobStateFailed:       {state: flinkclient.JobStateFailed, exception: &flinkclient.Exception{Name: "org.apache.flink.runtime.JobException", StackTrace: simulatedFailure}},
	flinkclient.JobStateCancelling:   {state: flinkclient.JobStateCancelling},
	flinkclient.JobStateCanceled:     {state: flinkclient.JobStateCanceled},
	flinkclient.JobStateFinished:     {state: flinkclient.JobStateFinished},
	flinkclient.JobStateSuspended:    {state: flinkclient.JobStateSuspended},
	flinkclient.JobStateCreated:      {state: flinkclient.JobStateCreated},
	flinkclient.JobStateInitializing: {state: flinkclient.JobStateInitializing},
}

// normalizeJobValue is a JobAnnotation value as jobMoves names it: upper case, unpadded.
func normalizeJobValue(v string) string { return strings.ToUpper(strings.TrimSpace(v)) }

// savepointModes are the SavepointsAnnotation values, lower-cased.
var savepointModes = map[string]fakeflink.SavepointMode{
	"ok": fakeflink.SavepointComplete, "hold": fakeflink.SavepointHold, "fail": fakeflink.SavepointFail,
}

// Options configure a Simulator.
type Options struct {
	// Config reaches the API server; required.
	Config *rest.Config
	// Scheme has the core and FlinkCluster types; default client-go's scheme plus v1beta1.
	Scheme *runtime.Scheme
	// Namespace restricts the Simulator to one namespace; all namespaces when empty.
	Namespace string
	// Clusters returns the fake Flink cluster of a FlinkCluster, or nil to leave its pods
	// alone; required unless Launcher is set.
	Clusters func(ctx context.Context, fc *v1beta1.FlinkCluster) *fakeflink.Cluster
	// Launcher, when set, runs the containers' processes instead of the simulated
	// JobManagers: real Flink JVMs (internal/test/realflink). The Simulator still plays the
	// kubelet around them (preStop, SIGTERM, SIGKILL, restarts, the container's end).
	Launcher Launcher
	// TaskManagers makes the Simulator follow TaskManager pods too, whose containers only a
	// Launcher runs anything in.
	TaskManagers bool
	// Clock times preStop delays and the restart back-off; default the real clock. A test
	// may pass a fake one and step it to end a preStop delay when it chooses.
	Clock clock.PassiveClock
	// BackOff and MaxBackOff are the restart back-off's first delay and cap; default the
	// kubelet's (DefaultBackOff, DefaultMaxBackOff).
	BackOff, MaxBackOff time.Duration
	// NodeStopped reports whether the kubelet of a node is down (its KWOK process stopped):
	// nothing happens to that node's pods and containers, as no kubelet acts on them. Default:
	// a node whose Ready condition is Unknown.
	NodeStopped func(node string) bool
	// HoldTermination, when set and true for a pod being deleted, keeps its container from
	// ending for now: the preStop hook (or the JobManager's shutdown) is still running, as a
	// hook waiting on something would. The kubelet's grace period still applies: KWOK kills the
	// container at the pod's deletion deadline. Asked again on every round.
	HoldTermination func(pod *corev1.Pod) bool
	// StartupFailure, when set and non-nil for a pod whose container starts, makes that
	// container exit at once with the status returned, before any Flink process runs: an
	// entrypoint that cannot load the application's class or reach its HA storage, which
	// fakeflink's processes cannot express. The end is written as for a process's own exit
	// (restart count, CrashLoopBackOff back-off, or the terminal phase). Asked on every start.
	StartupFailure func(pod *corev1.Pod) *fakeflink.ExitStatus
	// Configuration, when set, may change the Flink configuration a pod's container starts
	// with (props, read from the cluster's ConfigMap and the pod's --job-id): a test standing
	// in for a container that read an older ConfigMap, as a JobManager started before an
	// update did.
	Configuration func(pod *corev1.Pod, props map[string]string)
	// OnStart is told of every process started for a pod.
	OnStart func(pod *corev1.Pod, p *fakeflink.JobManager)
	// OnExit is told of every container end written (the process's exit status).
	OnExit func(pod *corev1.Pod, p *fakeflink.JobManager, status fakeflink.ExitStatus)
	// Log receives what the Simulator does; discarded when unset.
	Log logr.Logger
	// Period is how often processes are checked for exits and timers fire; default 20 ms.
	Period time.Duration
}

// Simulator attaches fake Flink JobManager processes to JobManager pods; see the package
// documentation. Run it with Start.
type Simulator struct {
	opts   Options
	client client.Client
	cache  cache.Cache

	mu     sync.Mutex
	events []event
	wake   chan struct{}
	// pods are the JobManager pods seen, by UID.
	pods map[types.UID]*podState
	// reads runs the API reads of the loop.
	reads *reads
	// timers runs the timers of the driven fake clusters.
	timers *timers
	// rounds counts the rounds done; roundDone is closed and replaced after each.
	rounds    int
	roundDone chan struct{}
}

type event struct {
	pod     *corev1.Pod
	deleted bool
}

// readRetry is how long the Simulator waits before it reads again what it failed to read.
const readRetry = time.Second

// podState is what the Simulator knows of one pod and its container.
type podState struct {
	key     types.NamespacedName
	cluster *fakeflink.Cluster
	// component is the pod's component label: jobmanager or taskmanager.
	component string
	ignored   bool
	// untracked: the pod's FlinkCluster could not be read (not that it is missing); each
	// event and round try again.
	untracked bool
	pod       *corev1.Pod
	// startPending is the startedAt of a running container whose process could not start
	// because the Simulator could not read its configuration; each round tries again. A
	// kubelet does not start a container before its ConfigMap volume mounts: the failure is
	// the Simulator's own reads (an overloaded API server), not the container's.
	startPending *metav1.Time
	// retryAt is when the next try of a failed read is due: real time, as the reads are
	// (the Simulator's clock is Flink's and the kubelet's, often a test's fake one).
	retryAt time.Time
	// proc is the container's current process; started is the running container's
	// startedAt and instance its restart count and startedAt (startedAt alone has a
	// resolution of a second, and an immediate restart may fall in the same one).
	proc     Process
	started  metav1.Time
	instance string
	// ended: proc's end was written (or the kubelet ended it).
	ended bool
	// idleEnded: the pod was deleted while no container ran, and marked terminal.
	idleEnded bool
	// sigterm is when the process gets SIGTERM (the end of the preStop delay); zero when
	// the pod is not being deleted.
	sigterm time.Time
	// stopped: the process got its SIGTERM.
	stopped bool
	// restartAt is when a container in back-off runs again; backOff the next delay and
	// backOffSet when it was last set (the kubelet forgets a back-off after 2× its cap).
	restartAt  time.Time
	backOff    time.Duration
	backOffSet time.Time
	// applied are the annotation values already applied to proc.
	applied map[string]string
}

// New returns a Simulator for opts; Start runs it.
func New(opts Options) (*Simulator, error) {
	if opts.Config == nil || (opts.Clusters == nil && opts.Launcher == nil) {
		return nil, errors.New("flinksim: Options.Config and Options.Clusters (or Options.Launcher) are required")
	}
	if opts.Scheme == nil {
		opts.Scheme = runtime.NewScheme()
		if err := clientgoscheme.AddToScheme(opts.Scheme); err != nil {
			return nil, err
		}
		if err := v1beta1.AddToScheme(opts.Scheme); err != nil {
			return nil, err
		}
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.BackOff == 0 {
		opts.BackOff = DefaultBackOff
	}
	if opts.MaxBackOff == 0 {
		opts.MaxBackOff = DefaultMaxBackOff
	}
	if opts.Period == 0 {
		opts.Period = 20 * time.Millisecond
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	c, err := client.New(opts.Config, client.Options{Scheme: opts.Scheme})
	if err != nil {
		return nil, fmt.Errorf("flinksim: client: %w", err)
	}
	components := []string{resources.ComponentJobManager}
	if opts.TaskManagers {
		components = append(components, resources.ComponentTaskManager)
	}
	followed, err := labels.Parse(fmt.Sprintf("%s=%s,%s in (%s)", resources.LabelApp, resources.AppFlink, resources.LabelComponent, strings.Join(components, ",")))
	if err != nil {
		return nil, fmt.Errorf("flinksim: pod selector: %w", err)
	}
	copts := cache.Options{
		Scheme:   opts.Scheme,
		ByObject: map[client.Object]cache.ByObject{&corev1.Pod{}: {Label: followed}},
	}
	if opts.Namespace != "" {
		copts.DefaultNamespaces = map[string]cache.Config{opts.Namespace: {}}
	}
	ca, err := cache.New(opts.Config, copts)
	if err != nil {
		return nil, fmt.Errorf("flinksim: cache: %w", err)
	}
	s := &Simulator{opts: opts, client: c, cache: ca, wake: make(chan struct{}, 1), pods: map[types.UID]*podState{}, roundDone: make(chan struct{})}
	s.reads = newReads(s.poke)
	s.timers = newTimers()
	if opts.NodeStopped == nil {
		s.opts.NodeStopped = s.nodeUnknown
	}
	return s, nil
}

// Start watches JobManager pods and runs their processes until ctx ends; it returns once
// the pod watch failed to start or ctx ended. It implements controller-runtime's Runnable.
func (s *Simulator) Start(ctx context.Context) error {
	inf, err := s.cache.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("flinksim: pod informer: %w", err)
	}
	// Nodes are read on every round (NodeStopped's default, a deleted pod's node): from the
	// cache, started here so that the first read does not wait for it.
	if _, err := s.cache.GetInformer(ctx, &corev1.Node{}); err != nil {
		return fmt.Errorf("flinksim: node informer: %w", err)
	}
	// Every event is queued in order: the kubelet-faithful reading of a pod's end needs the
	// state a pod was deleted in (the delete event's final object), not a later lookup.
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { s.enqueue(o, false) },
		UpdateFunc: func(_, o any) { s.enqueue(o, false) },
		DeleteFunc: func(o any) { s.enqueue(o, true) },
	}); err != nil {
		return fmt.Errorf("flinksim: pod handler: %w", err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.cache.Start(ctx) }()
	if !s.cache.WaitForCacheSync(ctx) {
		return fmt.Errorf("flinksim: pod cache did not sync: %w", ctx.Err())
	}
	tick := time.NewTicker(s.opts.Period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			<-errc
			return nil
		case <-s.wake:
		case <-tick.C:
		}
		s.mu.Lock()
		evs := s.events
		s.events = nil
		s.mu.Unlock()
		for _, ev := range evs {
			s.handle(ctx, ev)
		}
		s.round(ctx)
		s.mu.Lock()
		s.rounds++
		close(s.roundDone)
		s.roundDone = make(chan struct{})
		s.mu.Unlock()
	}
}

// Settle waits until the Simulator has taken in every pod event its watch delivered before
// the call and acted on its timers twice since: what a test waits on to see that something
// did not happen, instead of sleeping.
func (s *Simulator) Settle(ctx context.Context) error {
	for range 2 {
		s.mu.Lock()
		done := s.roundDone
		s.mu.Unlock()
		s.poke()
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// poke wakes the loop for a round, unless a wake-up is already pending.
func (s *Simulator) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Simulator) enqueue(o any, deleted bool) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	s.mu.Lock()
	s.events = append(s.events, event{pod: pod.DeepCopy(), deleted: deleted})
	s.mu.Unlock()
	s.poke()
}

// Process returns the JobManager process of pod namespace/name while the Simulator follows the
// pod, or nil: once the pod is gone from the API the Simulator forgets it (the process of a
// force-deleted pod runs on; its fakeflink.Cluster still lists it).
func (s *Simulator) Process(namespace, name string) *fakeflink.JobManager {
	if p := s.Launched(namespace, name); p != nil {
		return simulated(p)
	}
	return nil
}

// Launched returns the process of pod namespace/name's container while the Simulator follows
// the pod, or nil: a simulated JobManager or what the Launcher started.
func (s *Simulator) Launched(namespace, name string) Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.pods {
		if st.key.Namespace == namespace && st.key.Name == name && st.proc != nil {
			return st.proc
		}
	}
	return nil
}

// handle takes in one pod event.
func (s *Simulator) handle(ctx context.Context, ev event) {
	pod := ev.pod
	s.opts.Log.V(1).Info("pod event", "pod", pod.Name, "deleted", ev.deleted, "deleting", pod.DeletionTimestamp != nil, "phase", pod.Status.Phase)
	s.mu.Lock()
	st := s.pods[pod.UID]
	s.mu.Unlock()
	if st == nil {
		if ev.deleted {
			return
		}
		st = s.track(ctx, pod)
	}
	if st.ignored {
		if ev.deleted {
			s.forget(pod.UID)
		}
		return
	}
	st.pod = pod
	if ev.deleted {
		s.deleted(st)
		return
	}
	if st.untracked {
		if s.findCluster(ctx, st); st.untracked || st.ignored {
			return
		}
	}
	if s.opts.NodeStopped(pod.Spec.NodeName) {
		return
	}
	cs := containerStatus(pod)
	switch {
	case cs == nil:
	case cs.State.Running != nil && containerInstance(cs) != st.instance && pod.DeletionTimestamp == nil:
		st.instance = containerInstance(cs)
		if status := s.startupFailure(st); status != nil {
			s.failStartup(ctx, st, cs.State.Running.StartedAt, *status)
			return
		}
		s.start(ctx, st, cs.State.Running.StartedAt)
	case cs.State.Terminated != nil && st.proc != nil && st.proc.Alive():
		// The kubelet (KWOK, at the end of the grace period) ended the container first.
		st.proc.Kill()
		st.ended = true
	}
	// A delete with grace 0 (a force delete) removes the object at once: no kubelet gets to
	// run preStop or send SIGTERM first (see deleted).
	graceful := pod.DeletionGracePeriodSeconds == nil || *pod.DeletionGracePeriodSeconds > 0
	if pod.DeletionTimestamp != nil && graceful && st.sigterm.IsZero() && st.proc != nil && st.proc.Alive() {
		st.sigterm = s.opts.Clock.Now().Add(preStopDelay(pod))
		st.restartAt = time.Time{}
	}
	idle := st.proc == nil || st.ended
	if pod.DeletionTimestamp != nil && graceful && idle && !st.idleEnded && cs != nil && cs.State.Terminated == nil &&
		(pod.Status.Phase == corev1.PodRunning || pod.Status.Phase == corev1.PodPending) {
		// No container runs (a crash loop's back-off, a start that failed): there is nothing
		// to stop, and the kubelet marks the deleted pod terminal at once rather than at the
		// end of its grace period; KWOK then removes it.
		st.idleEnded, st.restartAt = true, time.Time{}
		now := s.opts.Clock.Now()
		err := s.updateStatus(ctx, st, func(pod *corev1.Pod) {
			pod.Status.Phase = corev1.PodFailed
			setReady(pod, false, "PodCompleted", "", now)
		})
		if err != nil {
			s.opts.Log.Error(err, "ending a deleted pod whose container does not run", "pod", st.key)
		}
	}
}

// track starts following a new pod: it finds the fake Flink of the pod's FlinkCluster.
func (s *Simulator) track(ctx context.Context, pod *corev1.Pod) *podState {
	st := &podState{key: client.ObjectKeyFromObject(pod), pod: pod, component: pod.Labels[resources.LabelComponent], applied: map[string]string{}}
	s.findCluster(ctx, st)
	s.mu.Lock()
	s.pods[pod.UID] = st
	s.mu.Unlock()
	return st
}

// findCluster finds the fake Flink of the pod's FlinkCluster: none (ignored) when the
// cluster is missing, untracked until the next try when it could not be read.
func (s *Simulator) findCluster(ctx context.Context, st *podState) {
	key := types.NamespacedName{Namespace: st.pod.Namespace, Name: st.pod.Labels[resources.LabelCluster]}
	v, err, ok := s.reads.take(ctx, readKey{pod: st.pod.UID, what: "cluster"}, func(ctx context.Context) (any, error) {
		fc := &v1beta1.FlinkCluster{}
		return fc, s.client.Get(ctx, key, fc)
	})
	if !ok {
		// The read runs; the next round asks again.
		st.untracked, st.retryAt = true, time.Time{}
		return
	}
	fc := v.(*v1beta1.FlinkCluster)
	st.untracked = err != nil && !apierrors.IsNotFound(err)
	st.retryAt = time.Now().Add(readRetry)
	switch {
	case st.untracked:
		s.opts.Log.Info("reading the FlinkCluster of a JobManager pod failed; trying again", "pod", st.key, "error", err.Error())
	case err != nil:
		s.opts.Log.Info("JobManager pod without its FlinkCluster: no simulated Flink", "pod", st.key, "error", err.Error())
		st.ignored = true
	case s.opts.Launcher != nil:
		// The Launcher reads what it needs at each start.
	case st.component != resources.ComponentJobManager:
		// Nothing simulated runs in a TaskManager.
		st.ignored = true
	default:
		if st.cluster = s.opts.Clusters(ctx, fc); st.cluster == nil {
			st.ignored = true
		}
		s.timers.add(st.cluster)
	}
}

func (s *Simulator) forget(uid types.UID) {
	s.mu.Lock()
	delete(s.pods, uid)
	s.mu.Unlock()
	s.reads.drop(uid)
}

// deleted handles a pod gone from the API in its final state.
func (s *Simulator) deleted(st *podState) {
	defer s.forget(st.pod.UID)
	if st.proc == nil || !st.proc.Alive() {
		return
	}
	if cs := containerStatus(st.pod); cs != nil && cs.State.Terminated != nil {
		st.proc.Kill()
		return
	}
	if node := st.pod.Spec.NodeName; node != "" && !s.nodeExists(node) {
		// The machine is gone, and its processes with it.
		s.opts.Log.Info("simulated JobManager ends with its deleted node", "pod", st.key, "node", node)
		st.proc.Kill()
		return
	}
	// Force-deleted (or garbage-collected) while its container runs: the container runs on,
	// unwatched, until its cluster closes it or the test kills it. (A kubelet still in touch
	// with the API server would notice the pod gone and stop the container a little later;
	// one on an unreachable node never does. The Simulator leaves that choice to its user.)
	s.opts.Log.Info("simulated JobManager keeps running after its pod vanished from the API", "pod", st.key)
}

// start runs a new process for the pod's container that started at startedAt.
func (s *Simulator) start(ctx context.Context, st *podState, startedAt metav1.Time) {
	if st.proc != nil && st.proc.Alive() {
		st.proc.Kill()
	}
	pod := st.pod
	if s.opts.Launcher != nil {
		s.launch(ctx, st, startedAt)
		return
	}
	v, err, ok := s.reads.take(ctx, readKey{pod: pod.UID, what: "configuration " + st.instance}, func(ctx context.Context) (any, error) {
		props, cli, err := s.readConfiguration(ctx, pod)
		return configuration{props: props, cli: cli}, err
	})
	if !ok {
		// The read runs; the next round asks again.
		st.startPending, st.retryAt = &startedAt, time.Time{}
		return
	}
	if err != nil {
		s.opts.Log.Error(err, "no simulated JobManager for pod yet; trying again", "pod", st.key)
		st.startPending, st.retryAt = &startedAt, time.Now().Add(readRetry)
		return
	}
	props, cli := v.(configuration).props, v.(configuration).cli
	if s.opts.Configuration != nil {
		s.opts.Configuration(pod, props)
	}
	st.startPending = nil
	ip := st.pod.Status.PodIP
	if ip == "" {
		ip = "127.0.0.1"
	}
	st.started, st.ended, st.stopped, st.applied = startedAt, false, false, map[string]string{}
	proc := st.cluster.Start(fakeflink.Config{Name: st.pod.Name, Properties: props, FromSavepoint: cli.FromSavepoint,
		AllowNonRestoredState: cli.AllowNonRestoredState, Address: "http://" + ip + ":8081"})
	// Only the loop writes a podState; proc is also read by Process, under mu.
	s.mu.Lock()
	st.proc = proc
	s.mu.Unlock()
	s.opts.Log.Info("simulated Flink JobManager started", "pod", st.key, "process", proc.Name())
	if s.opts.OnStart != nil {
		s.opts.OnStart(st.pod, proc)
	}
}

// launch has the Launcher start the process of the pod's container that started at
// startedAt, off the loop: until it has, the start is pending and each round asks again.
func (s *Simulator) launch(ctx context.Context, st *podState, startedAt metav1.Time) {
	pod := st.pod
	v, err, ok := s.reads.take(ctx, readKey{pod: pod.UID, what: "launch " + st.instance}, func(ctx context.Context) (any, error) {
		return s.opts.Launcher.Launch(ctx, pod, containerName(pod))
	})
	if !ok {
		st.startPending, st.retryAt = &startedAt, time.Time{}
		return
	}
	if err != nil {
		s.opts.Log.Error(err, "launching the container's process failed; trying again", "pod", st.key)
		st.startPending, st.retryAt = &startedAt, time.Now().Add(readRetry)
		return
	}
	if st.proc != nil && st.proc.Alive() {
		st.proc.Kill()
	}
	st.startPending = nil
	st.started, st.ended, st.stopped, st.applied = startedAt, false, false, map[string]string{}
	s.mu.Lock()
	st.proc = v.(Process)
	s.mu.Unlock()
	s.opts.Log.Info("container process launched", "pod", st.key, "process", st.proc.Name())
}

// configuration is what a pod's container reads at its start (readConfiguration).
type configuration struct {
	props map[string]string
	cli   fakeflink.Config
}

// readConfiguration is the Flink configuration the pod's container reads: the cluster's
// ConfigMap as it is now, its command line's -D properties, and the job ID of its --job-id
// (Flink's standalone entrypoint sets main()'s job ID from it), parsed as Flink 2 parses them
// (fakeflink.ParseApplicationArgs); and the --fromSavepoint of its command line, with
// the container's variables expanded from that same ConfigMap as the kubelet expands them
// at every container start (containerargs.Expand), and its --allowNonRestoredState (the fields of
// fakeflink.Config they set). The test's Options.Configuration applies after.
func (s *Simulator) readConfiguration(ctx context.Context, pod *corev1.Pod) (map[string]string, fakeflink.Config, error) {
	var cli fakeflink.Config
	name := pod.Labels[resources.LabelCluster]
	fc := &v1beta1.FlinkCluster{}
	if err := s.client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, fc); err != nil {
		return nil, cli, fmt.Errorf("reading FlinkCluster %s/%s: %w", pod.Namespace, name, err)
	}
	cm := &corev1.ConfigMap{}
	if err := s.client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: resources.ConfigMapName(name)}, cm); err != nil {
		return nil, cli, fmt.Errorf("reading the Flink configuration of %s/%s: %w", pod.Namespace, name, err)
	}
	conf := map[string]any{}
	if err := yaml.Unmarshal([]byte(cm.Data[resources.ConfigFileName(fc)]), &conf); err != nil {
		return nil, cli, fmt.Errorf("parsing the Flink configuration of %s/%s: %w", pod.Namespace, name, err)
	}
	props := map[string]string{}
	for k, v := range conf {
		props[k] = fmt.Sprint(v)
	}
	if c := mainContainer(pod); c != nil && len(c.Args) > 0 {
		// As Flink 2's entrypoint parses its command line: an option it does not know ends
		// the options, so a job ID after it is no job ID.
		a := fakeflink.ParseApplicationArgs(containerargs.ExpandIn(pod, c, cm)[1:])
		for k, v := range a.Dynamic {
			props[k] = v
		}
		if a.JobID != "" {
			props[fakeflink.PropJobID] = a.JobID
		}
		cli.FromSavepoint, cli.AllowNonRestoredState = a.FromSavepoint, a.AllowNonRestoredState
	}
	return props, cli, nil
}

// round fires the timers and notices processes that ended.
func (s *Simulator) round(ctx context.Context) {
	s.timers.fire()
	s.mu.Lock()
	var sts []*podState
	for _, st := range s.pods {
		if !st.ignored {
			sts = append(sts, st)
		}
	}
	s.mu.Unlock()
	now := s.opts.Clock.Now()
	for _, st := range sts {
		if s.opts.NodeStopped(st.pod.Spec.NodeName) {
			continue
		}
		switch {
		case st.untracked || st.startPending != nil:
			if time.Now().After(st.retryAt) && st.pod.DeletionTimestamp == nil {
				if st.untracked {
					s.handle(ctx, event{pod: st.pod})
				} else {
					s.start(ctx, st, *st.startPending)
				}
			}
		case !st.sigterm.IsZero() && st.proc != nil && !st.ended && !now.Before(st.sigterm) && !s.held(st.pod):
			// preStop done: SIGTERM. The JobManager shuts down gracefully and the container
			// exits; the kubelet then marks the deleted pod terminal and removes it. A
			// launched process may take a while to exit: the next case writes its end then.
			if !st.stopped {
				st.stopped = true
				st.proc.Stop()
			}
			if !st.proc.Alive() {
				s.exited(ctx, st)
			}
		case st.proc != nil && !st.ended && !st.proc.Alive():
			s.exited(ctx, st)
		case simulated(st.proc) != nil && !st.ended && st.sigterm.IsZero():
			s.applyAnnotations(st)
			s.exitIfApplicationEnded(st)
		case !st.restartAt.IsZero() && !now.Before(st.restartAt) && st.sigterm.IsZero():
			st.restartAt = time.Time{}
			s.restart(ctx, st, now)
		}
	}
}

// exitIfApplicationEnded ends the leading process of an application whose jobs all ended,
// as Flink does with execution.shutdown-on-application-finish (its default, true).
func (s *Simulator) exitIfApplicationEnded(st *podState) {
	p := simulated(st.proc)
	if strings.EqualFold(p.Config().Properties[resources.KeyShutdownOnApplicationEnd], "false") || !p.Leads() {
		return
	}
	ended := false
	if a := p.ApplicationState(); a != "" {
		ended = flinkclient.IsTerminalApplicationState(a)
	} else if ids := p.JobIDs(); len(ids) > 0 {
		ended = true
		for _, id := range ids {
			ended = ended && flinkclient.IsTerminalJobState(p.JobState(id))
		}
	}
	if !ended {
		return
	}
	p.Exit()
}

// applyAnnotations applies the user's annotations to the pod's process, each value once.
func (s *Simulator) applyAnnotations(st *podState) {
	p := simulated(st.proc)
	v, ok := st.pod.Annotations[SavepointsAnnotation]
	if !ok {
		// Removed: savepoints complete again, as Flink's do (an absent value is "").
		v = ""
	}
	if prev, seen := st.applied[SavepointsAnnotation]; prev != v && (ok || seen) {
		mode, known := savepointModes[strings.ToLower(v)]
		switch {
		case !ok:
			p.SetSavepointMode(fakeflink.SavepointComplete)
		case known:
			p.SetSavepointMode(mode)
			s.opts.Log.Info("simulated savepoints set by annotation", "pod", st.key, "savepoints", strings.ToLower(v))
		default:
			s.opts.Log.Info("ignoring annotation: want ok, hold or fail", "pod", st.key, "annotation", SavepointsAnnotation, "value", v)
		}
		st.applied[SavepointsAnnotation] = v
	}
	v, ok = st.pod.Annotations[JobAnnotation]
	if !ok || st.applied[JobAnnotation] == v || !p.Leads() || len(p.JobIDs()) == 0 {
		return
	}
	st.applied[JobAnnotation] = v
	move, known := jobMoves[normalizeJobValue(v)]
	if !known {
		s.opts.Log.Info("ignoring annotation: want a Flink job status (RUNNING, RESTARTING, FAILING, FAILED, CANCELLING, CANCELED, FINISHED, SUSPENDED, CREATED, INITIALIZING)",
			"pod", st.key, "annotation", JobAnnotation, "value", v)
		return
	}
	for _, id := range p.JobIDs() {
		if !moveJob(p, id, move) {
			continue
		}
		s.opts.Log.Info("simulated job moved by annotation", "pod", st.key, "job", id, "state", move.state)
	}
}

// moveJob moves job id of p as move says and reports whether it did: a job already in the
// state, or ended (globally, or SUSPENDED on this JobManager, whose JobMaster is gone), stays.
func moveJob(p *fakeflink.JobManager, id string, move jobMove) bool {
	cur := p.JobState(id)
	if cur == move.state || cur == "" || flinkclient.IsTerminalJobState(cur) || cur == flinkclient.JobStateSuspended {
		return false
	}
	if move.exception != nil {
		p.AddException(id, *move.exception)
	}
	p.SetJobState(id, move.state)
	return true
}

// startupFailure is how the pod's container fails at this start, or nil when it starts:
// Options.StartupFailure's answer, else StartupAnnotation's.
func (s *Simulator) startupFailure(st *podState) *fakeflink.ExitStatus {
	if s.opts.StartupFailure != nil {
		if status := s.opts.StartupFailure(st.pod); status != nil {
			return status
		}
	}
	v, ok := st.pod.Annotations[StartupAnnotation]
	switch {
	case !ok:
		return nil
	case strings.EqualFold(strings.TrimSpace(v), "fail"):
		return &fakeflink.ExitStatus{Code: fakeflink.ExitStartupFailure, Message: simulatedStartup}
	default:
		s.opts.Log.Info("ignoring annotation: want fail", "pod", st.key, "annotation", StartupAnnotation, "value", v)
		return nil
	}
}

// held reports whether the test holds the deleted pod's container running (HoldTermination).
func (s *Simulator) held(pod *corev1.Pod) bool {
	return s.opts.HoldTermination != nil && s.opts.HoldTermination(pod)
}

// failStartup ends a container that started at startedAt with status before any process ran
// (StartupFailure), as the kubelet writes an entrypoint's exit.
func (s *Simulator) failStartup(ctx context.Context, st *podState, startedAt metav1.Time, status fakeflink.ExitStatus) {
	if st.proc != nil && st.proc.Alive() {
		st.proc.Kill()
	}
	st.started, st.applied = startedAt, map[string]string{}
	s.mu.Lock()
	st.proc = nil
	s.mu.Unlock()
	s.opts.Log.Info("simulated JobManager container failed to start", "pod", st.key, "exitCode", status.Code)
	s.exitedWith(ctx, st, status)
}

// exited writes the end of the pod's container, as the kubelet does after its process exited.
func (s *Simulator) exited(ctx context.Context, st *podState) {
	status, ok := st.proc.ExitStatus()
	if !ok {
		status = fakeflink.ExitStatus{Code: fakeflink.ExitKilled}
	}
	s.exitedWith(ctx, st, status)
}

// exitedWith writes the end of the pod's container with status.
func (s *Simulator) exitedWith(ctx context.Context, st *podState, status fakeflink.ExitStatus) {
	st.ended = true
	now := s.opts.Clock.Now()
	finished := metav1.NewTime(now)
	terminated := &corev1.ContainerStateTerminated{
		ExitCode: status.Code, Reason: exitReason(status.Code), Message: status.Message,
		StartedAt: st.started, FinishedAt: finished, ContainerID: "kwok://" + containerName(st.pod),
	}
	policy := st.pod.Spec.RestartPolicy
	restarts := policy == corev1.RestartPolicyAlways || (policy == corev1.RestartPolicyOnFailure && status.Code != 0)
	deleting := st.pod.DeletionTimestamp != nil
	var delay time.Duration
	if restarts && !deleting {
		// The kubelet's back-off: the first restart is immediate, the next waits 10 s, then
		// twice as long each time up to 5 min; a back-off not renewed for twice its cap is
		// forgotten.
		if !st.backOffSet.IsZero() && now.Sub(st.backOffSet) > 2*s.opts.MaxBackOff {
			st.backOff = 0
		}
		delay = st.backOff
		switch {
		case st.backOff == 0:
			st.backOff = s.opts.BackOff
		default:
			st.backOff = min(2*st.backOff, s.opts.MaxBackOff)
		}
		st.backOffSet = now
	}
	err := s.updateStatus(ctx, st, func(pod *corev1.Pod) {
		cs := ensureStatus(pod)
		cs.Ready, cs.Started = false, ptrBool(false)
		switch {
		case restarts && !deleting:
			cs.RestartCount++
			cs.LastTerminationState = corev1.ContainerState{Terminated: terminated}
			cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason:  "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, cs.Name, pod.Name, pod.Namespace, pod.UID),
			}}
			setReady(pod, false, "ContainersNotReady", "containers with unready status: ["+cs.Name+"]", now)
		default:
			cs.State = corev1.ContainerState{Terminated: terminated}
			pod.Status.Phase = corev1.PodFailed
			if status.Code == 0 {
				pod.Status.Phase = corev1.PodSucceeded
			}
			setReady(pod, false, "PodCompleted", "", now)
		}
	})
	if err != nil {
		s.opts.Log.Error(err, "writing the end of a simulated JobManager's container", "pod", st.key)
	}
	if jm := simulated(st.proc); s.opts.OnExit != nil && jm != nil {
		s.opts.OnExit(st.pod, jm, status)
	}
	if restarts && !deleting {
		st.restartAt = now.Add(delay)
	}
}

// restart runs the container again after its back-off: Running and Ready with a new
// startedAt; the update event starts its process.
func (s *Simulator) restart(ctx context.Context, st *podState, now time.Time) {
	err := s.updateStatus(ctx, st, func(pod *corev1.Pod) {
		cs := ensureStatus(pod)
		cs.Ready, cs.Started = true, ptrBool(true)
		cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}
		setReady(pod, true, "", "", now)
	})
	if err != nil {
		s.opts.Log.Error(err, "restarting a simulated JobManager's container", "pod", st.key)
	}
}

// updateStatus changes the pod's status from its current state, retrying on conflicts (KWOK
// writes statuses too). A pod already gone is no error.
func (s *Simulator) updateStatus(ctx context.Context, st *podState, mutate func(*corev1.Pod)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod := &corev1.Pod{}
		if err := s.client.Get(ctx, st.key, pod); err != nil {
			return client.IgnoreNotFound(err)
		}
		if pod.UID != st.pod.UID {
			return nil
		}
		mutate(pod)
		err := s.client.Status().Update(ctx, pod)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// nodeUnknown is the default NodeStopped: a node whose Ready condition is Unknown (its
// heartbeats stopped).
func (s *Simulator) nodeUnknown(name string) bool {
	if name == "" {
		return false
	}
	node := &corev1.Node{}
	// From the Simulator's cache: asked for every pod on every round.
	if err := s.cache.Get(context.Background(), types.NamespacedName{Name: name}, node); err != nil {
		return false
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionUnknown
		}
	}
	return false
}

func (s *Simulator) nodeExists(name string) bool {
	err := s.cache.Get(context.Background(), types.NamespacedName{Name: name}, &corev1.Node{})
	return !apierrors.IsNotFound(err)
}

// containerInstance names a run of a container: its restart count and start.
func containerInstance(cs *corev1.ContainerStatus) string {
	return fmt.Sprintf("%d/%s", cs.RestartCount, cs.State.Running.StartedAt.UTC().Format(time.RFC3339))
}

// mainContainer is the container the Simulator runs in pod (containerName).
func mainContainer(pod *corev1.Pod) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == containerName(pod) {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// containerStatus is the status of the container the Simulator runs in pod.
func containerStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == containerName(pod) {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// ensureStatus returns the status of the container the Simulator runs, adding it when missing.
func ensureStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	if cs := containerStatus(pod); cs != nil {
		return cs
	}
	pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: containerName(pod)})
	return &pod.Status.ContainerStatuses[len(pod.Status.ContainerStatuses)-1]
}

// setReady sets the pod's Ready and ContainersReady conditions, as the kubelet's status
// manager does.
func setReady(pod *corev1.Pod, ready bool, reason, message string, now time.Time) {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	for _, typ := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		found := false
		for i := range pod.Status.Conditions {
			c := &pod.Status.Conditions[i]
			if c.Type != typ {
				continue
			}
			found = true
			if c.Status != status {
				c.LastTransitionTime = metav1.NewTime(now)
			}
			c.Status, c.Reason, c.Message = status, reason, message
		}
		if !found {
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
				Type: typ, Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(now),
			})
		}
	}
}

// preStopDelay is the container's preStop `sleep N`, the JobManager's preStop delay.
func preStopDelay(pod *corev1.Pod) time.Duration {
	c := mainContainer(pod)
	if c == nil || c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return 0
	}
	h := c.Lifecycle.PreStop
	if h.Sleep != nil {
		return time.Duration(h.Sleep.Seconds) * time.Second
	}
	if h.Exec != nil && len(h.Exec.Command) == 2 && h.Exec.Command[0] == "sleep" {
		if n, err := strconv.Atoi(h.Exec.Command[1]); err == nil {
			return time.Duration(n) * time.Second
		}
	}
	return 0
}

// exitReason is the kubelet's reason for a terminated container.
func exitReason(code int32) string {
	if code == 0 {
		return "Completed"
	}
	return "Error"
}

func ptrBool(b bool) *bool { return &b }
