package controller

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/state"
)

// Condition types of status.conditions; with the Events they record every lifecycle transition.
const (
	// ConditionManaged is True for an application-mode cluster this controller runs.
	ConditionManaged = "Managed"
	// ConditionJobManagerReady is True while the current JobManager pod is ready (the Service routes to it).
	ConditionJobManagerReady = "JobManagerReady"
	// ConditionUpdating is True from the start of an update until the next revision's job runs or ends.
	ConditionUpdating = "Updating"
	// ConditionDeploymentFailed is True once the JobManager could not be deployed (reason: the kind
	// of failure); False when a JobManager is created again.
	ConditionDeploymentFailed = "DeploymentFailed"
	// ConditionLost is True while the job is Lost; the Lost timeout counts from its lastTransitionTime.
	ConditionLost = "Lost"
	// ConditionSavepointRequired is True while the controller stops for want of a confirmed
	// savepoint (an older one would be restored, or HA metadata is gone). It deploys nothing until
	// the user answers with the RestoreAnnotation or a spec that needs none; a running job keeps running.
	ConditionSavepointRequired = "SavepointRequired"
	// ConditionWaiting is True while the controller waits on something outside its control; past
	// --wait-bound the message says so and a WaitExceeded Event is recorded.
	ConditionWaiting = "Waiting"
)

// Condition reasons. A True DeploymentFailed has the kind of failure as its reason instead
// (CrashLoopBackOff, ImagePullBackOff, FailedCreate, ApplicationFailed, ...).
const (
	// ConditionReasonApplicationMode: Managed is True.
	ConditionReasonApplicationMode = "ApplicationMode"
	// ConditionReasonNotApplicationMode: Managed is False, the cluster is left alone.
	ConditionReasonNotApplicationMode = "NotApplicationMode"

	// ConditionReasonPodReady: the JobManager pod is ready.
	ConditionReasonPodReady = "PodReady"
	// ConditionReasonPodNotReady: the JobManager pod is missing, starting, failing or ended.
	ConditionReasonPodNotReady = "PodNotReady"
	// ConditionReasonJobManagerMissing: there is no JobManager workload, or it is being deleted.
	ConditionReasonJobManagerMissing = "JobManagerMissing"
	// ConditionReasonScaledToZero: the JobManager Deployment of an ended job is scaled to 0.
	ConditionReasonScaledToZero = "ScaledToZero"

	// ConditionReasonStoppingWithSavepoint: the update waits for the job's final savepoint.
	ConditionReasonStoppingWithSavepoint = "StoppingWithSavepoint"
	// ConditionReasonWaitingForJobManagerPods: the controller waits until no old JobManager pod may still lead.
	ConditionReasonWaitingForJobManagerPods = "WaitingForJobManagerPods"
	// ConditionReasonDeployingNextRevision: the next revision's JobManager is deploying.
	ConditionReasonDeployingNextRevision = "DeployingNextRevision"
	// ConditionReasonUpToDate: Updating is False, the current revision is the spec's.
	ConditionReasonUpToDate = "UpToDate"

	// ConditionReasonNoFailure: DeploymentFailed is False.
	ConditionReasonNoFailure = "NoFailure"

	// ConditionReasonJobNotReported: the job is Lost, within its timeout.
	ConditionReasonJobNotReported = "JobNotReported"
	// ConditionReasonLostTimeout: the job stayed Lost for the Lost timeout; afterJobFails applies.
	ConditionReasonLostTimeout = "LostTimeout"
	// ConditionReasonLostRecoverable: Lost past its timeout, but its HA data is kept: it resumes from HA.
	ConditionReasonLostRecoverable = "LostRecoverableFromHA"
	// ConditionReasonEndedUnobserved: the job ended in Flink unseen (found in the job result
	// store): finished, no cleanup policy applies, the cluster is kept.
	ConditionReasonEndedUnobserved = "EndedUnobserved"
	// ConditionReasonJobTracked: Lost is False, the job is tracked.
	ConditionReasonJobTracked = "JobTracked"

	// ConditionReasonNoFinalSavepoint: the final savepoint could not be taken or confirmed.
	ConditionReasonNoFinalSavepoint = "NoFinalSavepoint"
	// ConditionReasonHAMetadataMissing: a job that ran would be recovered from HA metadata that is gone.
	ConditionReasonHAMetadataMissing = "HAMetadataMissing"
	// ConditionReasonUnsupportedHA: a Deployment cluster runs HA other than Kubernetes HA, whose
	// metadata the controller cannot check or clean up.
	ConditionReasonUnsupportedHA = "UnsupportedHA"
	// ConditionReasonNotRequired: SavepointRequired is False.
	ConditionReasonNotRequired = "NotRequired"

	// ConditionReasonNotWaiting: Waiting is False.
	ConditionReasonNotWaiting = "NotWaiting"
	// ConditionReasonWaitingForLeader: an old JobManager pod still holds the HA leadership.
	ConditionReasonWaitingForLeader = "WaitingForLeader"
	// ConditionReasonWaitingForFlinkAPI: the REST API does not answer, or not from the leader.
	ConditionReasonWaitingForFlinkAPI = "WaitingForFlinkAPI"
	// ConditionReasonWaitingForSavepoint: a savepoint was triggered and its result is awaited.
	ConditionReasonWaitingForSavepoint = "WaitingForSavepoint"
	// ConditionReasonWaitingForJobManagerDeletion: the old JobManager workload is being deleted.
	ConditionReasonWaitingForJobManagerDeletion = "WaitingForJobManagerDeletion"
	// ConditionReasonWaitingForJobCancel: the job was cancelled; Flink's confirmation is awaited.
	ConditionReasonWaitingForJobCancel = "WaitingForJobCancel"
	// ConditionReasonWaitingForApplication: the Flink 2.3 application runs without the job yet.
	ConditionReasonWaitingForApplication = "WaitingForApplication"
	// ConditionReasonWaitingForJobReport: the JobManager lists no job of the deploy yet; within
	// --ha-recovery-grace it may still be submitting or recovering it, after that the job is Lost.
	ConditionReasonWaitingForJobReport = "WaitingForJobReport"
	// ConditionReasonWaitingForJobEnd: the update's savepoint is taken; the job must be seen ended
	// before the JobManager is replaced.
	ConditionReasonWaitingForJobEnd = "WaitingForJobEnd"
	// ConditionReasonWaitingForUpgradableState: the update waits for a state it can update from without losing state.
	ConditionReasonWaitingForUpgradableState = "WaitingForUpgradableState"
	// ConditionReasonWaitingForJobManagerShutdown: the job ended (Job mode) and its JobManager has
	// not; past the wait bound the JobManager Job is deleted.
	ConditionReasonWaitingForJobManagerShutdown = "WaitingForJobManagerShutdown"
	// ConditionReasonWaitingForJobManagerExit: the ended job's JobManager accepted the shutdown;
	// past its pod's grace period the JobManager Job is deleted.
	ConditionReasonWaitingForJobManagerExit = "WaitingForJobManagerExit"
)

