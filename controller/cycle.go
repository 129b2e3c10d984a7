package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// maxFailureReasons bounds status.components.job.failureReasons.
const maxFailureReasons = 10

// lookAgainNow requeues a reconcile whose record the next step acts on (decisionRecord).
const lookAgainNow = time.Millisecond

// cycle is one reconcile of one cluster.
type cycle struct {
	r    *Reconciler
	fc   *v1beta1.FlinkCluster
	orig *v1beta1.FlinkCluster
	// read is the status as this reconcile read it (orig's moves on when recordBeforeActing
	// writes).
	read v1beta1.FlinkClusterStatus
	st   *v1beta1.FlinkClusterStatus
	// fresh is set when this reconcile read the cluster, its JobManager pods and its HA
	// ConfigMaps from the API server rather than the caches (readCluster, confirmAbsent).
	fresh bool
	// tenure is the shard tenure this reconcile runs under (0 without shards).
	tenure   uint64
	now      time.Time
	revision string
	mode     v1beta1.JobManagerDeploymentType

	obs    observed
	client flinkclient.Client
	// derived is what derive found; the flows read it and never change it.
	derived derived
	// out is what the flows decided beyond the status they changed.
	out outcome
}

type derived struct {
	// lostTimedOut: Lost past the Lost timeout with nothing to resume from: finished.
	lostTimedOut bool
	// endedUnobserved: the job ended in Flink unseen; finished, no cleanup policy applies.
	endedUnobserved bool
	// deploymentFailed: the observation found a failed JobManager deployment.
	deploymentFailed bool
}

// outcome is what the flows decided; setConditions derives the conditions from it.
type outcome struct {
	waiting           *metav1.Condition
	savepointRequired *metav1.Condition
	updateStep        *metav1.Condition
	// removeControl and removeRestore remove their annotation only after the status is written,
	// so that the request is never lost.
	removeControl bool
	removeRestore bool
	// requeue is when to reconcile again (0: on the next change only).
	requeue time.Duration
	// objects is what the act steps did to the cluster's objects.
	objects acted
}

func (r *Reconciler) newCycle(fc *v1beta1.FlinkCluster) (*cycle, error) {
	rev, err := resources.Revision(fc)
	if err != nil {
		return nil, fmt.Errorf("computing the revision: %w", err)
	}
	c := &cycle{
		r:        r,
		fc:       fc,
		orig:     fc.DeepCopy(),
		now:      r.Options.Clock.Now(),
		revision: rev,
		mode:     fc.Spec.GetDeploymentType(),
	}
	c.st = &fc.Status
	c.read = *fc.Status.DeepCopy()
	return c, nil
}

func (c *cycle) job() *v1beta1.JobStatus { return c.st.Components.Job }

func (c *cycle) jobID() string {
	if j := c.st.Components.Job; j != nil {
		return j.ID
	}
	return ""
}

// waitCondition is a Waiting condition a step returns rather than records, so that its caller
// decides what else the wait shows (haltUpdate).
func waitCondition(reason, format string, args ...any) *metav1.Condition {
	cond := condition(ConditionWaiting, metav1.ConditionTrue, reason, fmt.Sprintf(format, args...))
	return &cond
}

// savepointRequiredCondition stops for want of a confirmed savepoint until the user answers.
func savepointRequiredCondition(reason, format string, args ...any) *metav1.Condition {
	msg := fmt.Sprintf(format, args...) + fmt.Sprintf(
		"; to go on, annotate the FlinkCluster with %s=<savepoint path> to restore an older savepoint knowingly, or %s=%s to start without state",
		RestoreAnnotation, RestoreAnnotation, RestoreEmptyState)
	cond := condition(ConditionSavepointRequired, metav1.ConditionTrue, reason, msg)
	return &cond
}

func (c *cycle) wait(w *metav1.Condition) {
	c.out.waiting = w
	c.poll()
}

func (c *cycle) waitFor(reason, format string, args ...any) {
	c.wait(waitCondition(reason, format, args...))
}

