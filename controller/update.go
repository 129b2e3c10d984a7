package controller

import (
	"context"
	"errors"
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

// update rolls the job to the next revision: stop-with-savepoint, decide what the next deploy
// restores (stopping, old JobManager untouched, when nothing confirms the job's newest state),
// delete the old JobManager, wait until none of it may still lead, delete the HA ConfigMaps,
// deploy under a new job ID. The upgrade decision is made again on every look.
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
			return fmt.Errorf("starting the update: %w", err)
		}
	}
	if u.How == flinkcluster.UpgradeWait {
		if !c.updateTooLong() {
			c.haltUpdate(waitCondition(ConditionReasonWaitingForUpgradableState, "job %s: %s", c.jobID(), u.Why))
			return nil
		}
		// Waited past the bound: what the next deploy restores is restoreSource's to confirm.
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
			// The job cannot take a savepoint, and Flink's HA store holds its newest state.
			return c.lastStateUpdate(ctx, "fallback: the job does not run and has no final savepoint")
		}
	}
	return c.deployNextRevision(ctx, u, from)
}

// revertUpdate ends an update whose spec went back before anything was stopped.
func (c *cycle) revertUpdate() error {
	ev := state.EventSpecReverted
	if c.flinkReportsRunning() {
		ev = state.EventSpecRevertedRunning
	}
	if err := c.setJobState(ev, "", "the spec is back at the running revision "+c.st.Revision.CurrentRevision, c.now); err != nil {
		return fmt.Errorf("recording the reverted update: %w", err)
	}
	c.replaceSavepointRecord(nil)
	c.poll()
	return nil
}

// finishSavepointInFlight first finishes a savepoint in flight when the update began: it may
// complete after the newest stored checkpoint, and the stop's record must not replace it before
// its result is known (a last-state redeploy would restore the older checkpoint).
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

// driveUpdateStop follows the update's stop-with-savepoint. stopReported: Flink reported it
// COMPLETED in this reconcile, which it does only once the job ended, after this observation.
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

// stopAgain asks again for the stop of a job that runs now (Flink refuses a stop-with-savepoint
// of a job that is not RUNNING), within the update's bound; it reports whether it did.
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

// adoptNextDeploy adopts the next deploy's workload created by a reconcile whose record failed.
func (c *cycle) adoptNextDeploy() (done bool, err error) {
	job := c.job()
	if c.obs.wl == nil || c.obs.wl.Deleting || c.obs.wl.Revision != c.st.Revision.NextRevision ||
		c.obs.wl.JobID != job.ID || job.State != v1beta1.JobStatePending {
		return false, nil
	}
	c.st.Revision.CurrentRevision = c.st.Revision.NextRevision
	if err := c.setJobState(state.EventNextJobManagerExists, "", "next revision's JobManager exists", c.now); err != nil {
		return true, fmt.Errorf("recording the adopted next deploy: %w", err)
	}
	c.updateStepf(ConditionReasonDeployingNextRevision, "the JobManager of revision %s exists", c.st.Revision.CurrentRevision)
	c.poll()
	return true, nil
}

// deployNextRevision deploys the next revision under a new job ID, from ("" for empty state).
func (c *cycle) deployNextRevision(ctx context.Context, u flinkcluster.Upgrade, from string) error {
	ready, err := c.replaceJobManager(ctx, false)
	if err != nil || !ready {
		return err
	}
	c.st.Revision.CurrentRevision = c.st.Revision.NextRevision
	// Recorded first (errRecordFirst), the deploy is created by the next reconcile.
	err = c.newDeploy(ctx, from)
	if err != nil && !errors.Is(err, errRecordFirst) {
		return fmt.Errorf("starting the next revision's deploy: %w", err)
	}
	if u.How == flinkcluster.UpgradeStateless {
		c.event(corev1.EventTypeWarning, ReasonStatelessRedeploy, "Deploy", "upgradeMode stateless: deployed revision %s as job %s from empty state, as asked",
			c.st.Revision.CurrentRevision, c.jobID())
		c.updateStepf(ConditionReasonDeployingNextRevision, "deploying revision %s as job %s from empty state (upgradeMode stateless)", c.st.Revision.CurrentRevision, c.jobID())
		return err
	}
	if c.restoreChoice() != nil {
		// Recorded first, the answer is removed once the JobManager is created (createJobManager).
		c.out.removeRestore = err == nil
		c.event(corev1.EventTypeWarning, ReasonRestoreAccepted, "Deploy", "deployed job %s from %s, as annotated (%s)", c.jobID(), orNone(from), RestoreAnnotation)
	} else if c.restoresSpec() {
		c.event(corev1.EventTypeNormal, ReasonRestoreAccepted, "Deploy", "deployed job %s from %s, as spec.job.fromSavepoint names it", c.jobID(), from)
	}
	shown := from
	if shown == "" {
		shown = "none"
	}
	c.updateStepf(ConditionReasonDeployingNextRevision, "deploying revision %s as job %s, restoring savepoint %s", c.st.Revision.CurrentRevision, c.jobID(), shown)
	return err
}

