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

// Condition types of status.conditions. Together with the Events they record every lifecycle
// transition; each condition's lastTransitionTime says when its status last changed.
const (
	// ConditionManaged is True for an application-mode cluster this controller runs, and False
	// (reason NotApplicationMode) for a cluster it leaves alone.
	ConditionManaged = "Managed"
	// ConditionJobManagerReady is True while the current JobManager workload's pod is ready,
	// which is when the JobManager Service routes the Flink REST API to it.
	ConditionJobManagerReady = "JobManagerReady"
	// ConditionUpdating is True from the start of an update (a new spec revision) through the
	// stop-with-savepoint, the wait for every old JobManager pod to be gone and the deployment
	// of the next revision, until that revision's job runs or ends; then False.
	ConditionUpdating = "Updating"
	// ConditionDeploymentFailed is True once the JobManager could not be deployed: a crash
	// loop, an image pull or container configuration error, pods the Deployment cannot
	// create, or an application whose main() failed before its job ran. Its reason is the kind of failure and its message the failure reason. It turns
	// False when a JobManager is created again (a fixed spec, a restart).
	ConditionDeploymentFailed = "DeploymentFailed"
	// ConditionLost is True while the job is Lost. Its lastTransitionTime is when the job
	// became Lost: the Lost timeout counts from it.
	ConditionLost = "Lost"
	// ConditionSavepointRequired is True while the controller stops for want of a confirmed
	// savepoint: an update (or a recovery) would otherwise restore an older savepoint than the
	// job's newest state, or the JobManager's HA metadata is gone. It deploys nothing until the
	// user answers with the RestoreAnnotation (a savepoint path or empty-state) or a spec that
	// needs no savepoint; the job, if it still runs, keeps running. The message says why.
	ConditionSavepointRequired = "SavepointRequired"
	// ConditionWaiting is True while the controller waits on something outside its control
	// (old JobManager pods to be gone, the HA leader to step down, the Flink REST API, a
	// savepoint's result, a workload's deletion). Its reason names what, its message which,
	// and its lastTransitionTime since when; past --wait-bound the message says so and a
	// Warning Event (WaitExceeded) is recorded.
	ConditionWaiting = "Waiting"
)

// Condition reasons. A True DeploymentFailed condition has the kind of failure as its reason
// instead: CrashLoopBackOff, ImagePullBackOff, ErrImagePull, CreateContainerConfigError,
// InvalidImageName, CreateContainerError, FailedCreate or ApplicationFailed.
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
	// ConditionReasonWaitingForJobManagerPods: the old JobManager workload was deleted and the
	// controller waits until no old JobManager pod may still lead (Updating, Waiting).
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
	// ConditionReasonLostRecoverable: the job stayed Lost for the Lost timeout, but its HA
	// data is kept (job graph or checkpoints): it is not ended, it resumes from HA.
	ConditionReasonLostRecoverable = "LostRecoverableFromHA"
	// ConditionReasonEndedUnobserved: the job is Lost because it ended in Flink while the
	// controller did not see how (a restarted JobManager found its result in the job result
	// store): it is finished, and no cleanup policy applies, the cluster is kept.
	ConditionReasonEndedUnobserved = "EndedUnobserved"
	// ConditionReasonJobTracked: Lost is False, the job is tracked.
	ConditionReasonJobTracked = "JobTracked"

	// ConditionReasonNoFinalSavepoint: SavepointRequired is True, the final savepoint could
	// not be taken or confirmed.
	ConditionReasonNoFinalSavepoint = "NoFinalSavepoint"
	// ConditionReasonHAMetadataMissing: the JobManager of a job that ran would have to
	// recover it from HA metadata that is gone (SavepointRequired True, DeploymentFailed True).
	ConditionReasonHAMetadataMissing = "HAMetadataMissing"
	// ConditionReasonUnsupportedHA: DeploymentFailed is True, a Deployment cluster runs HA
	// services other than Kubernetes HA (ZooKeeper, a factory class), whose metadata the
	// controller cannot check or clean up (rule deployment-requires-kubernetes-ha).
	ConditionReasonUnsupportedHA = "UnsupportedHA"
	// ConditionReasonNotRequired: SavepointRequired is False.
	ConditionReasonNotRequired = "NotRequired"

	// ConditionReasonNotWaiting: Waiting is False.
	ConditionReasonNotWaiting = "NotWaiting"
	// ConditionReasonWaitingForLeader: an old JobManager pod still holds the HA leadership.
	ConditionReasonWaitingForLeader = "WaitingForLeader"
	// ConditionReasonWaitingForFlinkAPI: the JobManager's REST API does not answer, or not
	// from the leader.
	ConditionReasonWaitingForFlinkAPI = "WaitingForFlinkAPI"
	// ConditionReasonWaitingForSavepoint: a savepoint was triggered and its result is awaited.
	ConditionReasonWaitingForSavepoint = "WaitingForSavepoint"
	// ConditionReasonWaitingForJobManagerDeletion: the old JobManager workload is being deleted.
	ConditionReasonWaitingForJobManagerDeletion = "WaitingForJobManagerDeletion"
	// ConditionReasonWaitingForJobCancel: the job was cancelled; Flink's confirmation is awaited.
	ConditionReasonWaitingForJobCancel = "WaitingForJobCancel"
	// ConditionReasonWaitingForApplication: the Flink 2.3 application runs without the job yet.
	ConditionReasonWaitingForApplication = "WaitingForApplication"
	// ConditionReasonWaitingForJobReport: the JobManager answers but lists no job of the
	// deploy yet; within --ha-recovery-grace of its start it may still be submitting it or
	// recovering it from HA, after that the job is Lost.
	ConditionReasonWaitingForJobReport = "WaitingForJobReport"
	// ConditionReasonWaitingForJobEnd: an update's stop-with-savepoint took its savepoint, and
	// the controller waits to see the job ended before it replaces the JobManager (the job
	// restarted instead, or no trusted JobManager answers).
	ConditionReasonWaitingForJobEnd = "WaitingForJobEnd"
	// ConditionReasonWaitingForUpgradableState: the update waits for the job to reach a state
	// it can be updated from without losing state (flinkcluster.UpgradeWait): Flink reports it
	// restarting, a checkpoint is in progress, or a flinkVersion change waits for the job to run.
	ConditionReasonWaitingForUpgradableState = "WaitingForUpgradableState"
	// ConditionReasonWaitingForJobManagerShutdown: the job ended (Job mode) and its JobManager,
	// which outlives the job (execution.shutdown-on-application-finish false), has not ended
	// yet: asked to shut down, it is exiting, or its REST API does not answer; past the wait
	// bound the controller deletes the JobManager Job instead.
	ConditionReasonWaitingForJobManagerShutdown = "WaitingForJobManagerShutdown"
	// ConditionReasonWaitingForJobManagerExit: the JobManager of a job that ended (Job mode)
	// accepted the shutdown (DELETE /cluster) and is exiting; past its pod's termination
	// grace period from then the controller deletes the JobManager Job instead.
	ConditionReasonWaitingForJobManagerExit = "WaitingForJobManagerExit"
)

