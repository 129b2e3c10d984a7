package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// update rolls the job to the next revision as PlanUpgrade and PlanRestore decide, again on
// every look: stop with a savepoint, replace the JobManager once none of it may still lead,
// deploy. Nothing confirming the job's newest state, it stops, the old JobManager untouched.
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
		c.out.lookAfter(c.now, u.Until)
		c.out.haltUpdate(waitCondition(ConditionReasonWaitingForUpgradableState, "job %s: %s", c.jobID(), u.Why))
		return nil
	}
	stopReported, done, err := c.driveUpdateStop(ctx, u)
	if done || err != nil {
		return err
	}
	if c.stopAgain(u) {
		return nil
	}
	if done, err := c.adoptNextDeploy(); done || err != nil {
		return err
	}

	switch u.How {
	case flinkcluster.UpgradeLastState:
		return c.lastStateUpdate(ctx, "upgradeMode last-state")
	case flinkcluster.UpgradeStateless:
		// Empty state on purpose: nothing to stop or confirm.
		return c.deployNextRevision(ctx, u, "")
	}
	if !stopReported && !c.confirmStopEnded() {
		return nil
	}
	switch r := c.planRestore(u); r.How {
	case flinkcluster.RestoreWait:
		c.out.lookAfter(c.now, r.Until)
		c.out.haltUpdate(waitCondition(restoreReasons[r.Reason], "%s", r.Why))
		return nil
	case flinkcluster.RestoreAsk:
		c.out.haltUpdate(savepointRequiredCondition(restoreReasons[r.Reason], "%s", r.Why))
		return nil
	case flinkcluster.RestoreLastState:
		return c.lastStateUpdate(ctx, r.Why)
	default:
		return c.deployNextRevision(ctx, u, r.From)
	}
}

