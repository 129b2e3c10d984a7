package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// update rolls the job to the next revision (or redeploys it from the user's answer to a
// SavepointRequired stop): stop-with-savepoint, decide what the next deploy restores —
// stopping, with the old JobManager left alone, when nothing confirms it is the job's newest
// state — then delete the old JobManager, wait until no old JobManager may still lead,
// delete the HA ConfigMaps, and create the next deploy under a new job ID (Updating ->
// Pending -> Deploying). Each step either ends this reconcile's part of the update (done)
// or hands on to the next; the upgrade decision (planUpdate) is made again on every look.
func (c *cycle) update(ctx context.Context) error {
	if c.updateReverted() {
		return c.revertUpdate()
	}
	if done, err := c.finishSavepointInFlight(ctx); done || err != nil {
		return err
	}
	u := c.planUpdate(ctx)
	if c.job().State != v1beta1.JobStateUpdating {
		if err := c.startUpdate(u); err != nil {
			return err
		}
	}
	if u.How == flinkcluster.UpgradeWait {
		if !c.updateTooLong() {
			c.haltUpdate(waitCondition(ConditionReasonWaitingForUpgradableState, "job %s: %s", c.jobID(), u.Why))
			return nil
		}
		// Waited past the bound: the job cannot take a savepoint now, and what the next deploy
		// restores is restoreSource's to confirm (or the user's to answer).
		u.How = flinkcluster.UpgradeSavepoint
	}
	stopReported, done, err := c.driveUpdateStop(ctx)
	if done || err != nil {
		return err
	}
	if c.stopAgain(u) {
		return nil
	}
	if done, err := c.adoptNextDeploy(); done || err != nil {
		return err
	}

	from := ""
	switch u.How {
	case flinkcluster.UpgradeLastState:
		return c.lastStateUpdate(ctx, "upgradeMode last-state")
	case flinkcluster.UpgradeStateless:
		// Empty state on purpose: nothing to stop or confirm.
	default:
		if !stopReported && !c.confirmStopEnded() {
			return nil
		}
		var lastState bool
		var halt *metav1.Condition
		if from, lastState, halt = c.restoreSource(u); halt != nil {
			c.haltUpdate(halt)
			return nil
		}
		if lastState {
			// restoreSource's fallback: the job cannot take a savepoint, and Flink's HA store
			// holds its newest state.
			return c.lastStateUpdate(ctx, "fallback: the job does not run and has no final savepoint")
		}
	}
	return c.deployNextRevision(ctx, u, from)
}

// revertUpdate ends an update whose spec went back to the running revision before anything
// was torn down or stopped: the job runs on.
func (c *cycle) revertUpdate() error {
	ev := state.EventSpecReverted
	if c.flinkReportsRunning() {
		ev = state.EventSpecRevertedRunning
	}
	if err := c.setJobState(ev, "", "the spec is back at the running revision "+c.st.Revision.CurrentRevision, c.now); err != nil {
		return err
	}
	c.replaceSavepointRecord(nil)
	c.poll()
	return nil
}

// finishSavepointInFlight finishes first a savepoint of the job in flight when the update
// began (on request, on schedule, the user-control's): it may complete after the newest
// stored checkpoint, and the stop's record must not replace it before its result is known
// (lastState compares the two; a last-state redeploy would restore the older checkpoint).
// Its own wait is bounded and reported (WaitingForSavepoint).
func (c *cycle) finishSavepointInFlight(ctx context.Context) (done bool, err error) {
	sp := c.st.Savepoint
	if !c.savepointInFlight() || sp.TriggerReason == SavepointReasonUpdate || sp.TriggerReason == SavepointReasonJobCancel {
		return false, nil
	}
	ph, err := c.driveSavepoint(ctx, false)
	if err != nil || ph != pending {
		return false, err
	}
	c.updateStepf(ConditionReasonStoppingWithSavepoint, "savepoint %s of job %s (%s) was in flight when the update began: its result first",
		sp.TriggerID, c.jobID(), sp.TriggerReason)
	return true, nil
}