func condition(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message}
}

// setCondition records cond; a changed status takes at (the injected clock) as its
// lastTransitionTime. It reports whether a recorded condition flipped.
func setCondition(conds *[]metav1.Condition, cond metav1.Condition, at time.Time) (flipped bool) {
	prev := meta.FindStatusCondition(*conds, cond.Type)
	flipped = prev != nil && prev.Status != cond.Status
	cond.LastTransitionTime = metav1.NewTime(at)
	meta.SetStatusCondition(conds, cond)
	return flipped
}

func observedGeneration(conds []metav1.Condition, generation int64) {
	for i := range conds {
		conds[i].ObservedGeneration = generation
	}
}

// lostSince is when the job became Lost; zero when it is not.
func lostSince(conds []metav1.Condition) time.Time {
	if c := meta.FindStatusCondition(conds, ConditionLost); c != nil && c.Status == metav1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

func managedCondition(fc *v1beta1.FlinkCluster) metav1.Condition {
	if fc.Spec.IsApplicationMode() {
		return condition(ConditionManaged, metav1.ConditionTrue, ConditionReasonApplicationMode,
			"spec.job.mode is Application: this controller runs the cluster")
	}
	return condition(ConditionManaged, metav1.ConditionFalse, ConditionReasonNotApplicationMode,
		fmt.Sprintf("job mode %s is not managed by this controller: only spec.job.mode Application is; "+
			"to have another controller (the flink-on-k8s-operator) run it, keep it outside this controller's --watch-namespaces or --cluster-selector", jobMode(fc)))
}

func jobMode(fc *v1beta1.FlinkCluster) string {
	switch {
	case fc.Spec.Job == nil:
		return "session cluster"
	case fc.Spec.Job.Mode == nil:
		return "unset"
	}
	return string(*fc.Spec.Job.Mode)
}

// jobManagerReadyCondition derives JobManagerReady (wl nil: no workload).
func jobManagerReadyCondition(kind string, wl *state.Workload, replicas *int32, pod *corev1.Pod) metav1.Condition {
	notReady := func(reason, format string, args ...any) metav1.Condition {
		return condition(ConditionJobManagerReady, metav1.ConditionFalse, reason, fmt.Sprintf(format, args...))
	}
	switch {
	case wl == nil:
		return notReady(ConditionReasonJobManagerMissing, "no JobManager %s", kind)
	case wl.Deleting:
		return notReady(ConditionReasonJobManagerMissing, "the JobManager %s is being deleted", kind)
	case replicas != nil && *replicas == 0:
		return notReady(ConditionReasonScaledToZero, "the JobManager Deployment is scaled to 0")
	case pod == nil:
		return notReady(ConditionReasonPodNotReady, "no JobManager pod yet")
	case !state.Ready(pod):
		phase := string(pod.Status.Phase)
		if phase == "" {
			phase = "not started"
		}
		return notReady(ConditionReasonPodNotReady, "JobManager pod %s is %s, not ready", pod.Name, phase)
	}
	return condition(ConditionJobManagerReady, metav1.ConditionTrue, ConditionReasonPodReady,
		fmt.Sprintf("JobManager pod %s is ready", pod.Name))
}

// updatingCondition derives Updating from the update flow's step (nil: the flow did not run).
// nil leaves the recorded condition: a step not reached, or the next revision still deploying.
func updatingCondition(prev, step *metav1.Condition, pending bool, jobState, revision string) *metav1.Condition {
	switch {
	case step != nil:
		return step
	case pending:
		return nil
	case prev != nil && prev.Status == metav1.ConditionTrue &&
		(jobState == v1beta1.JobStateDeploying || jobState == v1beta1.JobStatePending):
		return nil
	}
	c := condition(ConditionUpdating, metav1.ConditionFalse, ConditionReasonUpToDate, "current revision "+revision)
	return &c
}