func (c *cycle) requireSavepoint(reason, format string, args ...any) {
	c.out.savepointRequired = savepointRequiredCondition(reason, format, args...)
}

// haltUpdate ends this reconcile's update step on a Waiting or SavepointRequired condition.
func (c *cycle) haltUpdate(h *metav1.Condition) {
	reason := h.Reason
	if h.Type == ConditionSavepointRequired {
		c.out.savepointRequired = h
		reason = ConditionReasonNoFinalSavepoint
	} else {
		c.wait(h)
	}
	c.updateStepf(reason, "%s", h.Message)
}

// recordBeforeActing writes the status before an action whose record must not be lost (a
// deploy's job ID, a savepoint's trigger ID). A copy is patched, so that a concurrent spec
// edit does not change this reconcile's cluster.
func (c *cycle) recordBeforeActing(ctx context.Context) error {
	if equality.Semantic.DeepEqual(c.orig.Status, c.fc.Status) {
		return nil
	}
	c.st.LastUpdateTime = state.Time(c.now)
	for i := range c.st.Conditions {
		if c.st.Conditions[i].ObservedGeneration == 0 {
			c.st.Conditions[i].ObservedGeneration = c.fc.Generation
		}
	}
	obj := c.fc.DeepCopy()
	if err := c.r.Client.Status().Patch(ctx, obj, client.MergeFrom(c.orig)); err != nil {
		return fmt.Errorf("writing the status before acting: %w", err)
	}
	c.r.wrote(obj)
	c.orig.Status = *c.fc.Status.DeepCopy()
	return nil
}

// pastDeadline reports whether an operation that started at since has run longer than bound,
// else asks for a reconcile just past it. Deadlines count from the start the status records,
// so that a restarted controller keeps them.
func (c *cycle) pastDeadline(since time.Time, bound time.Duration) bool {
	if since.IsZero() || bound <= 0 {
		return false
	}
	if left := since.Add(bound).Sub(c.now); left >= 0 {
		c.after(left + time.Second)
		return false
	}
	return true
}

func (c *cycle) after(d time.Duration) {
	if d > 0 && (c.out.requeue == 0 || d < c.out.requeue) {
		c.out.requeue = d
	}
}

func (c *cycle) poll() { c.after(c.r.Options.RequeueInterval) }

// idle ends a reconcile with nothing in flight: a watched change, the poller or the resync
// wakes the next. Without a poller, or when what kept the REST API from being asked is not
// watched, the reconcile looks again itself.
func (c *cycle) idle() {
	if c.r.polls == nil || (c.obs.flinkRead == nil && !c.obs.watched) {
		c.poll()
		return
	}
	c.after(c.r.Options.ResyncInterval)
}

// trackFlink hands the cluster's REST reads to the poller until the next reconcile: at the
// steady interval while the job runs or this reconcile polls itself, else at the poll interval.
func (c *cycle) trackFlink() {
	p := c.r.polls
	if p == nil {
		return
	}
	key := c.key(c.fc.Name)
	if c.obs.flinkRead == nil {
		p.Forget(key)
		return
	}
	every := c.r.Options.SteadyPollInterval
	selfPolls := c.out.requeue > 0 && c.out.requeue <= c.r.Options.RequeueInterval
	if c.job().State != v1beta1.JobStateRunning && !selfPolls {
		every = c.r.Options.RequeueInterval
	}
	p.Track(key, c.obs.flinkTarget, every, c.obs.flinkRead)
}

func (c *cycle) event(eventType, reason, action, format string, args ...any) {
	c.r.Recorder.Eventf(c.fc, nil, eventType, reason, action, format, args...)
}