// condition builds a condition of this controller.
func condition(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message}
}

// setCondition records cond with meta.SetStatusCondition. A changed status takes at as its
// lastTransitionTime (the injected clock, never time.Now); an unchanged status keeps its own.
// It reports whether a recorded condition changed its status.
func setCondition(conds *[]metav1.Condition, cond metav1.Condition, at time.Time) (flipped bool) {
	prev := meta.FindStatusCondition(*conds, cond.Type)
	flipped = prev != nil && prev.Status != cond.Status
	cond.LastTransitionTime = metav1.NewTime(at)
	meta.SetStatusCondition(conds, cond)
	return flipped
}

// observedGeneration stamps every condition with the generation it was derived from.
func observedGeneration(conds []metav1.Condition, generation int64) {
	for i := range conds {
		conds[i].ObservedGeneration = generation
	}
}

// lostSince is when the job became Lost: the True Lost condition's lastTransitionTime; zero
// when the job is not Lost.
func lostSince(conds []metav1.Condition) time.Time {
	if c := meta.FindStatusCondition(conds, ConditionLost); c != nil && c.Status == metav1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// managedCondition says whether this controller runs the cluster.
func managedCondition(fc *v1beta1.FlinkCluster) metav1.Condition {
	if fc.Spec.IsApplicationMode() {
		return condition(ConditionManaged, metav1.ConditionTrue, ConditionReasonApplicationMode,
			"spec.job.mode is Application: this controller runs the cluster")
	}
	return condition(ConditionManaged, metav1.ConditionFalse, ConditionReasonNotApplicationMode,
		fmt.Sprintf("job mode %s is not managed by this controller: only spec.job.mode Application is; "+
			"to have another controller (the flink-on-k8s-operator) run it, keep it outside this controller's --watch-namespaces or --cluster-selector", jobMode(fc)))
}

// jobMode names a cluster's job mode for messages.
func jobMode(fc *v1beta1.FlinkCluster) string {
	switch {
	case fc.Spec.Job == nil:
		return "session cluster"
	case fc.Spec.Job.Mode == nil:
		return "unset"
	}
	return string(*fc.Spec.Job.Mode)
}

// jobManagerReadyCondition derives JobManagerReady from the JobManager workload (kind Job or
// Deployment; nil when missing), the Deployment's desired replicas and the selected pod.
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

// updatingCondition derives Updating. step is the update flow's step in this reconcile (nil
// when the flow did not run); pending reports an update in progress (revisions differ or
// the job is Updating); prev is the recorded condition. nil leaves the recorded condition
// as it is: an update whose step was not reached (an error), or the next revision's job
// still deploying.
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
