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

// lookAgainNow is the requeue of a reconcile whose record the next step acts on
// (decisionRecord): at once, after the work queue's own ordering.
const lookAgainNow = time.Millisecond

// cycle is one reconcile of one cluster: the cluster, its status being built, what was
// observed, and when to look again.
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

	// obs is this reconcile's observation (observe).
	obs    observed
	client flinkclient.Client
	// derived is what the lifecycle rules derived from the observation (derive); the flows
	// read it and do not change it.
	derived derived
	// out is what the flows decided beyond the status they changed: the conditions of their
	// stops and waits, the annotations whose requests the status now carries, when to look
	// again.
	out outcome
}

// derived is what derive found beyond the job's state.
type derived struct {
	// lostTimedOut: the job was Lost for longer than the Lost timeout, and nothing it can
	// resume from is left (keepRecoverableLostJob): it is finished.
	lostTimedOut bool
	// endedUnobserved: the job ended in Flink while the controller did not see how
	// (state.Result.Ended); it is finished, and no cleanup policy applies (cleanupAction).
	endedUnobserved bool
	// deploymentFailed: the observation found a failed JobManager deployment
	// (DeploymentFailed with the failure's own reason).
	deploymentFailed bool
}

// outcome is what this reconcile's flows decided beyond the status they changed; the
// conditions are derived from it when the reconcile ends (setConditions).
type outcome struct {
	// waiting is the Waiting condition of what this reconcile waits on; nil when nothing.
	waiting *metav1.Condition
	// savepointRequired is the SavepointRequired condition this reconcile stopped with.
	savepointRequired *metav1.Condition
	// updateStep is the Updating condition of the update flow's step in this reconcile.
	updateStep *metav1.Condition
	// removeControl is set once the user-control annotation was taken into status.control;
	// it is removed after the status is written, so the request is never lost.
	removeControl bool
	// removeRestore is set once a deploy restored what the RestoreAnnotation named; the
	// annotation is removed after the status is written.
	removeRestore bool
	// requeue is when to reconcile again (0: on the next change only).
	requeue time.Duration
}