// run is one reconcile, then the removal of the annotations the written status now carries.
func (c *cycle) run(ctx context.Context) (ctrl.Result, error) {
	err := c.reconcile(ctx)
	c.trackFlink()
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := c.removeControlAnnotation(ctx); err != nil {
		return ctrl.Result{}, fmt.Errorf("removeControlAnnotation: %w", err)
	}
	if err := c.removeRestoreAnnotation(ctx); err != nil {
		return ctrl.Result{}, fmt.Errorf("removeRestoreAnnotation: %w", err)
	}
	return ctrl.Result{RequeueAfter: c.out.requeue}, nil
}

// reconcile observes, decides and acts. The status is patched in a defer, whatever failed; a
// failed observation keeps the record of what it would have derived, so that a half-read
// world is never written as seen.
func (c *cycle) reconcile(ctx context.Context) (err error) {
	c.initStatus()
	observed := false
	defer func() {
		c.recordOutcome(observed, err)
		if werr := c.writeStatus(ctx); werr != nil {
			err = errors.Join(err, fmt.Errorf("writeStatus: %w", werr))
		} else if !equality.Semantic.DeepEqual(decisionRecord(&c.read), decisionRecord(c.st)) {
			// Taken now, not on the write's echo (Setup drops status-only changes) nor at a resync.
			c.after(lookAgainNow)
		}
	}()
	if err := c.observe(ctx); err != nil {
		return fmt.Errorf("observe: %w", err)
	}
	observed = true
	c.acceptControl()
	if err := c.derive(); err != nil {
		return fmt.Errorf("derive: %w", err)
	}
	c.noteUnsupportedHA()
	c.noteRestoreRefused()
	if !c.updatePending() && !c.cancelPending() {
		lost, err := c.haMetadataLost(ctx)
		if err != nil {
			return fmt.Errorf("haMetadataLost: %w", err)
		}
		if lost {
			if err := c.redeployWithoutHA(); err != nil {
				return fmt.Errorf("redeployWithoutHA: %w", err)
			}
		}
	}

	step, ensured := "", false
	switch {
	case c.cancelStopping():
		step, err = "cancel", c.cancel(ctx)
	case c.updatePending():
		step, err = "update", c.update(ctx)
	case c.cancelPending():
		step, err = "cancel", c.cancel(ctx)
	case c.job().State == v1beta1.JobStateRestarting || c.shouldRestart():
		step, err = "restart", c.restart(ctx)
	case c.finished():
		step, err = "cleanup", c.cleanup(ctx)
	default:
		step, err, ensured = "ensure", c.ensure(ctx), true
	}
	if err == nil && (!ensured || c.obs.submitted != "") {
		// ensure rebuilds the ConfigMap only on some paths; a job submitted unseen is pinned to its HA data on every path.
		step, err = "dropRestorePath", c.dropRestorePath(ctx)
	}
	if err == nil {
		step, err = "savepointControl", c.savepointControl(ctx)
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", step, err)
	}
	if err == nil {
		err = c.specSavepoint(ctx)
	}
	if err == nil {
		err = c.disposeSavepoints(ctx)
	}
	c.recordSpecFromSavepoint()
	if err == nil {
		c.noteSavepointCheckpointID(ctx)
	}
	return err
}

// recordOutcome completes the status at the end of a reconcile, observed or not.
func (c *cycle) recordOutcome(observed bool, err error) {
	if observed {
		c.setComponents()
		c.deriveClusterState()
		c.setConditions(err)
		return
	}
	if c.st.State == "" {
		// A new cluster: the schema requires a state.
		c.deriveClusterState()
	}
	c.setHealth(err)
	for i := range c.st.Conditions {
		switch c.st.Conditions[i].Type {
		case ConditionReady, ConditionReconciling, ConditionStalled:
			c.st.Conditions[i].ObservedGeneration = c.fc.Generation
		}
	}
}

// initStatus starts a new cluster's status: its revision and a Pending job.
func (c *cycle) initStatus() {
	if c.st.Revision.CurrentRevision == "" {
		c.st.Revision.CurrentRevision = c.revision
	}
	c.st.Revision.NextRevision = c.revision
	if c.st.Components.Job == nil {
		c.st.Components.Job = &v1beta1.JobStatus{State: v1beta1.JobStatePending}
	}
}