// driveUpdateStop follows the update's stop-with-savepoint in flight. stopReported is set
// when Flink reported it COMPLETED in this reconcile: Flink completes that operation once the
// job ended, and this reconcile's observation of the job predates it. A stop that failed
// while the job still runs is asked again, within the update's bound.
func (c *cycle) driveUpdateStop(ctx context.Context) (stopReported, done bool, err error) {
	job, sp := c.job(), c.st.Savepoint
	if sp == nil || sp.TriggerReason != SavepointReasonUpdate || sp.JobID != job.ID ||
		(sp.State != SavepointStateRequested && sp.State != SavepointStateInProgress) {
		return false, false, nil
	}
	ph, err := c.driveSavepoint(ctx, true)
	if err != nil {
		return false, true, err
	}
	switch ph {
	case pending:
		c.updateStepf(ConditionReasonStoppingWithSavepoint, "stopping job %s with a savepoint to update to revision %s",
			job.ID, c.st.Revision.NextRevision)
		return false, true, nil
	case failed:
		if c.flinkReportsRunning() && !c.updateTooLong() {
			// The job still runs: try again rather than lose its state.
			msg := c.st.Savepoint.Message
			c.requestSavepoint(SavepointReasonUpdate)
			c.updateStepf(ConditionReasonStoppingWithSavepoint, "the savepoint failed (%s), the job still runs: stopping job %s with a savepoint again",
				msg, job.ID)
			c.poll()
			return false, true, nil
		}
	}
	return ph == succeeded && c.st.Savepoint.Message == "", false, nil
}

// stopAgain asks for the update's stop-with-savepoint of a job that runs now: one that was
// deploying, or restarting, when the update began, or whose earlier stop failed while it did
// not run (Flink refuses a stop-with-savepoint of a job that is not RUNNING), within the
// update's bound. It reports whether it did.
func (c *cycle) stopAgain(u flinkcluster.Upgrade) bool {
	job, sp := c.job(), c.st.Savepoint
	if !u.Stop || !c.flinkReportsRunning() || c.restoreChoice() != nil || c.restoresSpec() {
		return false
	}
	ours := sp != nil && sp.JobID == job.ID && sp.TriggerReason == SavepointReasonUpdate
	if ours && (sp.State != SavepointStateFailed || c.updateTooLong()) {
		return false
	}
	c.requestSavepoint(SavepointReasonUpdate)
	c.updateStepf(ConditionReasonStoppingWithSavepoint, "job %s runs: stopping it with a savepoint to update to revision %s", job.ID, c.st.Revision.NextRevision)
	c.poll()
	return true
}

// adoptNextDeploy adopts the next deploy's workload when it exists already: it was created,
// but recording that failed. It is adopted rather than restarted.
func (c *cycle) adoptNextDeploy() (done bool, err error) {
	job := c.job()
	if c.obs.wl == nil || c.obs.wl.Deleting || c.obs.wl.Revision != c.st.Revision.NextRevision ||
		c.obs.wl.JobID != job.ID || job.State != v1beta1.JobStatePending {
		return false, nil
	}
	c.st.Revision.CurrentRevision = c.st.Revision.NextRevision
	if err := c.setJobState(state.EventNextJobManagerExists, "", "next revision's JobManager exists", c.now); err != nil {
		return true, err
	}
	c.updateStepf(ConditionReasonDeployingNextRevision, "the JobManager of revision %s exists", c.st.Revision.CurrentRevision)
	c.poll()
	return true, nil
}

