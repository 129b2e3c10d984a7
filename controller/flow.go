package controller

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// flowOut is what a flow decided beyond the status it changed; runFlow merges it into the
// outcome, whose other steps record theirs in the same way.
type flowOut struct {
	waiting           *metav1.Condition
	savepointRequired *metav1.Condition
	updateStep        *metav1.Condition
	// requeue is when to reconcile again (0: on the next change only); poll asks for the poll
	// interval and idle for what a reconcile with nothing in flight waits (cycle.idle).
	requeue    time.Duration
	poll, idle bool
	// removeRestore removes the restore annotation once the status is written.
	removeRestore bool
	// objects is what the act steps did to the cluster's objects.
	objects acted
}

// merge adds what a later step decided: its wait and stops replace earlier ones.
func (o *flowOut) merge(b flowOut) {
	if b.waiting != nil {
		o.waiting = b.waiting
	}
	if b.savepointRequired != nil {
		o.savepointRequired = b.savepointRequired
	}
	if b.updateStep != nil {
		o.updateStep = b.updateStep
	}
	o.after(b.requeue)
	o.poll, o.idle = o.poll || b.poll, o.idle || b.idle
	o.removeRestore = o.removeRestore || b.removeRestore
	o.objects.merge(b.objects)
}

func (o *flowOut) after(d time.Duration) {
	if d > 0 && (o.requeue == 0 || d < o.requeue) {
		o.requeue = d
	}
}

func (o *flowOut) lookAgain() { o.poll = true }

// lookAfter asks for a reconcile just past a wait's bound (zero: none).
func (o *flowOut) lookAfter(now, until time.Time) {
	if !until.IsZero() {
		o.after(until.Sub(now) + time.Second)
	}
}

// pastDeadline reports whether an operation that started at since has run longer than bound,
// else asks for a reconcile just past it. Deadlines count from the start the status records,
// so that a restarted controller keeps them.
func (o *flowOut) pastDeadline(now, since time.Time, bound time.Duration) bool {
	if since.IsZero() || bound <= 0 {
		return false
	}
	if left := since.Add(bound).Sub(now); left >= 0 {
		o.after(left + time.Second)
		return false
	}
	return true
}

// pastBound reports whether the update waited past its bound, looking again once it does.
func (o *flowOut) pastBound(now time.Time, u flinkcluster.Upgrade) bool {
	o.lookAfter(now, u.Until)
	return u.PastBound
}

func (o *flowOut) wait(w *metav1.Condition) {
	o.waiting = w
	o.lookAgain()
}

func (o *flowOut) waitFor(reason, format string, args ...any) {
	o.wait(waitCondition(reason, format, args...))
}

func (o *flowOut) requireSavepoint(reason, format string, args ...any) {
	o.savepointRequired = savepointRequiredCondition(reason, format, args...)
}

// haltUpdate ends this reconcile's update step on a Waiting or SavepointRequired condition.
func (o *flowOut) haltUpdate(h *metav1.Condition) {
	reason := h.Reason
	if h.Type == ConditionSavepointRequired {
		o.savepointRequired = h
		reason = ConditionReasonNoFinalSavepoint
	} else {
		o.wait(h)
	}
	o.updateStepf(reason, "%s", h.Message)
}

func (o *flowOut) updateStepf(reason, format string, args ...any) {
	cond := condition(ConditionUpdating, metav1.ConditionTrue, reason, fmt.Sprintf(format, args...))
	o.updateStep = &cond
}

// act collects what an act step did.
func (o *flowOut) act(a acted, err error) error {
	o.objects.merge(a)
	return err
}

// flowIn is what a flow reads besides the status it changes: the cluster's name, spec and
// annotations (fc, whose status is the flow's st), the status as this reconcile read it, the
// observation, what derive found, the reconcile's time and the controller's options.
type flowIn struct {
	fc      *v1beta1.FlinkCluster
	read    *v1beta1.FlinkClusterStatus
	obs     observed
	derived derived
	now     time.Time
	opts    *Options
}

func (c *cycle) flowIn() flowIn {
	return flowIn{fc: c.fc, read: &c.read, obs: c.obs, derived: c.derived, now: c.now, opts: &c.r.Options}
}

// flowActs are the acts a flow calls: Kubernetes writes, Flink calls and Events. Those that
// move the job or a savepoint record what they did in the status the flow changes, and
// report their waits in out.
type flowActs interface {
	event(eventType, reason, action, format string, args ...any)
	flinkClient(ctx context.Context) (flinkclient.Client, error)
	setJobState(ev state.Event, reason, message string, lostSince time.Time) error
	controlDone(ctlState, message string)
	requestSavepoint(reason string)
	driveSavepoint(ctx context.Context, out *flowOut, stop bool) (phase, error)
	deleteJobManager(ctx context.Context, out *flowOut) (acted, error)
	waitForNoLeader(ctx context.Context) (*metav1.Condition, error)
	removeJobGraphs(ctx context.Context, out *flowOut) (bool, error)
	deleteHAConfigMaps(ctx context.Context) (bool, error)
	applyComponents(ctx context.Context) (acted, error)
	scaleJobManager(ctx context.Context, replicas int32) error
	createJobManager(ctx context.Context, out *flowOut) (acted, error)
	newDeploy(ctx context.Context, out *flowOut, from string) error
	deleteAll(ctx context.Context, out *flowOut) error
	deleteTaskManagers(ctx context.Context) (acted, error)
	checkpointTimes(ctx context.Context, jobID string) *flinkcluster.CheckpointTimes
}

// flowFunc is a flow: it changes st and returns what else it decided.
type flowFunc func(ctx context.Context, a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus) (flowOut, error)