func (r *Reconciler) newCycle(fc *v1beta1.FlinkCluster) (*cycle, error) {
	rev, err := resources.Revision(fc)
	if err != nil {
		return nil, err
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

// jobID is the current deploy's job ID; "" before the first deploy.
func (c *cycle) jobID() string {
	if j := c.st.Components.Job; j != nil {
		return j.ID
	}
	return ""
}

// waitCondition is a Waiting condition: what a flow waits on, which a step returns rather
// than records, so that its caller decides what else the wait shows (haltUpdate).
func waitCondition(reason, format string, args ...any) *metav1.Condition {
	cond := condition(ConditionWaiting, metav1.ConditionTrue, reason, fmt.Sprintf(format, args...))
	return &cond
}

// savepointRequiredCondition is a SavepointRequired stop for want of a confirmed savepoint:
// nothing is deployed until the user answers (RestoreAnnotation).
func savepointRequiredCondition(reason, format string, args ...any) *metav1.Condition {
	msg := fmt.Sprintf(format, args...) + fmt.Sprintf(
		"; to go on, annotate the FlinkCluster with %s=<savepoint path> to restore an older savepoint knowingly, or %s=%s to start without state",
		RestoreAnnotation, RestoreAnnotation, RestoreEmptyState)
	cond := condition(ConditionSavepointRequired, metav1.ConditionTrue, reason, msg)
	return &cond
}

// wait records what this reconcile waits on, for the Waiting condition, and looks again
// soon.
func (c *cycle) wait(w *metav1.Condition) {
	c.out.waiting = w
	c.poll()
}

// waitFor records what this reconcile waits on, for the Waiting condition.
func (c *cycle) waitFor(reason, format string, args ...any) {
	c.wait(waitCondition(reason, format, args...))
}

// requireSavepoint stops the flow for want of a confirmed savepoint: the SavepointRequired
// condition and a Warning Event say why.
func (c *cycle) requireSavepoint(reason, format string, args ...any) {
	c.out.savepointRequired = savepointRequiredCondition(reason, format, args...)
}

// haltUpdate ends this reconcile's update step on h, a Waiting or a SavepointRequired
// condition: it is recorded, and the Updating condition shows it as the update's step.
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

// recordBeforeActing writes the status now, before an action whose record must not be lost:
// the job ID of a deploy before its workload is created, a trigger ID before the savepoint
// call. A copy is patched, so a concurrent spec edit does not change this reconcile's
// cluster. The rest of the status is patched once, when the reconcile ends (reconcile).
func (c *cycle) recordBeforeActing(ctx context.Context) error {
	if equality.Semantic.DeepEqual(c.orig.Status, c.fc.Status) {
		return nil
	}
	c.st.LastUpdateTime = state.Time(c.now)
	// The conditions this reconcile set so far are of this generation; setConditions stamps
	// the others when it ends.
	for i := range c.st.Conditions {
		if c.st.Conditions[i].ObservedGeneration == 0 {
			c.st.Conditions[i].ObservedGeneration = c.fc.Generation
		}
	}
	obj := c.fc.DeepCopy()
	if err := c.r.Client.Status().Patch(ctx, obj, client.MergeFrom(c.orig)); err != nil {
		return err
	}
	c.r.wrote(obj)
	c.orig.Status = *c.fc.Status.DeepCopy()
	return nil
}

// pastDeadline reports whether an operation that started at since has run longer than bound;
// before its deadline it asks for a reconcile just past it. Every operation's deadline is
// measured from its own start as the status records it (a savepoint's trigger, a stop's
// request, the update's start, the job's end before a JobManager shutdown), so that a
// restarted controller keeps the same deadline; an operation with no recorded start has none
// (its start is recorded before it reaches Flink).
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

// after asks for another reconcile within d.
func (c *cycle) after(d time.Duration) {
	if d > 0 && (c.out.requeue == 0 || d < c.out.requeue) {
		c.out.requeue = d
	}
}

func (c *cycle) poll() { c.after(c.r.Options.RequeueInterval) }

// idle ends a reconcile with nothing in flight. What wakes the next one is a change of the
// cluster's objects (watched), of what Flink reports (the poller: trackFlink), or the resync
// interval. Without a poller, or when what kept the REST API from being asked is not watched
// (another JobManager's leadership, a REST TLS setting), the reconcile looks again itself.
func (c *cycle) idle() {
	if c.r.polls == nil || (c.obs.flinkRead == nil && !c.obs.watched) {
		c.poll()
		return
	}
	c.after(c.r.Options.ResyncInterval)
}

// trackFlink hands the cluster's REST reads to the poller until the next reconcile: at the
// steady interval while the job runs, at the poll interval while it is not running yet (a
// deploy, a restart), and at the steady interval again as a backstop when this reconcile
// looks again itself within the poll interval (an operation in flight). A cluster whose REST
// API was not asked is not polled.
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

// run is one reconcile of the cluster, then the removal of the annotations whose requests
// the written status now carries.
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

// reconcile observes, decides and acts. The status is patched in a defer, whatever failed
// (cluster-api's machine controller patches its Machine so): what was observed and done, and,
// when something failed, the Reconciling condition says what. A failed observation changes
// nothing it would have derived — components, cluster state and the conditions read from
// Kubernetes and Flink keep their record — so a half-read world is never written as seen.
func (c *cycle) reconcile(ctx context.Context) (err error) {
	c.initStatus()
	observed := false
	defer func() {
		c.recordOutcome(observed, err)
		if werr := c.writeStatus(ctx); werr != nil {
			err = errors.Join(err, fmt.Errorf("writeStatus: %w", werr))
		} else if !equality.Semantic.DeepEqual(decisionRecord(&c.read), decisionRecord(c.st)) {
			// The next step acts on what this one recorded: it is taken now, not on the echo
			// of the write (Setup drops the cluster's status-only changes) nor at a resync.
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

	// Each flow's error names the step that failed, as the job state machine
	// (state.Transitions) names the steps.
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
		// (ensure rebuilds the ConfigMap only on some of its paths: a job submitted before the
		// controller saw it run is pinned to its HA data on every path.)
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

// recordOutcome completes the status at the end of a reconcile whose observation completed
// (observed) or failed, and whose flows failed with err (nil when nothing failed).
func (c *cycle) recordOutcome(observed bool, err error) {
	if observed {
		c.setComponents()
		c.deriveClusterState()
		c.setConditions(err)
		return
	}
	if c.st.State == "" {
		// A new cluster: the schema requires a state, and nothing was created yet.
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

// initStatus starts the status of a new cluster: revision and a Pending job, whose ID the
// first deploy chooses.
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
// progress, or the user's answer (RestoreAnnotation) to a SavepointRequired stop of a job
// that ended.
func (c *cycle) updatePending() bool {
	return c.st.Revision.CurrentRevision != c.st.Revision.NextRevision || c.job().State == v1beta1.JobStateUpdating ||
		(c.finished() && c.savepointRequiredRecorded() && c.restoreChoice() != nil)
}

// savepointRequiredRecorded reports whether the recorded SavepointRequired condition is True.
func (c *cycle) savepointRequiredRecorded() bool {
	return meta.IsStatusConditionTrue(c.st.Conditions, ConditionSavepointRequired)
}

// restoreChoice is the savepoint the RestoreAnnotation names ("" for empty state); nil
// without the annotation.
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

// shouldRestart reports whether a failed job is restarted from its latest savepoint (Job
// mode, restartPolicy FromSavepointOnFailure): the rule the webhook judges by too.
func (c *cycle) shouldRestart() bool {
	job := c.job()
	if job.State != v1beta1.JobStateFailed && !(job.State == v1beta1.JobStateLost && c.derived.lostTimedOut) {
		return false
	}
	return flinkcluster.ShouldRestart(c.mode, job, c.fc.Spec.Job)
}

// finished reports whether the job ended: a terminal state, Lost past its timeout, or Lost
// because it ended unobserved.
func (c *cycle) finished() bool {
	return flinkcluster.Terminal(c.job().State) || c.derived.lostTimedOut || c.derived.endedUnobserved
}

// cleanupAction is what cleanup does for the job's end: the cleanup policy of its state,
// except for a job that ended unobserved. Its end is unknown — it may have failed or
// succeeded — and what says how it ended is the JobManager pod's previous container log
// (kubectl logs --previous) and the TaskManagers' logs: neither afterJobFails nor
// afterJobSucceeds applies, KeepCluster does, and cleanup does not even scale the JobManager
// to 0 (the pod and its log would go).
func (c *cycle) cleanupAction() v1beta1.CleanupAction {
	if c.derived.endedUnobserved {
		return v1beta1.CleanupActionKeepCluster
	}
	return state.CleanupAction(&c.fc.Spec, c.job().State)
}

// stopping reports whether a stop-with-savepoint of the current deploy's job was requested
// and may have taken effect: Flink's FINISHED (or CANCELED) then means stopped, not done.
func (c *cycle) stopping() bool {
	if c.job().State == v1beta1.JobStateUpdating {
		return true
	}
	return c.stopInFlight(SavepointReasonUpdate) || c.stopInFlight(SavepointReasonJobCancel)
}

// stopInFlight reports whether a stop-with-savepoint of the current job, triggered for
// reason, is in flight: recorded and not failed.
func (c *cycle) stopInFlight(reason string) bool {
	sp := c.st.Savepoint
	return sp != nil && sp.JobID == c.jobID() && sp.TriggerReason == reason && sp.State != SavepointStateFailed
}

// derive applies the lifecycle rules (package state) to this cycle's observation. The state
// they derive moves the job by the derive event DeriveJob names for it; a move the job state
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
		// The JobManager of a job that ran came back (a crash loop passed) and recovered it.
		c.setCondition(condition(ConditionDeploymentFailed, metav1.ConditionFalse, ConditionReasonNoFailure, "the JobManager recovered the job"))
	}
	c.derived.endedUnobserved = res.Ended
	c.derived.lostTimedOut = res.LostTimedOut
	if res.Ended && !c.lostReasonRecorded(ConditionReasonEndedUnobserved) {
		note := res.Reason + ": neither afterJobSucceeds nor afterJobFails applies, the cluster is kept as it is (KeepCluster, the JobManager not scaled down); the JobManager's previous container log (kubectl logs --previous) says how the job ended; change the spec to deploy again, or delete the FlinkCluster"
		// Still Lost: the condition keeps the time the job became Lost.
		c.setCondition(condition(ConditionLost, metav1.ConditionTrue, ConditionReasonEndedUnobserved, note))
		// Action Cleanup: an Event with the transition's reason and action in the same
		// reconcile would be folded into its series (events/v1), and this note lost.
		c.event(corev1.EventTypeWarning, ReasonJobLost, "Cleanup", "%s", note)
	}
	c.keepRecoverableLostJob()
	// Once the Lost timeout ended the job (keepRecoverableLostJob decided), nothing is waited
	// for: its JobManager may be shut down and answer no more.
	c.noteWaits(res.Unreported)
	if c.derived.lostTimedOut && !clusterFinished(c.orig.Status.State) {
		job := c.job()
		reason := fmt.Sprintf("job lost: not reported again within %s", c.r.Options.LostTimeout)
		if n := len(job.FailureReasons); n == 0 || job.FailureReasons[n-1] != reason {
			job.FailureReasons = append(job.FailureReasons, reason)
		}
		note := fmt.Sprintf("%s: afterJobFails (%s) applies", reason, c.cleanupAction())
		// Still Lost: the condition keeps the time the job became Lost.
		c.setCondition(condition(ConditionLost, metav1.ConditionTrue, ConditionReasonLostTimeout, note))
		c.event(corev1.EventTypeWarning, ReasonJobLost, "Cleanup", "%s", note)
	}
	return nil
}

// lostReasonRecorded reports whether the recorded Lost condition is True with reason.
func (c *cycle) lostReasonRecorded(reason string) bool {
	l := meta.FindStatusCondition(c.st.Conditions, ConditionLost)
	return l != nil && l.Status == metav1.ConditionTrue && l.Reason == reason
}

// noteWaits records the waits of an active job's observation: a JobManager whose REST API
// does not answer or does not lead, a Flink 2.3 application that runs without the job, a
// JobManager that lists no job of the deploy yet (unreported, from state.DeriveJob). A
// recorded state kept without Flink's word is never reported as if Flink had confirmed it.
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

// clusterFinished reports whether a cluster state is one of the ends of a job.
func clusterFinished(s string) bool {
	return s == v1beta1.ClusterStateStopping || s == v1beta1.ClusterStateStopped || s == v1beta1.ClusterStatePartiallyStopped
}

// errUnlistedTransition is the error of an event that the job state machine does not list
// for the job's state.
var errUnlistedTransition = errors.New("transition not in the job state machine (controller/state/machine.go)")

// refuseTransition refuses a job state change the job state machine does not list: a Warning
// Event UnlistedTransition, and the error that ends the reconcile's flow.
func (c *cycle) refuseTransition(what string) error {
	c.event(corev1.EventTypeWarning, ReasonUnlistedTransition, "Observe",
		"job %s: %s is not in the job state machine (controller/state/machine.go): refused", c.jobID(), what)
	return fmt.Errorf("job %s: %s: %w", c.jobID(), what, errUnlistedTransition)
}

// setJobState moves the job by ev through the job state machine (state.Next), recording its
// reason and an Event. An event the table does not list for the job's state is refused: the
// state stays, a Warning Event UnlistedTransition says so (for the simulation and for a user
// to report), and the error makes the reconcile fail instead of acting on a state the
// machine never reaches.
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

// writeStatus patches the status when it changed. The patch carries no resourceVersion: the
// status was derived from the cluster read fresh from the API server at the start of this
// reconcile, the controller is its only writer (reconciles of one cluster never overlap, and
// leader election keeps one controller), and a user's concurrent spec or annotation edit must
// not make the record of what this reconcile already did (a savepoint triggered, a workload
// deleted) fail.
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

// decisionRecord is the part of a status that the flows read back as the record of what
// was decided and done: the job (its state, deploy, savepoints, trigger), the revisions, the
// control and savepoint records, and the conditions an outcome sets (Updating, Lost,
// DeploymentFailed, SavepointRequired, and any other the controller does not derive anew).
// The rest is derived anew from each observation: the cluster state, the other components,
// the health, JobManagerReady and Waiting conditions, the times of the write.
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

// setCondition records a condition at this reconcile's time; see setCondition.
func (c *cycle) setCondition(cond metav1.Condition) bool {
	return setCondition(&c.st.Conditions, cond, c.now)
}

// setConditions derives the conditions that follow from this reconcile's observation and
// outcome (err: what failed, nil when nothing did), records an Event when JobManagerReady or
// Updating changes its status, and stamps every condition with the generation.
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

// setHealth derives Ready, Reconciling and Stalled (see health) from the conditions set
// before it and what failed in this reconcile (err, nil when nothing did).
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

// setSavepointRequired records this reconcile's SavepointRequired stop, with a Warning Event
// when it starts or its reason changes.
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

// setWaiting records what this reconcile waits on. The condition keeps the time the wait
// began while its reason stays; past the wait bound its message says so, with a Warning Event
// once.
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

// setJobManagerReady derives JobManagerReady from the observed workload and pod, with an
// Event when its status changes.
func (c *cycle) setJobManagerReady() {
	kind := "Job"
	var replicas *int32
	if c.mode == v1beta1.JobManagerDeploymentTypeDeployment {
		kind = "Deployment"
		if d := c.obs.jmDeployment; d != nil {
			replicas = d.Spec.Replicas
		}
	}
	// The condition says it; no Event: a pod that becomes ready is nothing to act on, and a
	// job that does not run because of it says so by its own Events.
	c.setCondition(jobManagerReadyCondition(kind, c.obs.wl, replicas, c.obs.pod))
}

// updateStepf records the update flow's step for the Updating condition.
func (c *cycle) updateStepf(reason, format string, args ...any) {
	cond := condition(ConditionUpdating, metav1.ConditionTrue, reason, fmt.Sprintf(format, args...))
	c.out.updateStep = &cond
}

// deriveClusterState derives status.state from the job and what this reconcile observed.
func (c *cycle) deriveClusterState() {
	job := c.job()
	comps := state.Components{
		JobManager:     c.obs.wl != nil && !c.obs.wl.Deleting,
		TaskManager:    c.obs.tmExists,
		Service:        c.obs.serviceExists,
		ConfigMap:      c.obs.configMapExists,
		JobManagerPods: len(c.obs.pods),
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
