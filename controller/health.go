package controller

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// Health conditions: the summary GitOps tools (kstatus, Flux, kubectl wait, Argo CD) read. All
// three are derived in one place, health, so they can never disagree.
const (
	// ConditionReady is True while the cluster is where its spec asks (runs, or ended as asked).
	ConditionReady = "Ready"
	// ConditionReconciling is True while the controller works towards the spec.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the cluster will not reach its spec without a change from the user.
	ConditionStalled = "Stalled"
)

// Reasons of the health conditions; a Stalled condition for a failed deployment or a missing
// savepoint carries DeploymentFailed's or SavepointRequired's reason instead.
const (
	// ConditionReasonJobRunning: Ready, the job runs with a ready JobManager.
	ConditionReasonJobRunning = "JobRunning"
	// ConditionReasonJobSucceeded: Ready, the job ended successfully.
	ConditionReasonJobSucceeded = "JobSucceeded"
	// ConditionReasonJobCancelled: Ready when the cancel was requested, Stalled otherwise.
	ConditionReasonJobCancelled = "JobCancelled"
	// ConditionReasonJobFailed: Stalled, the job failed (or could not be deployed), not restarted.
	ConditionReasonJobFailed = "JobFailed"
	// ConditionReasonJobLost: Stalled, the job stayed unreported past the Lost timeout.
	ConditionReasonJobLost = "JobLost"
	// ConditionReasonProgressing: Reconciling; the message says on what.
	ConditionReasonProgressing = "Progressing"
	// ConditionReasonNotReconciling: Reconciling is False.
	ConditionReasonNotReconciling = "NotReconciling"
	// ConditionReasonNotStalled: Stalled is False.
	ConditionReasonNotStalled = "NotStalled"
	// ConditionReasonNotReady: Ready is False while Reconciling or Stalled; the message is theirs.
	ConditionReasonNotReady = "NotReady"
	// ConditionReasonReconcileFailed: Reconciling, the last reconcile failed and is retried.
	ConditionReasonReconcileFailed = "ReconcileFailed"
)

// healthInput is what health reads.
type healthInput struct {
	Status          *v1beta1.FlinkClusterStatus
	CancelRequested bool
	// Failed is the error that ended this reconcile ("" when none did).
	Failed string
}

// health derives Ready, Reconciling and Stalled. At most one is True: Stalled wins over
// Reconciling, and Ready only when neither is.
func health(in healthInput) (ready, reconciling, stalled metav1.Condition) {
	verdict, reason, message := judge(in)
	ready = condition(ConditionReady, metav1.ConditionFalse, ConditionReasonNotReady, message)
	reconciling = condition(ConditionReconciling, metav1.ConditionFalse, ConditionReasonNotReconciling, "the controller has nothing left to do for this spec")
	stalled = condition(ConditionStalled, metav1.ConditionFalse, ConditionReasonNotStalled, "nothing stops the cluster from reaching its spec")
	switch verdict {
	case healthReady:
		ready = condition(ConditionReady, metav1.ConditionTrue, reason, message)
	case healthReconciling:
		reconciling = condition(ConditionReconciling, metav1.ConditionTrue, reason, message)
	case healthStalled:
		stalled = condition(ConditionStalled, metav1.ConditionTrue, reason, message)
	}
	return ready, reconciling, stalled
}

type healthVerdict int

const (
	healthReconciling healthVerdict = iota
	healthReady
	healthStalled
)

// judge is the rule behind health, in order of precedence.
func judge(in healthInput) (healthVerdict, string, string) {
	st := in.Status
	conds := st.Conditions
	if c := trueCondition(conds, ConditionSavepointRequired); c != nil {
		return healthStalled, c.Reason, c.Message
	}
	if c := trueCondition(conds, ConditionDeploymentFailed); c != nil {
		return healthStalled, c.Reason, c.Message
	}
	job := v1beta1.JobStatePending
	if st.Components.Job != nil {
		job = st.Components.Job.State
	}
	switch job {
	case v1beta1.JobStateFailed, v1beta1.JobStateDeployFailed:
		return healthStalled, ConditionReasonJobFailed, "job is " + job + lastFailure(st.Components.Job)
	case v1beta1.JobStateLost:
		if c := trueCondition(conds, ConditionLost); c != nil && (c.Reason == ConditionReasonLostTimeout || c.Reason == ConditionReasonEndedUnobserved) {
			return healthStalled, ConditionReasonJobLost, c.Message
		}
	}
	if in.Failed != "" {
		return healthReconciling, ConditionReasonReconcileFailed, "the last reconcile failed and is retried: " + in.Failed
	}
	if st.Revision.CurrentRevision != st.Revision.NextRevision {
		return healthReconciling, ConditionReasonProgressing,
			fmt.Sprintf("updating from revision %s to %s%s", st.Revision.CurrentRevision, st.Revision.NextRevision, waitingFor(conds))
	}
	if c := trueCondition(conds, ConditionUpdating); c != nil {
		return healthReconciling, ConditionReasonProgressing, "updating: " + c.Message + waitingFor(conds)
	}
	switch job {
	case v1beta1.JobStateSucceeded:
		return healthReady, ConditionReasonJobSucceeded, "the job succeeded"
	case v1beta1.JobStateCancelled:
		if in.CancelRequested {
			return healthReady, ConditionReasonJobCancelled, "the job was cancelled as requested"
		}
		return healthStalled, ConditionReasonJobCancelled, "the job was cancelled, but no cancel was requested: change the spec to deploy it again"
	case v1beta1.JobStateRunning:
		if c := meta.FindStatusCondition(conds, ConditionJobManagerReady); c != nil && c.Status != metav1.ConditionTrue {
			return healthReconciling, ConditionReasonProgressing, "the job runs, but the JobManager is not ready: " + c.Message
		}
		return healthReady, ConditionReasonJobRunning, "the job runs revision " + st.Revision.CurrentRevision
	}
	return healthReconciling, ConditionReasonProgressing, "job is " + job + waitingFor(conds)
}

func trueCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	if c := meta.FindStatusCondition(conds, typ); c != nil && c.Status == metav1.ConditionTrue {
		return c
	}
	return nil
}

func waitingFor(conds []metav1.Condition) string {
	if c := trueCondition(conds, ConditionWaiting); c != nil {
		return "; waiting: " + c.Message
	}
	return ""
}

func lastFailure(j *v1beta1.JobStatus) string {
	if j == nil || len(j.FailureReasons) == 0 {
		return ""
	}
	return ": " + j.FailureReasons[len(j.FailureReasons)-1]
}