// updateReverted reports whether an update whose stop never took effect has nothing left to
// do: spec back, no restore chosen, the JobManager still runs. A redeployWithoutHA is never
// reverted: the job cannot run on safely.
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

// updateTooLong reports whether the stop has lasted past the wait bound: the user is asked instead.
func (c *cycle) updateTooLong() bool {
	cond := meta.FindStatusCondition(c.st.Conditions, ConditionUpdating)
	return cond != nil && cond.Status == metav1.ConditionTrue && c.pastDeadline(cond.LastTransitionTime.Time, c.r.Options.WaitBound)
}

// startUpdate moves the job to Updating and asks for its final savepoint when u stops it.
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
		// A job that ended: its end says what the next deploy restores.
		return nil
	}
	if err := c.setJobState(state.EventSpecChanged, "", fmt.Sprintf("was %s", prev), c.now); err != nil {
		return fmt.Errorf("recording the update's start: %w", err)
	}
	if prev == v1beta1.JobStateRunning && u.Stop && c.obs.wl != nil && c.restoreChoice() == nil && !c.restoresSpec() {
		c.requestSavepoint(SavepointReasonUpdate)
	}
	return nil
}

func (c *cycle) flinkReportsRunning() bool {
	return c.obs.flink != nil && c.obs.flink.Job != nil && c.obs.flink.Job.State == flinkclient.JobStateRunning
}

// restoreSource decides what the next deploy restores; ok is false when nothing confirms that
// a savepoint holds the job's newest state, and the flow stops, leaving the old JobManager (and
// a running job) alone. In order: the user's answer; a savepoint fromSavepoint names anew; the
// final savepoint; for a deploy that never ran, what it restored; without an attempted stop, a
// savepoint fresh under maxStateAgeToRestoreSeconds (the user's standing acceptance).
// lastState: the next deploy restores Flink's HA store instead. halt is the wait or stop.
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
			// A last-state deploy restored the HA checkpoint store, which a deploy under the same job
			// ID restores again; once it is gone, or Flink's version changes, only the user can say.
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
	// The last-state fallback (as the Flink Kubernetes operator's): a job that does not run cannot
	// take a savepoint, but Flink's HA store holds its newest state.
	if !c.flinkReportsRunning() && flinkcluster.KeepsState(c.fc.Spec.Job) {
		switch ls := c.lastState(); {
		case (ls.ok || ls.newerSavepoint) && c.obs.flink == nil && len(c.mayLeadPods()) > 0:
			// No leader answered, but one may still run the job (a lost node's pod, until its lease
			// ends): remove no JobManager that may; wait, bounded. A leader that answers runs all jobs.
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

// jobRan reports whether the current deploy's job ever ran, and whether that is known. A
// JobManager that may be up but does not answer is unknown; one whose pods are gone counts as run.
func (c *cycle) jobRan() (ran, known bool) {
	job := c.job()
	sp := c.st.Savepoint
	if flinkcluster.Ran(job) || (job.ID != "" && c.obs.ha.jobGraphStored(job.ID)) ||
		(sp != nil && job.ID != "" && sp.JobID == job.ID && sp.TriggerTime != "") {
		// Seen running, submitted (graph in HA), or asked for a savepoint while RUNNING.
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
	case job.DeployTime == "" && (c.obs.wl == nil || c.obs.wl.JobID != job.ID):
		// A deploy recorded but never created (errRecordFirst), updated before its creation.
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
	// Nothing left says it did not run: taking it for "never ran" would redeploy from the
	// deploy's own restore point and rewind the job.
	return true, true
}

// savepointAgeAt is now for a job that may still run, its end for one that ended.
func (c *cycle) savepointAgeAt() time.Time {
	if job := c.job(); job.CompletionTime != nil {
		return job.CompletionTime.Time
	}
	return c.now
}

// confirmStopEnded checks, before the JobManager is replaced, that the stop whose savepoint is
// recorded ended the job: a stop can take its savepoint and fail, and the restarted job builds
// state that deleting the JobManager would lose. A job still listed is stopped again; while no
// trusted JobManager answers, the update waits. It reports whether the update may go on.
func (c *cycle) confirmStopEnded() bool {
	job := c.job()
	if c.restoreChoice() != nil || !job.FinalSavepoint || job.SavepointLocation == "" {
		return true
	}
	if c.stopCompleted() {
		// Checked later, the scaled-away old JobManager answers no more and would hold the update.
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

// specRestore is the savepoint fromSavepoint asks this update to restore
// (flinkcluster.UpdateRestore, the webhook's rule too, so that it admits no update this stops).
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

// recordSpecFromSavepoint keeps specFromSavepoint at the running revision's fromSavepoint,
// which specRestore compares with.
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