// deployNextRevision replaces the JobManager and deploys the next revision under a new job
// ID, restoring from ("" for empty state).
func (c *cycle) deployNextRevision(ctx context.Context, u flinkcluster.Upgrade, from string) error {
	ready, err := c.replaceJobManager(ctx, false)
	if err != nil || !ready {
		return err
	}
	c.st.Revision.CurrentRevision = c.st.Revision.NextRevision
	if err := c.newDeploy(ctx, from); err != nil {
		return err
	}
	if u.How == flinkcluster.UpgradeStateless {
		c.event(corev1.EventTypeWarning, ReasonStatelessRedeploy, "Deploy", "upgradeMode stateless: deployed revision %s as job %s from empty state, as asked",
			c.st.Revision.CurrentRevision, c.jobID())
		c.updateStepf(ConditionReasonDeployingNextRevision, "deploying revision %s as job %s from empty state (upgradeMode stateless)", c.st.Revision.CurrentRevision, c.jobID())
		return nil
	}
	if c.restoreChoice() != nil {
		c.out.removeRestore = true
		c.event(corev1.EventTypeWarning, ReasonRestoreAccepted, "Deploy", "deployed job %s from %s, as annotated (%s)", c.jobID(), orNone(from), RestoreAnnotation)
	} else if c.restoresSpec() {
		c.event(corev1.EventTypeNormal, ReasonRestoreAccepted, "Deploy", "deployed job %s from %s, as spec.job.fromSavepoint names it", c.jobID(), from)
	}
	shown := from
	if shown == "" {
		shown = "none"
	}
	c.updateStepf(ConditionReasonDeployingNextRevision, "deploying revision %s as job %s, restoring savepoint %s", c.st.Revision.CurrentRevision, c.jobID(), shown)
	return nil
}

// updateReverted reports whether an update whose stop never took effect has nothing left to
// do: the spec is back at the current revision, the user chose no restore, and the current
// deploy's JobManager still runs — no stop-with-savepoint of it was made, or the one made
// failed (the job kept running). A redeploy for HA metadata deleted behind the job
// (redeployWithoutHA) changed no spec and is never reverted: the job cannot run on safely.
func (c *cycle) updateReverted() bool {
	job := c.job()
	if job.State != v1beta1.JobStateUpdating || c.st.Revision.CurrentRevision != c.st.Revision.NextRevision || c.restoreChoice() != nil ||
		c.redeployingWithoutHA() {
		return false
	}
	if c.obs.wl == nil || c.obs.wl.Deleting || c.obs.wl.JobID != job.ID {
		return false
	}
	sp := c.st.Savepoint
	return sp == nil || sp.JobID != job.ID || sp.TriggerReason != SavepointReasonUpdate || sp.State == SavepointStateFailed ||
		(sp.State == SavepointStateRequested && sp.TriggerTime == "")
}

// updateTooLong reports whether the update has been stopping the job for longer than the
// wait bound: it then stops asking Flink and asks the user (the job keeps running).
func (c *cycle) updateTooLong() bool {
	cond := meta.FindStatusCondition(c.st.Conditions, ConditionUpdating)
	return cond != nil && cond.Status == metav1.ConditionTrue && c.pastDeadline(cond.LastTransitionTime.Time, c.r.Options.WaitBound)
}

// startUpdate moves the job to Updating and, when it runs and u stops it, asks for its final
// savepoint.
func (c *cycle) startUpdate(u flinkcluster.Upgrade) error {
	job := c.job()
	prev := job.State
	if ctl := c.st.Control; controlInFlight(ctl) && ctl.Name == v1beta1.ControlNameSavepoint {
		c.controlDone(v1beta1.ControlStateFailed, "superseded by an update")
	}
	if c.st.Revision.CurrentRevision != c.st.Revision.NextRevision {
		c.event(corev1.EventTypeNormal, ReasonUpdateStarted, "Update", "spec changed: updating from revision %s to %s",
			c.st.Revision.CurrentRevision, c.st.Revision.NextRevision)
	} else {
		c.event(corev1.EventTypeNormal, ReasonUpdateStarted, "Update", "redeploying revision %s as annotated (%s)",
			c.st.Revision.CurrentRevision, RestoreAnnotation)
	}
	if flinkcluster.Terminal(prev) {
		// A job that ended: nothing to stop, and its end says what the next deploy restores
		// (a deploy that failed to deploy never ran; one that ended otherwise may have).
		return nil
	}
	if err := c.setJobState(state.EventSpecChanged, "", fmt.Sprintf("was %s", prev), c.now); err != nil {
		return err
	}
	if prev == v1beta1.JobStateRunning && u.Stop && c.obs.wl != nil && c.restoreChoice() == nil && !c.restoresSpec() {
		c.requestSavepoint(SavepointReasonUpdate)
	}
	return nil
}

