package flinkcluster

import (
	"fmt"
	"strings"
	"time"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// RestoreAnnotation answers the SavepointRequired condition: it names what the next deploy
// restores, a savepoint path or RestoreEmptyState.
const RestoreAnnotation = "flinkclusters.flinkoperator.k8s.io/restore-from"

// RestoreEmptyState as the RestoreAnnotation's value starts the next deploy without state.
const RestoreEmptyState = "empty-state"

// RestoreChoice is the savepoint the RestoreAnnotation names ("" for empty state), nil without it.
func RestoreChoice(annotations map[string]string) *string {
	v, ok := annotations[RestoreAnnotation]
	if !ok {
		return nil
	}
	choice := v
	if choice == RestoreEmptyState {
		choice = ""
	}
	return &choice
}

// RestoreHow is what the next deploy of a savepoint upgrade restores, or why none is made yet.
type RestoreHow string

const (
	// RestoreSavepoint deploys from Restore.From ("" for empty state).
	RestoreSavepoint RestoreHow = "Savepoint"
	// RestoreLastState redeploys under the same job ID from Flink's HA store (the fallback).
	RestoreLastState RestoreHow = "LastState"
	// RestoreWait deploys nothing yet: it waits for what may still change the answer.
	RestoreWait RestoreHow = "Wait"
	// RestoreAsk deploys nothing: only the user can say what to restore (RestoreAnnotation).
	RestoreAsk RestoreHow = "Ask"
)

// RestoreReason names what a RestoreWait waits for, or what a RestoreAsk misses.
type RestoreReason string

const (
	// WaitForFlinkAPI: whether the job ran is unknown while no trusted JobManager answers.
	WaitForFlinkAPI RestoreReason = "FlinkAPI"
	// WaitForLeader: a JobManager may still run the job, and none answers.
	WaitForLeader RestoreReason = "Leader"
	// AskHAMetadataMissing: a last-state deploy never ran, and its checkpoints cannot be restored.
	AskHAMetadataMissing RestoreReason = "HAMetadataMissing"
	// AskNoFinalSavepoint: the job has no confirmed final savepoint and no fallback.
	AskNoFinalSavepoint RestoreReason = "NoFinalSavepoint"
)

// Restore is what PlanRestore decided.
type Restore struct {
	How RestoreHow
	// From is the savepoint a RestoreSavepoint deploys from ("" for empty state).
	From string
	// Reason is set for a RestoreWait or a RestoreAsk, and Why says it to the user.
	Reason RestoreReason
	Why    string
	// Until is when a wait's bound passes; zero when the wait has no bound of its own.
	Until time.Time
}

func restoreFrom(path string) Restore { return Restore{How: RestoreSavepoint, From: path} }

func restoreLastState() Restore {
	return Restore{How: RestoreLastState, Why: "fallback: the job does not run and has no final savepoint"}
}

func restoreWait(reason RestoreReason, until time.Time, why string) Restore {
	return Restore{How: RestoreWait, Reason: reason, Why: why, Until: until}
}

func restoreAsk(reason RestoreReason, why string) Restore {
	return Restore{How: RestoreAsk, Reason: reason, Why: why + ": the controller deploys nothing that would rewind the job"}
}

// PlanRestore decides what the next deploy of the savepoint upgrade u restores, from the status
// its stop left (recorded in the reconcile that deploys). What may rewind the job is restored
// only as the user accepted it (RestoreAnnotation, maxStateAgeToRestoreSeconds); else ask.
func PlanRestore(spec *v1beta1.FlinkClusterSpec, status *v1beta1.FlinkClusterStatus, obs UpgradeObservation, u Upgrade, now time.Time) Restore {
	var jobSpec *v1beta1.JobSpec
	if spec != nil {
		jobSpec = spec.Job
	}
	st := status
	if st == nil {
		st = &v1beta1.FlinkClusterStatus{}
	}
	job := st.Components.Job
	if job == nil {
		job = &v1beta1.JobStatus{}
	}
	if obs.RestoreChoice != nil {
		return restoreFrom(*obs.RestoreChoice)
	}
	if from, ok := RevisionRestore(st, jobSpec); ok {
		return restoreFrom(from)
	}
	if job.FinalSavepoint && job.SavepointLocation != "" {
		return restoreFrom(job.SavepointLocation)
	}
	switch ran, known := jobRan(job, st.Savepoint, obs); {
	case !known && !u.PastBound:
		return restoreWait(WaitForFlinkAPI, u.Until, fmt.Sprintf("to learn whether job %s ran before choosing what the next deploy restores: %s", job.ID, obs.FlinkSilence))
	case known && !ran:
		return restoreNeverRan(jobSpec, job, obs.LastState, u.NoLastState)
	}
	sp := st.Savepoint
	stopAttempted := sp != nil && sp.JobID == job.ID && sp.TriggerReason == SavepointReasonUpdate
	if !stopAttempted && job.SavepointLocation != "" && SavepointFresh(job, jobSpec, endTime(job, now)) {
		return restoreFrom(job.SavepointLocation)
	}
	noLastState := u.NoLastState
	if obs.FlinkJobState != FlinkJobRunning && KeepsState(jobSpec) {
		switch ls := obs.LastState; {
		case (ls.Available || ls.NewerSavepoint) && obs.mayStillRun():
			// Remove no JobManager that may still run the job; a leader that answers runs all jobs.
			return restoreWait(WaitForLeader, time.Time{}, fmt.Sprintf("job %s may still run on JobManager pod(s) %s: the last-state fallback waits until none may lead",
				job.ID, "["+strings.Join(obs.MayRunOn, " ")+"]"))
		case ls.Available && noLastState == "":
			return restoreLastState()
		case ls.NewerSavepoint:
			return restoreFrom(job.SavepointLocation)
		case noLastState == "":
			noLastState = ls.Why
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
	return restoreAsk(AskNoFinalSavepoint, why)
}

// restoreNeverRan restores again what a deploy that never ran restored.
func restoreNeverRan(jobSpec *v1beta1.JobSpec, job *v1beta1.JobStatus, ls LastStateOffer, noLastState string) Restore {
	if job.ID == "" && jobSpec != nil && jobSpec.FromSavepoint != nil {
		return restoreFrom(*jobSpec.FromSavepoint)
	}
	if ls.Available && noLastState == "" {
		return restoreLastState()
	}
	if job.FromCheckpoint {
		// Once the store is gone, or Flink's version changes, only the user can say.
		why := ls.Why
		if noLastState != "" {
			why = noLastState
		}
		return restoreAsk(AskHAMetadataMissing, fmt.Sprintf("last-state deploy of job %s never ran, and its checkpoints in Flink's HA store cannot be restored (%s)", job.ID, why))
	}
	return restoreFrom(job.FromSavepoint)
}

// jobRan reports whether the current deploy's job ever ran, and whether that is known. A
// JobManager that may be up but does not answer is unknown; one whose pods are gone counts as run.
func jobRan(job *v1beta1.JobStatus, sp *v1beta1.SavepointStatus, obs UpgradeObservation) (ran, known bool) {
	if Ran(job) || (job.ID != "" && obs.JobGraphStored) || (sp != nil && job.ID != "" && sp.JobID == job.ID && sp.TriggerTime != "") {
		// Seen running, submitted (graph in HA), or asked for a savepoint while RUNNING.
		return true, true
	}
	if obs.FlinkAnswered {
		s := obs.FlinkJobState
		return s != "" && s != flinkJobInitializing && s != flinkJobCreated, true
	}
	switch {
	case job.State == v1beta1.JobStatePending || job.State == v1beta1.JobStateDeployFailed:
		return false, true
	case job.ID != "" && job.DeployTime == "" && !obs.WorkloadOfJob:
		// A deploy recorded but never created (its record comes first), updated before that.
		return false, true
	case Terminal(job.State):
		// Ended unobserved (cancelled or failed while deploying): it may have run.
		return true, true
	case obs.PodMayLead:
		return false, false
	}
	// Taking it for "never ran" would redeploy from its own restore point: a rewind.
	return true, true
}

// RevisionRestore is UpdateRestore for an update to a new revision only.
func RevisionRestore(st *v1beta1.FlinkClusterStatus, spec *v1beta1.JobSpec) (string, bool) {
	if st == nil || st.Revision.CurrentRevision == st.Revision.NextRevision {
		return "", false
	}
	return UpdateRestore(st.Components.Job, spec)
}
