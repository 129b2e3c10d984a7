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
func update(ctx context.Context, a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus) (out flowOut, err error) {
	if updateReverted(in, st) {
		err = revertUpdate(a, in, st, &out)
		return out, err
	}
	if done, err := finishSavepointInFlight(ctx, a, st, &out); done || err != nil {
		return out, err
	}
	u := planUpdate(ctx, a, in, st)
	if st.Components.Job.State != v1beta1.JobStateUpdating {
		if err := startUpdate(a, in, st, u); err != nil {
			return out, fmt.Errorf("starting the update: %w", err)
		}
	}
	if u.How == flinkcluster.UpgradeWait {
		out.lookAfter(in.now, u.Until)
		out.haltUpdate(waitCondition(ConditionReasonWaitingForUpgradableState, "job %s: %s", st.Components.Job.ID, u.Why))
		return out, nil
	}
	stopReported, done, err := driveUpdateStop(ctx, a, in, st, &out, u)
	if done || err != nil {
		return out, err
	}
	if stopAgain(a, in, st, &out, u) {
		return out, nil
	}
	if done, err := adoptNextDeploy(a, in, st, &out); done || err != nil {
		return out, err
	}

	switch u.How {
	case flinkcluster.UpgradeLastState:
		err = lastStateUpdate(ctx, a, in, st, &out, "upgradeMode last-state")
		return out, err
	case flinkcluster.UpgradeStateless:
		// Empty state on purpose: nothing to stop or confirm.
		err = deployNextRevision(ctx, a, in, st, &out, u, "")
		return out, err
	}
	if !stopReported && !confirmStopEnded(a, in, st, &out) {
		return out, nil
	}
	switch r := in.planRestore(st, u); r.How {
	case flinkcluster.RestoreWait:
		out.lookAfter(in.now, r.Until)
		out.haltUpdate(waitCondition(restoreReasons[r.Reason], "%s", r.Why))
		return out, nil
	case flinkcluster.RestoreAsk:
		out.haltUpdate(savepointRequiredCondition(restoreReasons[r.Reason], "%s", r.Why))
		return out, nil
	case flinkcluster.RestoreLastState:
		err = lastStateUpdate(ctx, a, in, st, &out, r.Why)
		return out, err
	default:
		err = deployNextRevision(ctx, a, in, st, &out, u, r.From)
		return out, err
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
func revertUpdate(a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus, out *flowOut) error {
	ev := state.EventSpecReverted
	if flinkReportsRunning(in.obs) {
		ev = state.EventSpecRevertedRunning
	}
	if err := a.setJobState(ev, "", "the spec is back at the running revision "+st.Revision.CurrentRevision, in.now); err != nil {
		return fmt.Errorf("recording the reverted update: %w", err)
	}
	replaceSavepointRecord(st, nil)
	out.lookAgain()
	return nil
}

// finishSavepointInFlight finishes a savepoint in flight first: it may complete after the newest
// stored checkpoint, and a last-state redeploy would then restore the older checkpoint.
func finishSavepointInFlight(ctx context.Context, a flowActs, st *v1beta1.FlinkClusterStatus, out *flowOut) (done bool, err error) {
	sp := st.Savepoint
	if !savepointInFlight(st) || sp.TriggerReason == SavepointReasonUpdate || sp.TriggerReason == SavepointReasonJobCancel {
		return false, nil
	}
	ph, err := a.driveSavepoint(ctx, out, false)
	if err != nil || ph != pending {
		return false, err
	}
	out.updateStepf(ConditionReasonStoppingWithSavepoint, "savepoint %s of job %s (%s) was in flight when the update began: its result first",
		sp.TriggerID, st.Components.Job.ID, sp.TriggerReason)
	return true, nil
}

// driveUpdateStop follows the update's stop-with-savepoint. stopReported: Flink reported it
// COMPLETED in this reconcile, which it does only once the job ended, after this observation.
func driveUpdateStop(ctx context.Context, a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus, out *flowOut, u flinkcluster.Upgrade) (stopReported, done bool, err error) {
	job, sp := st.Components.Job, st.Savepoint
	if sp == nil || sp.TriggerReason != SavepointReasonUpdate || sp.JobID != job.ID ||
		(sp.State != SavepointStateRequested && sp.State != SavepointStateInProgress) {
		return false, false, nil
	}
	ph, err := a.driveSavepoint(ctx, out, true)
	if err != nil {
		return false, true, err
	}
	switch ph {
	case pending:
		out.updateStepf(ConditionReasonStoppingWithSavepoint, "stopping job %s with a savepoint to update to revision %s",
			job.ID, st.Revision.NextRevision)
		return false, true, nil
	case failed:
		if flinkReportsRunning(in.obs) && !out.pastBound(in.now, u) {
			// The job still runs: try again rather than lose its state.
			msg := st.Savepoint.Message
			a.requestSavepoint(SavepointReasonUpdate)
			out.updateStepf(ConditionReasonStoppingWithSavepoint, "the savepoint failed (%s), the job still runs: stopping job %s with a savepoint again",
				msg, job.ID)
			out.lookAgain()
			return false, true, nil
		}
	}
	return ph == succeeded && st.Savepoint.Message == "", false, nil
}

// stopAgain asks again, within the bound, for the stop of a job that runs now (Flink refuses one
// that is not RUNNING); it reports whether it did.
func stopAgain(a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus, out *flowOut, u flinkcluster.Upgrade) bool {
	job, sp := st.Components.Job, st.Savepoint
	if !u.Stop || !flinkReportsRunning(in.obs) || in.restoreChoice() != nil {
		return false
	}
	ours := sp != nil && sp.JobID == job.ID && sp.TriggerReason == SavepointReasonUpdate
	if ours && (sp.State != SavepointStateFailed || out.pastBound(in.now, u)) {
		return false
	}
	a.requestSavepoint(SavepointReasonUpdate)
	out.updateStepf(ConditionReasonStoppingWithSavepoint, "job %s runs: stopping it with a savepoint to update to revision %s", job.ID, st.Revision.NextRevision)
	out.lookAgain()
	return true
}

// adoptNextDeploy adopts the next deploy's workload created by a reconcile whose record failed.
func adoptNextDeploy(a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus, out *flowOut) (done bool, err error) {
	job := st.Components.Job
	if in.obs.wl == nil || in.obs.wl.Deleting || in.obs.wl.Revision != st.Revision.NextRevision ||
		in.obs.wl.JobID != job.ID || job.State != v1beta1.JobStatePending {
		return false, nil
	}
	st.Revision.CurrentRevision = st.Revision.NextRevision
	if err := a.setJobState(state.EventNextJobManagerExists, "", "next revision's JobManager exists", in.now); err != nil {
		return true, fmt.Errorf("recording the adopted next deploy: %w", err)
	}
	out.updateStepf(ConditionReasonDeployingNextRevision, "the JobManager of revision %s exists", st.Revision.CurrentRevision)
	out.lookAgain()
	return true, nil
}

// deployNextRevision deploys the next revision under a new job ID, from ("" for empty state).
func deployNextRevision(ctx context.Context, a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus, out *flowOut, u flinkcluster.Upgrade, from string) error {
	ready, err := replaceJobManager(ctx, a, in, out, false)
	if err != nil || !ready {
		return err
	}
	st.Revision.CurrentRevision = st.Revision.NextRevision
	// Recorded first (errRecordFirst), the deploy is created by the next reconcile.
	err = a.newDeploy(ctx, out, from)
	if err != nil && !errors.Is(err, errRecordFirst) {
		return fmt.Errorf("starting the next revision's deploy: %w", err)
	}
	if u.How == flinkcluster.UpgradeStateless {
		a.event(corev1.EventTypeWarning, ReasonStatelessRedeploy, "Deploy", "upgradeMode stateless: deployed revision %s as job %s from empty state, as asked",
			st.Revision.CurrentRevision, st.Components.Job.ID)
		out.updateStepf(ConditionReasonDeployingNextRevision, "deploying revision %s as job %s from empty state (upgradeMode stateless)", st.Revision.CurrentRevision, st.Components.Job.ID)
		return err
	}
	if in.restoreChoice() != nil {
		// Recorded first, the answer is removed once the JobManager is created (createJobManager).
		out.removeRestore = err == nil
		a.event(corev1.EventTypeWarning, ReasonRestoreAccepted, "Deploy", "deployed job %s from %s, as annotated (%s)", st.Components.Job.ID, orNone(from), RestoreAnnotation)
	} else if _, ok := flinkcluster.RevisionRestore(st, in.fc.Spec.Job); ok {
		a.event(corev1.EventTypeNormal, ReasonRestoreAccepted, "Deploy", "deployed job %s from %s, as spec.job.fromSavepoint names it", st.Components.Job.ID, from)
	}
	shown := from
	if shown == "" {
		shown = "none"
	}
	out.updateStepf(ConditionReasonDeployingNextRevision, "deploying revision %s as job %s, restoring savepoint %s", st.Revision.CurrentRevision, st.Components.Job.ID, shown)
	return err
}

// updateReverted reports whether an update whose stop never took effect has nothing left to do
// (spec back, no restore chosen, the JobManager runs); never a redeployWithoutHA.
func updateReverted(in flowIn, st *v1beta1.FlinkClusterStatus) bool {
	job := st.Components.Job
	if job.State != v1beta1.JobStateUpdating || st.Revision.CurrentRevision != st.Revision.NextRevision || in.restoreChoice() != nil ||
		redeployingWithoutHA(st) {
		return false
	}
	if in.obs.wl == nil || in.obs.wl.Deleting || in.obs.wl.JobID != job.ID {
		return false
	}
	sp := st.Savepoint
	return sp == nil || sp.JobID != job.ID || sp.TriggerReason != SavepointReasonUpdate || sp.State == SavepointStateFailed ||
		(sp.State == SavepointStateRequested && sp.TriggerTime == "")
}

// startUpdate moves the job to Updating and asks for its final savepoint when u stops it.
func startUpdate(a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus, u flinkcluster.Upgrade) error {
	job := st.Components.Job
	prev := job.State
	if ctl := st.Control; controlInFlight(ctl) && ctl.Name == v1beta1.ControlNameSavepoint {
		a.controlDone(v1beta1.ControlStateFailed, "superseded by an update")
	}
	if st.Revision.CurrentRevision != st.Revision.NextRevision {
		a.event(corev1.EventTypeNormal, ReasonUpdateStarted, "Update", "spec changed: updating from revision %s to %s",
			st.Revision.CurrentRevision, st.Revision.NextRevision)
	} else {
		a.event(corev1.EventTypeNormal, ReasonUpdateStarted, "Update", "redeploying revision %s as annotated (%s)",
			st.Revision.CurrentRevision, RestoreAnnotation)
	}
	if flinkcluster.Terminal(prev) {
		// A job that ended: its end says what the next deploy restores.
		return nil
	}
	if err := a.setJobState(state.EventSpecChanged, "", fmt.Sprintf("was %s", prev), in.now); err != nil {
		return fmt.Errorf("recording the update's start: %w", err)
	}
	if prev == v1beta1.JobStateRunning && u.Stop && in.obs.wl != nil && in.restoreChoice() == nil {
		a.requestSavepoint(SavepointReasonUpdate)
	}
	return nil
}

func flinkReportsRunning(obs observed) bool {
	return obs.flink != nil && obs.flink.Job != nil && obs.flink.Job.State == flinkclient.JobStateRunning
}

// confirmStopEnded reports whether the stop ended the job: one can take its savepoint and fail,
// and the restarted job builds state a replaced JobManager would lose. A job still listed is
// stopped again; while no trusted JobManager answers, the update waits.
func confirmStopEnded(a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus, out *flowOut) bool {
	job := st.Components.Job
	if in.restoreChoice() != nil || !job.FinalSavepoint || job.SavepointLocation == "" {
		return true
	}
	if stopCompleted(st) {
		// Checked later, the scaled-away old JobManager answers no more and would hold the update.
		return true
	}
	if f := in.obs.flink; f != nil {
		if f.Job == nil || f.Job.ID != job.ID || flinkclient.IsTerminalJobState(f.Job.State) {
			return true
		}
		if f.Job.State == flinkclient.JobStateRunning {
			// The savepoint holds the job's state at the stop, not its state now.
			job.FinalSavepoint = false
			a.event(corev1.EventTypeWarning, ReasonSavepointFailed, "Update",
				"the stop-with-savepoint of job %s took %s but did not end the job (Flink reports it %s): stopping it again",
				job.ID, job.SavepointLocation, f.Job.State)
			a.requestSavepoint(SavepointReasonUpdate)
			out.updateStepf(ConditionReasonStoppingWithSavepoint, "job %s still runs after its stop-with-savepoint: stopping it with a savepoint again", job.ID)
			out.lookAgain()
			return false
		}
		out.haltUpdate(waitCondition(ConditionReasonWaitingForJobEnd, "job %s is %s after its stop-with-savepoint took %s: waiting until it runs (to stop it again) or ends",
			job.ID, f.Job.State, job.SavepointLocation))
		return false
	}
	if w := in.obs.wl; w == nil || w.Deleting || w.Complete || w.Failed {
		return true
	}
	for i := range in.obs.pods {
		if state.MayLead(&in.obs.pods[i], in.obs.ha.leader, in.now) {
			out.haltUpdate(waitCondition(ConditionReasonWaitingForJobEnd, "to confirm that job %s ended after its stop-with-savepoint before its JobManager is replaced: %s",
				job.ID, orNone(in.obs.untrusted)))
			return false
		}
	}
	return true
}

// recordSpecFromSavepoint keeps specFromSavepoint at the running revision's fromSavepoint,
// which flinkcluster.RevisionRestore compares with.
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