func (c *cycle) flinkReportsRunning() bool {
	return c.obs.flink != nil && c.obs.flink.Job != nil && c.obs.flink.Job.State == flinkclient.JobStateRunning
}

// restoreSource decides what the next deploy restores. ok is false when nothing confirms
// that a savepoint holds the job's newest state: the flow then stops (SavepointRequired) and
// leaves the old JobManager — and the job, if it runs — alone. In order:
//   - the user's answer (RestoreAnnotation): a savepoint path, or empty state;
//   - a savepoint spec.job.fromSavepoint names anew (specRestore: the operator's rule, as
//     the webhook admits the update by it);
//   - the final savepoint of the current deploy's job;
//   - for a deploy that never ran its job: what that deploy restored (nothing is newer);
//   - when no stop-with-savepoint was attempted (takeSavepointOnUpdate false, or the job was
//     not running), a savepoint fresh under maxStateAgeToRestoreSeconds: the user's standing
//     acceptance (flinkcluster.SavepointFresh, as the webhook's update rule judges it).
//
// lastState is set when the next deploy restores Flink's HA store instead (the last-state
// fallback, where u.NoLastState allows it). halt, when set, is the wait or the
// SavepointRequired stop the update halts on.
func (c *cycle) restoreSource(u flinkcluster.Upgrade) (from string, lastState bool, halt *metav1.Condition) {
	job := c.job()
	if choice := c.restoreChoice(); choice != nil {
		return *choice, false, nil
	}
	if from, ok := c.specRestore(); ok {
		return from, false, nil
	}
	if job.FinalSavepoint && job.SavepointLocation != "" {
		return job.SavepointLocation, false, nil
	}
	switch ran, known := c.jobRan(); {
	case !known && !c.updateTooLong():
		return "", false, waitCondition(ConditionReasonWaitingForFlinkAPI, "to learn whether job %s ran before choosing what the next deploy restores: %s", job.ID, c.obs.untrusted)
	case known && !ran:
		if job.ID == "" && c.fc.Spec.Job.FromSavepoint != nil {
			return *c.fc.Spec.Job.FromSavepoint, false, nil
		}
		if ls := c.lastState(); job.FromCheckpoint || ls.ok {
			// The deploy restored the checkpoint store that Flink's HA store keeps for the job
			// ID (a last-state deploy): a deploy under the same job ID restores it again. Once
			// the store is gone, or the next deploy runs another Flink version, nothing but the
			// user says what the job's newest state is.
			if ls.ok && u.NoLastState == "" {
				return "", true, nil
			}
			if job.FromCheckpoint {
				why := ls.why
				if u.NoLastState != "" {
					why = u.NoLastState
				}
				return "", false, savepointRequiredCondition(ConditionReasonHAMetadataMissing, "last-state deploy of job %s never ran, and its checkpoints in Flink's HA store cannot be restored (%s): the controller deploys nothing that would rewind the job",
					job.ID, why)
			}
		}
		return job.FromSavepoint, false, nil
	}
	sp := c.st.Savepoint
	stopAttempted := sp != nil && sp.JobID == job.ID && sp.TriggerReason == SavepointReasonUpdate
	if !stopAttempted && job.SavepointLocation != "" && flinkcluster.SavepointFresh(job, c.fc.Spec.Job, c.savepointAgeAt()) {
		return job.SavepointLocation, false, nil
	}
	noLastState := u.NoLastState
	// The last-state fallback (the Flink Kubernetes operator's last-state-fallback, on by
	// default): a job that does not run cannot take a savepoint, but Flink's HA store holds
	// its newest state — its newest checkpoint, or a savepoint newer than every stored one.
	if !c.flinkReportsRunning() && flinkcluster.KeepsState(c.fc.Spec.Job) {
		switch ls := c.lastState(); {
		case (ls.ok || ls.newerSavepoint) && c.obs.flink == nil && len(c.mayLeadPods()) > 0:
			// No JobManager answered as the leader, but one may still run the job (a lost
			// node's pod leading until its lease ends): the fallback removes no JobManager
			// that may still run the job; it waits, bounded by Waiting. A leader that answers
			// and does not list the job running runs it nowhere (only the leader runs jobs),
			// as the upgrade decision reads it too (UpgradeObservation.MayStillRun).
			return "", false, waitCondition(ConditionReasonWaitingForLeader, "job %s may still run on JobManager pod(s) %s: the last-state fallback waits until none may lead",
				job.ID, podNames(c.mayLeadPods()))
		case ls.ok && noLastState == "":
			return "", true, nil
		case ls.newerSavepoint:
			return job.SavepointLocation, false, nil
		case noLastState == "":
			noLastState = ls.why
		}
	}
	why := fmt.Sprintf("job %s has no confirmed final savepoint", job.ID)
	if sp != nil && sp.JobID == job.ID && sp.Message != "" {
		why += " (" + sp.Message + ")"
	}
	if job.SavepointLocation != "" {
		why += fmt.Sprintf("; its last known savepoint %s may be older than its state", job.SavepointLocation)
	}
	if noLastState != "" {
		why += "; no last-state redeploy: " + noLastState
	}
	return "", false, savepointRequiredCondition(ConditionReasonNoFinalSavepoint, "%s: the controller deploys nothing that would rewind the job", why)
}

