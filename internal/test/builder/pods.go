package builder

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flink-admission/flink-admission/controller/resources"
)

// Pod returns a JobManager pod of a cluster at a revision, created at t and not started.
func Pod(cluster, name, revision string, created time.Time) *corev1.Pod {
	l := resources.SelectorLabels(cluster, resources.ComponentJobManager)
	l[resources.LabelRevision] = revision
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: l,
			CreationTimestamp: metav1.NewTime(created),
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: resources.JobManagerContainer, Image: "flink"}}},
	}
}

// SetRunning makes the pod Running and Ready since t, as the kubelet would.
func SetRunning(pod *corev1.Pod, t time.Time) *corev1.Pod {
	mt := metav1.NewTime(t)
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &mt
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: mt}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: resources.JobManagerContainer, Ready: true, Started: ptrTrue(),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: mt}},
	}}
	return pod
}

func ptrTrue() *bool { b := true; return &b }

// SetCrashLoop puts the JobManager container in CrashLoopBackOff after restarts runs that
// each lasted run and ended with exitCode and a termination message.
func SetCrashLoop(pod *corev1.Pod, t time.Time, restarts int32, run time.Duration, exitCode int32, message string) *corev1.Pod {
	mt := metav1.NewTime(t)
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &mt
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: mt}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: resources.JobManagerContainer, RestartCount: restarts,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exitCode, Reason: "Error", Message: message,
			StartedAt: metav1.NewTime(t.Add(-run)), FinishedAt: mt,
		}},
	}}
	return pod
}

// SetWaiting leaves the JobManager container waiting with reason (e.g. ImagePullBackOff).
func SetWaiting(pod *corev1.Pod, t time.Time, reason, message string) *corev1.Pod {
	mt := metav1.NewTime(t)
	pod.Status.Phase = corev1.PodPending
	pod.Status.StartTime = &mt
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name:  resources.JobManagerContainer,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
	}}
	return pod
}

// SetTerminated ends the JobManager container with exitCode (Job mode: restartPolicy Never).
func SetTerminated(pod *corev1.Pod, t time.Time, exitCode int32, message string) *corev1.Pod {
	mt := metav1.NewTime(t)
	if exitCode == 0 {
		pod.Status.Phase = corev1.PodSucceeded
	} else {
		pod.Status.Phase = corev1.PodFailed
	}
	if pod.Status.StartTime == nil {
		pod.Status.StartTime = &mt
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: mt}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: resources.JobManagerContainer,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exitCode, Reason: "Error", Message: message, StartedAt: *pod.Status.StartTime, FinishedAt: mt,
		}},
	}}
	return pod
}