// restoreReasons are the conditions' reasons of PlanRestore's waits and questions.
var restoreReasons = map[flinkcluster.RestoreReason]string{
	flinkcluster.WaitForFlinkAPI:      ConditionReasonWaitingForFlinkAPI,
	flinkcluster.WaitForLeader:        ConditionReasonWaitingForLeader,
	flinkcluster.AskHAMetadataMissing: ConditionReasonHAMetadataMissing,
	flinkcluster.AskNoFinalSavepoint:  ConditionReasonNoFinalSavepoint,
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

// finishSavepointInFlight finishes a savepoint in flight first: it may complete after the newest
// stored checkpoint, and a last-state redeploy would then restore the older checkpoint.
func (c *cycle) finishSavepointInFlight(ctx context.Context) (done bool, err error) {
	sp := c.st.Savepoint
	if !c.savepointInFlight() || sp.TriggerReason == SavepointReasonUpdate || sp.TriggerReason == SavepointReasonJobCancel {
		return false, nil
	}
	ph, err := c.driveSavepoint(ctx, &c.out.flowOut, false)
	if err != nil || ph != pending {
		return false, err
	}
	c.out.updateStepf(ConditionReasonStoppingWithSavepoint, "savepoint %s of job %s (%s) was in flight when the update began: its result first",
		sp.TriggerID, c.jobID(), sp.TriggerReason)
	return true, nil
}

// driveUpdateStop follows the update's stop-with-savepoint. stopReported: Flink reported it
// COMPLETED in this reconcile, which it does only once the job ended, after this observation.
func (c *cycle) driveUpdateStop(ctx context.Context, u flinkcluster.Upgrade) (stopReported, done bool, err error) {
	job, sp := c.job(), c.st.Savepoint
	if sp == nil || sp.TriggerReason != SavepointReasonUpdate || sp.JobID != job.ID ||
		(sp.State != SavepointStateRequested && sp.State != SavepointStateInProgress) {
		return false, false, nil
	}
	ph, err := c.driveSavepoint(ctx, &c.out.flowOut, true)
	if err != nil {
		return false, true, err
	}
	switch ph {
	case pending:
		c.out.updateStepf(ConditionReasonStoppingWithSavepoint, "stopping job %s with a savepoint to update to revision %s",
			job.ID, c.st.Revision.NextRevision)
		return false, true, nil
	case failed:
		if c.flinkReportsRunning() && !c.out.pastBound(c.now, u) {
			// The job still runs: try again rather than lose its state.
			msg := c.st.Savepoint.Message
			c.requestSavepoint(SavepointReasonUpdate)
			c.out.updateStepf(ConditionReasonStoppingWithSavepoint, "the savepoint failed (%s), the job still runs: stopping job %s with a savepoint again",
				msg, job.ID)
			c.poll()
			return false, true, nil
		}
	}
	return ph == succeeded && c.st.Savepoint.Message == "", false, nil
}

// stopAgain asks again, within the bound, for the stop of a job that runs now (Flink refuses one
// that is not RUNNING); it reports whether it did.
func (c *cycle) stopAgain(u flinkcluster.Upgrade) bool {
	job, sp := c.job(), c.st.Savepoint
	if !u.Stop || !c.flinkReportsRunning() || c.restoreChoice() != nil || c.restoresSpec() {
		return false
	}
	ours := sp != nil && sp.JobID == job.ID && sp.TriggerReason == SavepointReasonUpdate
	if ours && (sp.State != SavepointStateFailed || c.out.pastBound(c.now, u)) {
		return false
	}
	c.requestSavepoint(SavepointReasonUpdate)
	c.out.updateStepf(ConditionReasonStoppingWithSavepoint, "job %s runs: stopping it with a savepoint to update to revision %s", job.ID, c.st.Revision.NextRevision)
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
	c.out.updateStepf(ConditionReasonDeployingNextRevision, "the JobManager of revision %s exists", c.st.Revision.CurrentRevision)
	c.poll()
	return true, nil
}

// deployNextRevision deploys the next revision under a new job ID, from ("" for empty state).
func (c *cycle) deployNextRevision(ctx context.Context, u flinkcluster.Upgrade, from string) error {
	ready, err := replaceJobManager(ctx, c, c.flowIn(), &c.out.flowOut, false)
	if err != nil || !ready {
		return err
	}
	c.st.Revision.CurrentRevision = c.st.Revision.NextRevision
	// Recorded first (errRecordFirst), the deploy is created by the next reconcile.
	err = c.newDeploy(ctx, &c.out.flowOut, from)
	if err != nil && !errors.Is(err, errRecordFirst) {
		return fmt.Errorf("starting the next revision's deploy: %w", err)
	}
	if u.How == flinkcluster.UpgradeStateless {
		c.event(corev1.EventTypeWarning, ReasonStatelessRedeploy, "Deploy", "upgradeMode stateless: deployed revision %s as job %s from empty state, as asked",
			c.st.Revision.CurrentRevision, c.jobID())
		c.out.updateStepf(ConditionReasonDeployingNextRevision, "deploying revision %s as job %s from empty state (upgradeMode stateless)", c.st.Revision.CurrentRevision, c.jobID())
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
	c.out.updateStepf(ConditionReasonDeployingNextRevision, "deploying revision %s as job %s, restoring savepoint %s", c.st.Revision.CurrentRevision, c.jobID(), shown)
	return err
}

// updateReverted reports whether an update whose stop never took effect has nothing left to do
// (spec back, no restore chosen, the JobManager runs); never a redeployWithoutHA.
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

// confirmStopEnded reports whether the stop ended the job: one can take its savepoint and fail,
// and the restarted job builds state a replaced JobManager would lose. A job still listed is
// stopped again; while no trusted JobManager answers, the update waits.
func (c *cycle) confirmStopEnded() bool {
	job := c.job()
	if c.restoreChoice() != nil || !job.FinalSavepoint || job.SavepointLocation == "" {
		return true
	}
	if stopCompleted(c.st) {
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
			c.out.updateStepf(ConditionReasonStoppingWithSavepoint, "job %s still runs after its stop-with-savepoint: stopping it with a savepoint again", job.ID)
			c.poll()
			return false
		}
		c.out.haltUpdate(waitCondition(ConditionReasonWaitingForJobEnd, "job %s is %s after its stop-with-savepoint took %s: waiting until it runs (to stop it again) or ends",
			job.ID, f.Job.State, job.SavepointLocation))
		return false
	}
	if w := c.obs.wl; w == nil || w.Deleting || w.Complete || w.Failed {
		return true
	}
	for i := range c.obs.pods {
		if state.MayLead(&c.obs.pods[i], c.obs.ha.leader, c.now) {
			c.out.haltUpdate(waitCondition(ConditionReasonWaitingForJobEnd, "to confirm that job %s ended after its stop-with-savepoint before its JobManager is replaced: %s",
				job.ID, orNone(c.obs.untrusted)))
			return false
		}
	}
	return true
}

// specRestore is the savepoint fromSavepoint asks this update to restore (as the webhook reads it).
func (c *cycle) specRestore() (string, bool) {
	return flinkcluster.RevisionRestore(c.st, c.fc.Spec.Job)
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