// jobRan reports whether the current deploy's job ever ran, and whether that is known: the
// controller saw it run, or Flink (the leader) lists it past its start; a deploy whose
// JobManager may still be up but does not answer is unknown — it may have run meanwhile;
// one whose JobManagers are gone, unobserved, is taken as run.
func (c *cycle) jobRan() (ran, known bool) {
	job := c.job()
	sp := c.st.Savepoint
	if flinkcluster.Ran(job) || (job.ID != "" && c.obs.ha.jobGraphStored(job.ID)) ||
		(sp != nil && job.ID != "" && sp.JobID == job.ID && sp.TriggerTime != "") {
		// Seen running, submitted (its graph is in the HA store), or asked for a savepoint
		// while Flink reported it RUNNING.
		return true, true
	}
	if f := c.obs.flink; f != nil {
		if j := f.Job; j != nil && j.State != flinkclient.JobStateInitializing && j.State != flinkclient.JobStateCreated {
			return true, true
		}
		return false, true
	}
	switch {
	case job.State == v1beta1.JobStatePending || job.State == v1beta1.JobStateDeployFailed:
		return false, true
	case flinkcluster.Terminal(job.State):
		// Ended unobserved (cancelled or failed while deploying): it may have run.
		return true, true
	}
	for i := range c.obs.pods {
		if state.MayLead(&c.obs.pods[i], c.obs.ha.leader, c.now) {
			return false, false
		}
	}
	// No JobManager may lead and none answered: the deploy's JobManager may have run the job
	// and ended it unobserved, with Flink then removing its job graph — and its pods may be
	// gone too (a deleted workload), so nothing left says it did not. Taking that for "never
	// ran" would redeploy from the deploy's own restore point and rewind the job; only a
	// confirmed savepoint, or the user, may choose.
	return true, true
}

// savepointAgeAt is when a savepoint's age is judged: now for a job that may still run, the
// job's end for one that ended.
func (c *cycle) savepointAgeAt() time.Time {
	if job := c.job(); job.CompletionTime != nil {
		return job.CompletionTime.Time
	}
	return c.now
}

