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
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

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

// cycle is one reconcile of one cluster: what it read, saw and derived, the status it records
// and what its steps decided (out).
type cycle struct {
	r  *Reconciler
	fc *v1beta1.FlinkCluster
	// read is the status as this reconcile read it: the record its steps act on.
	read v1beta1.FlinkClusterStatus
	st   *v1beta1.FlinkClusterStatus
	// fresh is set when this reconcile read the cluster, its JobManager pods and its HA
	// ConfigMaps from the API server rather than the caches (readCluster, confirmAbsent).
	fresh bool
	// tenure is the shard tenure this reconcile runs under (0 without shards).
	tenure uint64
	now    time.Time
	mode   v1beta1.JobManagerDeploymentType

	obs    observed
	client flinkclient.Client
	// derived is what derive found; the flows read it and never change it.
	derived derived
	// out is what the steps decided beyond the status they changed.
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

// outcome is what the steps decided; setConditions derives the conditions from it.
type outcome struct {
	flowOut
	observed bool
	flow     string
	// removeControl removes the control annotation only after the status is written, so
	// that the request is never lost (as removeRestore does); a control ignored while another
	// is in flight is removed before (controlIgnored).
	removeControl, controlIgnored bool
	// released: finalize removed the finalizer, and the status goes with the object.
	released bool
}

func (r *Reconciler) newCycle(fc *v1beta1.FlinkCluster) *cycle {
	c := &cycle{
		r:    r,
		fc:   fc,
		now:  r.Options.Clock.Now(),
		mode: fc.Spec.GetDeploymentType(),
		read: *fc.Status.DeepCopy(),
		st:   &fc.Status,
	}
	if c.st.Components.Job == nil {
		c.st.Components.Job = &v1beta1.JobStatus{State: v1beta1.JobStatePending}
	}
	return c
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

// errRecordFirst ends a reconcile's acting: what it decided (a deploy's job ID, a savepoint's
// trigger ID, what a JobManager scaled away could no longer tell) is the reconcile's one status
// write, and the next reconcile, at once (lookAgainNow), acts on that record.
var errRecordFirst = errors.New("recording the decision before acting on it")

// recordedBeforeActing returns errRecordFirst unless the status as read already records what
// this reconcile decided.
func (c *cycle) recordedBeforeActing() error { return recordedFirst(&c.read, c.st) }

func recordedFirst(read, st *v1beta1.FlinkClusterStatus) error {
	if decisionChanged(read, st) {
		return errRecordFirst
	}
	return nil
}

func decisionChanged(read, st *v1beta1.FlinkClusterStatus) bool {
	return !equality.Semantic.DeepEqual(decisionRecord(read), decisionRecord(st))
}

func (c *cycle) poll() { c.out.after(c.r.Options.RequeueInterval) }

// idle ends a reconcile with nothing in flight: a watched change, the poller or the resync
// wakes the next. Without a poller, or when what kept the REST API from being asked is not
// watched, the reconcile looks again itself.
func (c *cycle) idle() {
	if c.r.polls == nil || (c.obs.flinkRead == nil && !c.obs.watched) {
		c.poll()
		return
	}
	c.out.after(c.r.Options.ResyncInterval)
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

// step is one named part of a reconcile.
type step struct {
	name string
	run  func(*cycle, context.Context) error
	// afterRecordFirst runs the step after one that recorded first (errRecordFirst): it keeps
	// the record true. afterFailure runs it after one that failed: it only copies the spec
	// into the record.
	afterRecordFirst, afterFailure bool
}

// reconcileSteps are a reconcile's parts in order: observe, derive, one flow, then the acts
// every flow is followed by.
var reconcileSteps = []step{
	{name: "addFinalizer", run: (*cycle).addFinalizer},
	{name: "revision", run: (*cycle).initRevision},
	{name: "observe", run: (*cycle).observe},
	{name: "acceptControl", run: (*cycle).acceptControl},
	{name: "derive", run: (*cycle).derive},
	{name: "noteUnsupportedHA", run: (*cycle).noteUnsupportedHA},
	{name: "noteRestoreRefused", run: (*cycle).noteRestoreRefused},
	{name: "haMetadataLost", run: (*cycle).answerHAMetadataLost},
	{name: "flow", run: (*cycle).runFlow},
	{name: "dropRestorePath", run: (*cycle).dropRestorePathAfterFlow, afterRecordFirst: true},
	{name: "savepointControl", run: (*cycle).savepointControl},
	{name: "specSavepoint", run: (*cycle).specSavepoint},
	{name: "disposeSavepoints", run: (*cycle).disposeSavepoints},
	{name: "recordSpecFromSavepoint", run: func(c *cycle, _ context.Context) error { c.recordSpecFromSavepoint(); return nil },
		afterRecordFirst: true, afterFailure: true},
	{name: "noteSavepointCheckpointID", run: func(c *cycle, ctx context.Context) error { c.noteSavepointCheckpointID(ctx); return nil }},
}

// runSteps runs steps in order, each error wrapped with its step's name. After a step that
// failed, or recorded first or waits (errRecordFirst, errNotYet: not failures), only the steps
// marked so run.
func runSteps(ctx context.Context, c *cycle, steps []step) error {
	var failed error
	recordFirst := false
	for _, s := range steps {
		if (failed != nil && !s.afterFailure) || (recordFirst && !s.afterRecordFirst) {
			continue
		}
		switch err := s.run(c, ctx); {
		case err == nil:
		case errors.Is(err, errRecordFirst), errors.Is(err, errNotYet):
			recordFirst = true
		default:
			failed = errors.Join(failed, fmt.Errorf("%s: %w", s.name, err))
		}
	}
	return failed
}

// run is one reconcile: its steps, then the status, written once in a defer whatever failed,
// then the removal of the annotations the written status now carries. A failed observation
// keeps the record of what it would have derived, so that a half-read world is never written
// as seen.
func (c *cycle) run(ctx context.Context) (res ctrl.Result, err error) {
	defer func() {
		if err = c.finish(ctx, err); err != nil {
			res = ctrl.Result{}
			return
		}
		res = ctrl.Result{RequeueAfter: c.out.requeue}
	}()
	return ctrl.Result{}, runSteps(ctx, c, reconcileSteps)
}

// finish records the outcome and writes it; a control ignored while another is in flight is
// removed first, so that a failed removal is on record.
func (c *cycle) finish(ctx context.Context, err error) error {
	if err == nil && c.out.controlIgnored {
		if rerr := c.removeAnnotation(ctx, v1beta1.ControlAnnotation); rerr != nil {
			err = fmt.Errorf("removeControlAnnotation: %w", rerr)
		}
		c.out.removeControl = false
	}
	c.recordOutcome(err)
	if werr := c.writeRecord(ctx); werr != nil {
		err = errors.Join(err, fmt.Errorf("writeStatus: %w", werr))
	}
	if c.out.poll {
		c.poll()
	}
	if c.out.idle {
		c.idle()
	}
	c.trackFlink()
	if err != nil {
		return err
	}
	if c.out.removeControl {
		if err := c.removeAnnotation(ctx, v1beta1.ControlAnnotation); err != nil {
			return fmt.Errorf("removeControlAnnotation: %w", err)
		}
	}
	if c.out.removeRestore {
		if err := c.removeAnnotation(ctx, RestoreAnnotation); err != nil {
			return fmt.Errorf("removeRestoreAnnotation: %w", err)
		}
	}
	return nil
}

// addFinalizer holds a cluster until its finalize has removed what it owns.
func (c *cycle) addFinalizer(ctx context.Context) error {
	if controllerutil.ContainsFinalizer(c.fc, Finalizer) {
		return nil
	}
	obj := c.fc.DeepCopy()
	patch := client.MergeFromWithOptions(c.fc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(obj, Finalizer)
	if err := c.r.Client.Patch(ctx, obj, patch); err != nil {
		return err
	}
	c.r.wrote(obj)
	if equality.Semantic.DeepEqual(c.read, v1beta1.FlinkClusterStatus{}) {
		if k := c.known(); k != nil {
			k.pristine = true
		}
	}
	c.fc.Finalizers, c.fc.ResourceVersion = obj.Finalizers, obj.ResourceVersion
	return nil
}

// known is what this replica knows of the cluster beyond its cache under its tenure; nil when
// nothing (readCluster).
func (c *cycle) known() *knownCluster { return c.r.knownCluster(c.key(c.fc.Name), c.tenure) }

// pristine reports whether no JobManager was ever created for this cluster object: this
// replica added the finalizer to its untouched version (a patch locked on that version) and
// has created none since under its tenure; a failed reconcile forgets it (distrust). Every
// deploy is recorded before it is created, so no JobManager pod, HA ConfigMap or submission
// of the cluster exists for a lagging cache to hide, and the reads that guard against one
// (confirmAbsent) are skipped. Leftovers of a deleted cluster of the same name are its
// finalizer's to remove.
func (c *cycle) pristine() bool {
	k := c.known()
	return k != nil && k.pristine
}

// removeAnnotation removes an annotation of the cluster. A copy is patched, so that the
// answer's status does not replace the one this reconcile records.
func (c *cycle) removeAnnotation(ctx context.Context, key string) error {
	if _, ok := c.fc.Annotations[key]; !ok {
		return nil
	}
	obj := c.fc.DeepCopy()
	patch := client.MergeFromWithOptions(c.fc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	delete(obj.Annotations, key)
	if err := c.r.Client.Patch(ctx, obj, patch); err != nil {
		return err
	}
	c.r.wrote(obj)
	c.fc.Annotations, c.fc.ResourceVersion = obj.Annotations, obj.ResourceVersion
	return nil
}

// initRevision starts a new cluster's status: its revision.
func (c *cycle) initRevision(context.Context) error {
	rev, err := resources.Revision(c.fc)
	if err != nil {
		return fmt.Errorf("computing the revision: %w", err)
	}
	if c.st.Revision.CurrentRevision == "" {
		c.st.Revision.CurrentRevision = rev
	}
	c.st.Revision.NextRevision = rev
	return nil
}

// answerHAMetadataLost redeploys a running job whose HA metadata is gone (haMetadataLost).
func (c *cycle) answerHAMetadataLost(ctx context.Context) error {
	if c.updatePending() || c.cancelPending() {
		return nil
	}
	lost, err := c.haMetadataLost(ctx)
	if err != nil || !lost {
		return err
	}
	if err := c.redeployWithoutHA(); err != nil {
		return fmt.Errorf("redeployWithoutHA: %w", err)
	}
	return nil
}

// flows are the ways a reconcile acts on the job, by priority: the first that applies runs.
var flows = []struct {
	name    string
	applies func(*cycle) bool
	run     flowFunc
}{
	{"cancel", (*cycle).cancelStopping, cancel},
	{"update", (*cycle).updatePending, update},
	{"cancel", (*cycle).cancelPending, cancel},
	{"restart", func(c *cycle) bool { return c.job().State == v1beta1.JobStateRestarting || c.shouldRestart() }, restart},
	{"cleanup", (*cycle).finished, cleanup},
	{"ensure", func(*cycle) bool { return true }, ensure},
}

// runFlow runs the first flow that applies; its error names it.
func (c *cycle) runFlow(ctx context.Context) error {
	for _, f := range flows {
		if !f.applies(c) {
			continue
		}
		c.out.flow = f.name
		out, err := f.run(ctx, c, c.flowIn(), c.st)
		c.out.merge(out)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		return nil
	}
	return nil
}

// dropRestorePathAfterFlow runs dropRestorePath after the flows that do not rebuild the
// ConfigMap; a job submitted unseen is pinned to its HA data after every flow.
func (c *cycle) dropRestorePathAfterFlow(ctx context.Context) error {
	if c.out.flow == "ensure" && c.obs.submitted == "" {
		return nil
	}
	return c.dropRestorePath(ctx)
}

// recordOutcome completes the status at the end of a reconcile, observed or not.
func (c *cycle) recordOutcome(err error) {
	if c.out.observed {
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

func (in flowIn) restoreChoice() *string { return flinkcluster.RestoreChoice(in.fc.Annotations) }

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
func (c *cycle) cleanupAction() v1beta1.CleanupAction { return cleanupAction(c.fc, c.job(), c.derived) }

func cleanupAction(fc *v1beta1.FlinkCluster, job *v1beta1.JobStatus, d derived) v1beta1.CleanupAction {
	if d.endedUnobserved {
		return v1beta1.CleanupActionKeepCluster
	}
	return state.CleanupAction(&fc.Spec, job.State)
}

// stopping reports whether a stop-with-savepoint may have taken effect: Flink's FINISHED (or
// CANCELED) then means stopped, not done.
func (c *cycle) stopping() bool {
	if c.job().State == v1beta1.JobStateUpdating {
		return true
	}
	return stopInFlight(c.st, SavepointReasonUpdate) || stopInFlight(c.st, SavepointReasonJobCancel)
}

func stopInFlight(st *v1beta1.FlinkClusterStatus, reason string) bool {
	sp := st.Savepoint
	return sp != nil && sp.JobID == st.Components.Job.ID && sp.TriggerReason == reason && sp.State != SavepointStateFailed
}

// derive applies the lifecycle rules of package state to the observation; a move the job state
// machine does not list is refused.
func (c *cycle) derive(context.Context) error {
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
	c.out.after(res.RequeueAfter)
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
		c.out.requireSavepoint(ConditionReasonHAMetadataMissing, "%s; nothing deploys it again until the user chooses", res.Reason)
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
	if c.derived.lostTimedOut && !clusterFinished(c.read.State) {
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
		c.out.waitFor(ConditionReasonWaitingForLeader, "%s", c.obs.untrusted)
	case c.obs.untrusted != "":
		c.out.waitFor(ConditionReasonWaitingForFlinkAPI, "%s", c.obs.untrusted)
	case f != nil && f.Job == nil && f.Application != nil && !flinkclient.IsTerminalApplicationState(f.Application.Status):
		c.out.waitFor(ConditionReasonWaitingForApplication, "application %s is %s and runs no job %s yet (its jobs by state: %v)",
			f.Application.ID, f.Application.Status, c.jobID(), f.Application.JobCounts)
	case unreported != "":
		c.out.waitFor(ConditionReasonWaitingForJobReport, "%s", unreported)
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
	if toldByItsAct[ev] {
		return nil
	}
	note := fmt.Sprintf("job %s: %s -> %s", job.ID, prev, newState)
	if message != "" {
		note += ": " + message
	}
	c.event(eventType, eventReason, "Observe", "%s", note)
	return nil
}

// toldByItsAct are the transitions whose act records an Event of its own (the new deploy's,
// JobManagerCreated, LastStateRedeploy, UpdateStarted, JobRestarting, JobCancelled): one Event
// per transition, not a second saying the same.
var toldByItsAct = map[state.Event]bool{
	state.EventNewDeploy: true, state.EventJobManagerCreated: true, state.EventLastStateRedeploy: true,
	state.EventSpecChanged: true, state.EventRestart: true, state.EventCancelConfirmed: true,
}

// writeStatus patches the status when it changed. Once the cluster was observed, without
// resourceVersion: a user's edit must not make the record of what was done fail. Before, with
// it: nothing was done, and a stale read (another replica's write) must record nothing.
func (c *cycle) writeStatus(ctx context.Context) error {
	if equality.Semantic.DeepEqual(c.read, c.fc.Status) {
		return nil
	}
	c.st.LastUpdateTime = state.Time(c.now)
	base := c.fc.DeepCopy()
	base.Status = c.read
	patch := client.MergeFrom(base)
	if !c.out.observed {
		patch = client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	}
	if err := c.r.Client.Status().Patch(ctx, c.fc, patch); err != nil {
		return err
	}
	c.r.wrote(c.fc)
	return nil
}

// writeRecord writes the status and, when the decision record changed, asks for the next look
// now: not on the write's echo (Setup drops status-only changes) nor at a resync.
func (c *cycle) writeRecord(ctx context.Context) error {
	changed := decisionChanged(&c.read, c.st)
	if err := c.writeStatus(ctx); err != nil {
		return err
	}
	if changed {
		c.out.after(lookAgainNow)
	}
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
			// The generation is stamped at the end: a condition set before acting lacks it.
			cond.ObservedGeneration = 0
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
		c.out.after(bound - waited)
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
	o := standing(c.obs, c.out.objects)
	// The condition says it; no Event: a pod that becomes ready is nothing to act on, and a
	// job that does not run because of it says so by its own Events.
	c.setCondition(jobManagerReadyCondition(kind, o.wl, replicas, o.pod))
}

func (c *cycle) deriveClusterState() {
	job, o := c.job(), standing(c.obs, c.out.objects)
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