// updatePending reports whether the job is to be redeployed: a new revision, an update in
// progress, or the user's restore answer for a job that ended.
func (c *cycle) updatePending() bool {
	return c.st.Revision.CurrentRevision != c.st.Revision.NextRevision || c.job().State == v1beta1.JobStateUpdating ||
		(c.finished() && c.savepointRequiredRecorded() && c.restoreChoice() != nil)
}

func (c *cycle) savepointRequiredRecorded() bool {
	return meta.IsStatusConditionTrue(c.st.Conditions, ConditionSavepointRequired)
}

func (c *cycle) restoreChoice() *string { return flinkcluster.RestoreChoice(c.fc.Annotations) }

func (c *cycle) removeRestoreAnnotation(ctx context.Context) error {
	if !c.out.removeRestore {
		return nil
	}
	if _, ok := c.fc.Annotations[RestoreAnnotation]; !ok {
		return nil
	}
	patch := client.MergeFromWithOptions(c.fc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	delete(c.fc.Annotations, RestoreAnnotation)
	if err := c.r.Client.Patch(ctx, c.fc, patch); err != nil {
		return err
	}
	c.r.wrote(c.fc)
	return nil
}

// shouldRestart reports whether a failed job is restarted: the rule the webhook judges by too.
func (c *cycle) shouldRestart() bool {
	job := c.job()
	if job.State != v1beta1.JobStateFailed && !(job.State == v1beta1.JobStateLost && c.derived.lostTimedOut) {
		return false
	}
	return flinkcluster.ShouldRestart(c.mode, job, c.fc.Spec.Job)
}

// finished reports whether the job ended (terminal, Lost past its timeout, or ended unobserved).
func (c *cycle) finished() bool {
	return flinkcluster.Terminal(c.job().State) || c.derived.lostTimedOut || c.derived.endedUnobserved
}

// cleanupAction is the cleanup policy of the job's end, except for a job that ended unobserved:
// how it ended is unknown, so KeepCluster applies, keeping the JobManager pod and its log.
func (c *cycle) cleanupAction() v1beta1.CleanupAction {
	if c.derived.endedUnobserved {
		return v1beta1.CleanupActionKeepCluster
	}
	return state.CleanupAction(&c.fc.Spec, c.job().State)
}

// stopping reports whether a stop-with-savepoint may have taken effect: Flink's FINISHED (or
// CANCELED) then means stopped, not done.
func (c *cycle) stopping() bool {
	if c.job().State == v1beta1.JobStateUpdating {
		return true
	}
	return c.stopInFlight(SavepointReasonUpdate) || c.stopInFlight(SavepointReasonJobCancel)
}

func (c *cycle) stopInFlight(reason string) bool {
	sp := c.st.Savepoint
	return sp != nil && sp.JobID == c.jobID() && sp.TriggerReason == reason && sp.State != SavepointStateFailed
}

// derive applies the lifecycle rules of package state to the observation; a move the job state
// machine does not list is refused.
func (c *cycle) derive() error {
	res := state.DeriveJob(state.Input{
		Now:                 c.now,
		DeploymentType:      c.mode,
		Recorded:            *c.job(),
		LostSince:           lostSince(c.st.Conditions),
		LostTimeoutRecorded: c.lostReasonRecorded(ConditionReasonLostTimeout),
		EndedRecorded:       c.lostReasonRecorded(ConditionReasonEndedUnobserved),
		EndedInHA:           c.endedInHA(),
		HAMetadataGone:      c.haMetadataGone(),
		Stopping:            c.stopping(),
		Workload:            c.obs.wl,
		Pod:                 c.obs.pod,
		Pods:                c.obs.pods,
		JobGraphStored:      c.job().ID != "" && c.obs.ha.jobGraphStored(c.job().ID),
		Flink:               c.obs.flink,
		HARecoveryGrace:     c.r.Options.HARecoveryGrace,
		LostTimeout:         c.r.Options.LostTimeout,
	})
	c.after(res.RequeueAfter)
	prev := c.job().State
	switch {
	case res.Unlisted:
		return c.refuseTransition(fmt.Sprintf("%s -> %s by %s", prev, res.State, state.StepDerive))
	case res.Event != "":
		if err := c.setJobState(res.Event, res.Reason, res.Message, res.LostSince); err != nil {
			return err
		}
	}
	switch {
	case res.DeploymentFailure == state.FailureHAMetadataMissing:
		c.derived.deploymentFailed = true
		c.setCondition(condition(ConditionDeploymentFailed, metav1.ConditionTrue, res.DeploymentFailure, res.Reason))
		c.requireSavepoint(ConditionReasonHAMetadataMissing, "%s; nothing deploys it again until the user chooses", res.Reason)
	case res.DeploymentFailure != "":
		c.derived.deploymentFailed = true
		c.setCondition(condition(ConditionDeploymentFailed, metav1.ConditionTrue, res.DeploymentFailure, res.Reason))
	case prev == v1beta1.JobStateLost && c.job().State == v1beta1.JobStateRunning &&
		meta.IsStatusConditionTrue(c.st.Conditions, ConditionDeploymentFailed):
		c.setCondition(condition(ConditionDeploymentFailed, metav1.ConditionFalse, ConditionReasonNoFailure, "the JobManager recovered the job"))
	}
	c.derived.endedUnobserved = res.Ended
	c.derived.lostTimedOut = res.LostTimedOut
	if res.Ended && !c.lostReasonRecorded(ConditionReasonEndedUnobserved) {
		note := res.Reason + ": neither afterJobSucceeds nor afterJobFails applies, the cluster is kept as it is (KeepCluster, the JobManager not scaled down); the JobManager's previous container log (kubectl logs --previous) says how the job ended; change the spec to deploy again, or delete the FlinkCluster"
		// Still Lost: the condition keeps the time the job became Lost.
		c.setCondition(condition(ConditionLost, metav1.ConditionTrue, ConditionReasonEndedUnobserved, note))
		// An Event with the transition's reason and action in the same reconcile would be folded
		// into its series (events/v1), and this note lost.
		c.event(corev1.EventTypeWarning, ReasonJobLost, "Cleanup", "%s", note)
	}
	c.keepRecoverableLostJob()
	// Once the Lost timeout ended the job, nothing is waited for: its JobManager may be gone.
	c.noteWaits(res.Unreported)
	if c.derived.lostTimedOut && !clusterFinished(c.orig.Status.State) {
		job := c.job()
		reason := fmt.Sprintf("job lost: not reported again within %s", c.r.Options.LostTimeout)
		if n := len(job.FailureReasons); n == 0 || job.FailureReasons[n-1] != reason {
			job.FailureReasons = append(job.FailureReasons, reason)
		}
		note := fmt.Sprintf("%s: afterJobFails (%s) applies", reason, c.cleanupAction())
		c.setCondition(condition(ConditionLost, metav1.ConditionTrue, ConditionReasonLostTimeout, note))
		c.event(corev1.EventTypeWarning, ReasonJobLost, "Cleanup", "%s", note)
	}
	return nil
}

func (c *cycle) lostReasonRecorded(reason string) bool {
	l := meta.FindStatusCondition(c.st.Conditions, ConditionLost)
	return l != nil && l.Status == metav1.ConditionTrue && l.Reason == reason
}

// noteWaits records the waits of an active job's observation, so that a state kept without
// Flink's word is never reported as if Flink had confirmed it.
func (c *cycle) noteWaits(unreported string) {
	if c.finished() || c.obs.wl == nil || c.obs.wl.Deleting {
		return
	}
	switch f := c.obs.flink; {
	case c.obs.notLeader:
		c.waitFor(ConditionReasonWaitingForLeader, "%s", c.obs.untrusted)
	case c.obs.untrusted != "":
		c.waitFor(ConditionReasonWaitingForFlinkAPI, "%s", c.obs.untrusted)
	case f != nil && f.Job == nil && f.Application != nil && !flinkclient.IsTerminalApplicationState(f.Application.Status):
		c.waitFor(ConditionReasonWaitingForApplication, "application %s is %s and runs no job %s yet (its jobs by state: %v)",
			f.Application.ID, f.Application.Status, c.jobID(), f.Application.JobCounts)
	case unreported != "":
		c.waitFor(ConditionReasonWaitingForJobReport, "%s", unreported)
	}
}

func clusterFinished(s string) bool {
	return s == v1beta1.ClusterStateStopping || s == v1beta1.ClusterStateStopped || s == v1beta1.ClusterStatePartiallyStopped
}

var errUnlistedTransition = errors.New("transition not in the job state machine (controller/state/machine.go)")

// refuseTransition refuses a job state change the job state machine does not list.
func (c *cycle) refuseTransition(what string) error {
	c.event(corev1.EventTypeWarning, ReasonUnlistedTransition, "Observe",
		"job %s: %s is not in the job state machine (controller/state/machine.go): refused", c.jobID(), what)
	return fmt.Errorf("job %s: %s: %w", c.jobID(), what, errUnlistedTransition)
}

// setJobState moves the job by ev through the job state machine, with its reason and an Event.
// An unlisted event is refused: the state stays and the reconcile fails rather than act on a
// state the machine never reaches.
func (c *cycle) setJobState(ev state.Event, reason, message string, lostSince time.Time) error {
	job := c.job()
	prev := job.State
	newState, ok := state.Next(prev, ev)
	if !ok {
		return c.refuseTransition(fmt.Sprintf("%s in state %s by %s", ev, prev, state.StepOf(ev)))
	}
	if newState == prev {
		return nil
	}
	job.State = newState
	if reason != "" {
		job.FailureReasons = append(job.FailureReasons, reason)
		if n := len(job.FailureReasons); n > maxFailureReasons {
			job.FailureReasons = job.FailureReasons[n-maxFailureReasons:]
		}
	}
	if flinkcluster.Terminal(newState) {
		job.CompletionTime = state.MetaTime(c.now)
	} else {
		job.CompletionTime = nil
	}
	switch {
	case newState == v1beta1.JobStateLost:
		if lostSince.IsZero() {
			lostSince = c.now
		}
		why := reason
		if why == "" {
			why = message
		}
		// The Lost timeout counts from this condition's lastTransitionTime.
		setCondition(&c.st.Conditions, condition(ConditionLost, metav1.ConditionTrue, ConditionReasonJobNotReported, why), lostSince)
	case prev == v1beta1.JobStateLost:
		c.setCondition(condition(ConditionLost, metav1.ConditionFalse, ConditionReasonJobTracked, "tracked again: job is "+newState))
	}
	if newState == v1beta1.JobStateRunning && prev != v1beta1.JobStateLost {
		job.StartTime = state.Time(c.now)
	}
	eventType, eventReason := corev1.EventTypeNormal, ReasonJobStateChanged
	switch newState {
	case v1beta1.JobStateFailed, v1beta1.JobStateDeployFailed:
		eventType, eventReason = corev1.EventTypeWarning, ReasonJobFailed
	case v1beta1.JobStateLost:
		eventType, eventReason = corev1.EventTypeWarning, ReasonJobLost
	}
	note := fmt.Sprintf("job %s: %s -> %s", job.ID, prev, newState)
	if message != "" {
		note += ": " + message
	}
	c.event(eventType, eventReason, "Observe", "%s", note)
	return nil
}

// writeStatus patches the status when it changed, without resourceVersion: it was derived from
// a fresh read, the controller is its only writer, and a user's concurrent edit must not make
// the record of what was done (a savepoint triggered, a workload deleted) fail.
func (c *cycle) writeStatus(ctx context.Context) error {
	if equality.Semantic.DeepEqual(c.orig.Status, c.fc.Status) {
		return nil
	}
	c.st.LastUpdateTime = state.Time(c.now)
	if err := c.r.Client.Status().Patch(ctx, c.fc, client.MergeFrom(c.orig)); err != nil {
		return err
	}
	c.r.wrote(c.fc)
	return nil
}

// decisionRecord is the part of a status the flows read back as the record of what was
// decided and done; the rest is derived anew from each observation.
func decisionRecord(st *v1beta1.FlinkClusterStatus) v1beta1.FlinkClusterStatus {
	rec := v1beta1.FlinkClusterStatus{
		Components:       v1beta1.FlinkClusterComponentsStatus{Job: st.Components.Job},
		Control:          st.Control,
		Savepoint:        st.Savepoint,
		SavepointHistory: st.SavepointHistory,
		Revision:         st.Revision,
	}
	for _, cond := range st.Conditions {
		switch cond.Type {
		case ConditionReady, ConditionReconciling, ConditionStalled, ConditionManaged, ConditionJobManagerReady, ConditionWaiting:
		default:
			rec.Conditions = append(rec.Conditions, cond)
		}
	}
	return rec
}

func (c *cycle) setCondition(cond metav1.Condition) bool {
	return setCondition(&c.st.Conditions, cond, c.now)
}

// setConditions derives the conditions from this reconcile's observation and outcome.
func (c *cycle) setConditions(err error) {
	c.setCondition(managedCondition(c.fc))
	c.setJobManagerReady()

	prev := meta.FindStatusCondition(c.st.Conditions, ConditionUpdating)
	if upd := updatingCondition(prev, c.out.updateStep, c.updatePending(), c.job().State, c.st.Revision.CurrentRevision); upd != nil {
		if c.setCondition(*upd) && upd.Status == metav1.ConditionFalse {
			c.event(corev1.EventTypeNormal, ReasonUpdateFinished, "Update", "update to revision %s finished: job %s",
				c.st.Revision.CurrentRevision, c.job().State)
		}
	}

	if meta.FindStatusCondition(c.st.Conditions, ConditionDeploymentFailed) == nil {
		c.setCondition(condition(ConditionDeploymentFailed, metav1.ConditionFalse, ConditionReasonNoFailure, "no failed JobManager deployment observed"))
	}
	if meta.FindStatusCondition(c.st.Conditions, ConditionLost) == nil {
		c.setCondition(condition(ConditionLost, metav1.ConditionFalse, ConditionReasonJobTracked, "the job is not Lost"))
	}
	c.setSavepointRequired()
	c.setWaiting()
	c.setHealth(err)
	observedGeneration(c.st.Conditions, c.fc.Generation)
	c.st.ObservedGeneration = c.fc.Generation
}

// setHealth derives Ready, Reconciling and Stalled (see health).
func (c *cycle) setHealth(err error) {
	cancel := c.fc.Spec.Job != nil && c.fc.Spec.Job.CancelRequested != nil && *c.fc.Spec.Job.CancelRequested
	if ctl := c.st.Control; ctl != nil && ctl.Name == v1beta1.ControlNameJobCancel && ctl.State != v1beta1.ControlStateFailed {
		cancel = true
	}
	in := healthInput{Status: c.st, CancelRequested: cancel}
	if err != nil {
		in.Failed = err.Error()
	}
	ready, reconciling, stalled := health(in)
	c.setCondition(ready)
	c.setCondition(reconciling)
	c.setCondition(stalled)
}

// setSavepointRequired records this reconcile's SavepointRequired stop, with a Warning Event.
func (c *cycle) setSavepointRequired() {
	prev := meta.FindStatusCondition(c.st.Conditions, ConditionSavepointRequired)
	if sr := c.out.savepointRequired; sr != nil {
		if prev == nil || prev.Status != metav1.ConditionTrue || prev.Reason != sr.Reason {
			c.event(corev1.EventTypeWarning, ReasonSavepointRequired, "Stop", "%s", sr.Message)
		}
		c.setCondition(*sr)
		return
	}
	switch {
	case prev == nil:
		c.setCondition(condition(ConditionSavepointRequired, metav1.ConditionFalse, ConditionReasonNotRequired, "no savepoint is missing"))
	case prev.Status == metav1.ConditionTrue && !c.updatePending() && !c.finished():
		// The spec went back: nothing waits for the user's choice any more.
		c.setCondition(condition(ConditionSavepointRequired, metav1.ConditionFalse, ConditionReasonNotRequired, "no update is pending"))
	}
}

// setWaiting records what this reconcile waits on, keeping the time the wait began while its
// reason stays; past the wait bound the message says so, with a Warning Event once.
func (c *cycle) setWaiting() {
	prev := meta.FindStatusCondition(c.st.Conditions, ConditionWaiting)
	w := c.out.waiting
	if w == nil {
		c.setCondition(condition(ConditionWaiting, metav1.ConditionFalse, ConditionReasonNotWaiting, "the controller waits on nothing"))
		return
	}
	since := c.now
	if prev != nil && prev.Status == metav1.ConditionTrue && prev.Reason == w.Reason {
		since = prev.LastTransitionTime.Time
	}
	bound := c.r.Options.WaitBound
	if waited := c.now.Sub(since); waited > bound {
		w.Message = fmt.Sprintf("%s (waiting for %s, longer than the wait bound %s)", w.Message, waited.Round(time.Second), bound)
		if prev == nil || !strings.Contains(prev.Message, "longer than the wait bound") || prev.Reason != w.Reason {
			c.event(corev1.EventTypeWarning, ReasonWaitExceeded, "Wait", "%s: %s", w.Reason, w.Message)
		}
	} else {
		c.after(bound - waited)
	}
	if prev != nil && prev.Reason != w.Reason {
		// A new wait: its time is now, even though the status stays True.
		meta.RemoveStatusCondition(&c.st.Conditions, ConditionWaiting)
	}
	setCondition(&c.st.Conditions, *w, since)
}

func (c *cycle) setJobManagerReady() {
	kind := "Job"
	var replicas *int32
	if c.mode == v1beta1.JobManagerDeploymentTypeDeployment {
		kind = "Deployment"
		if d := c.obs.jmDeployment; d != nil {
			replicas = d.Spec.Replicas
		}
	}
	o := c.standing()
	// The condition says it; no Event: a pod that becomes ready is nothing to act on, and a
	// job that does not run because of it says so by its own Events.
	c.setCondition(jobManagerReadyCondition(kind, o.wl, replicas, o.pod))
}

func (c *cycle) updateStepf(reason, format string, args ...any) {
	cond := condition(ConditionUpdating, metav1.ConditionTrue, reason, fmt.Sprintf(format, args...))
	c.out.updateStep = &cond
}

func (c *cycle) deriveClusterState() {
	job, o := c.job(), c.standing()
	comps := state.Components{
		JobManager:     o.wl != nil && !o.wl.Deleting,
		TaskManager:    o.tmExists,
		Service:        o.serviceExists,
		ConfigMap:      o.configMapExists,
		JobManagerPods: len(o.pods),
	}
	next := state.ClusterState(job.State, c.updatePending(), c.finished(), c.cleanupAction(), comps)
	if next == v1beta1.ClusterStateStopping {
		c.poll()
	}
	// No Event: the cluster's state follows its job's, whose changes have theirs.
	c.setClusterState(next, "", "", "")
}

// setClusterState is the one writer of status.state: it records a change, with a Normal
// Event (reason, action, note) when reason is set, and reports whether the state changed.
func (c *cycle) setClusterState(next, reason, action, note string) bool {
	if next == c.st.State {
		return false
	}
	c.st.State = next
	if reason != "" {
		c.event(corev1.EventTypeNormal, reason, action, "%s", note)
	}
	return true
}

func orNone(s string) string {
	if s == "" {
		return "(new)"
	}
	return s
}