// confirmStopEnded checks, before the JobManager is replaced, that the stop-with-savepoint
// recorded as the job's final savepoint ended the job. A stop can take its savepoint and
// still fail to end the job, which Flink's restart strategy then restarts (the operation
// fails, but when its result expired the savepoint may have been recovered from the
// checkpoint statistics): deleting the JobManager then would lose the state the job built
// since. A job the leader lists as not globally terminal is stopped again; while no trusted
// JobManager answers and one may still run it, the update waits. It reports whether the
// update may go on. A stop that Flink itself reported COMPLETED in this reconcile needs no
// check (update skips it): the operation completes once the job ended.
func (c *cycle) confirmStopEnded() bool {
	job := c.job()
	if c.restoreChoice() != nil || !job.FinalSavepoint || job.SavepointLocation == "" {
		return true
	}
	if c.stopCompleted() {
		// Checked again later, the old JobManager, scaled away, answers no more and would
		// hold the update until it is gone.
		return true
	}
	if f := c.obs.flink; f != nil {
		if f.Job == nil || f.Job.ID != job.ID || flinkclient.IsTerminalJobState(f.Job.State) {
			return true
		}
		if f.Job.State == flinkclient.JobStateRunning {
			// The savepoint holds the job's state at the stop, not its state now.
			job.FinalSavepoint = false
			c.event(corev1.EventTypeWarning, ReasonSavepointFailed, "Update",
				"the stop-with-savepoint of job %s took %s but did not end the job (Flink reports it %s): stopping it again",
				job.ID, job.SavepointLocation, f.Job.State)
			c.requestSavepoint(SavepointReasonUpdate)
			c.updateStepf(ConditionReasonStoppingWithSavepoint, "job %s still runs after its stop-with-savepoint: stopping it with a savepoint again", job.ID)
			c.poll()
			return false
		}
		c.haltUpdate(waitCondition(ConditionReasonWaitingForJobEnd, "job %s is %s after its stop-with-savepoint took %s: waiting until it runs (to stop it again) or ends",
			job.ID, f.Job.State, job.SavepointLocation))
		return false
	}
	if w := c.obs.wl; w == nil || w.Deleting || w.Complete || w.Failed {
		return true
	}
	for i := range c.obs.pods {
		if state.MayLead(&c.obs.pods[i], c.obs.ha.leader, c.now) {
			c.haltUpdate(waitCondition(ConditionReasonWaitingForJobEnd, "to confirm that job %s ended after its stop-with-savepoint before its JobManager is replaced: %s",
				job.ID, orNone(c.obs.untrusted)))
			return false
		}
	}
	return true
}

// specRestore is the savepoint spec.job.fromSavepoint asks this update to restore: on a
// revision change, one other than the running revision's (flinkcluster.UpdateRestore, which
// the webhook's update rule decides by too, so that it admits no update this then stops).
// As with the flink-on-k8s-operator, the update then takes no savepoint of the running job.
func (c *cycle) specRestore() (string, bool) {
	if c.st.Revision.CurrentRevision == c.st.Revision.NextRevision {
		return "", false
	}
	return flinkcluster.UpdateRestore(c.job(), c.fc.Spec.Job)
}

func (c *cycle) restoresSpec() bool {
	_, ok := c.specRestore()
	return ok
}

// recordSpecFromSavepoint keeps status.components.job.specFromSavepoint at the running
// revision's spec.job.fromSavepoint: while no update is pending the spec is that revision's.
// An update compares the new spec's fromSavepoint with it (specRestore).
func (c *cycle) recordSpecFromSavepoint() {
	if c.updatePending() || c.st.Revision.CurrentRevision != c.st.Revision.NextRevision {
		return
	}
	v := ""
	if j := c.fc.Spec.Job; j != nil && j.FromSavepoint != nil {
		v = strings.TrimSpace(*j.FromSavepoint)
	}
	c.job().SpecFromSavepoint = v
}
