package state

import (
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/controller/resources"
)

// CrashLoopRestarts restarts make a CrashLoopBackOff a failed deployment (as in Flink's operator).
const CrashLoopRestarts = 3

// ShortRun is the longest run that counts as a crash: a JobManager that ran longer was not failing
// to start (the kubelet resets its back-off after ten minutes anyway).
const ShortRun = 5 * time.Minute

// maxReasonLength bounds a reason taken from a termination message, which may be a log's tail.
const maxReasonLength = 512

const crashLoopBackOff = "CrashLoopBackOff"

// FailedCreate is the kind of a failed deployment whose JobManager pod cannot be created.
const FailedCreate = "FailedCreate"

// waitingFailures are container waiting reasons that never resolve without a spec change.
var waitingFailures = []string{"ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError", "InvalidImageName", "CreateContainerError"}

// Deleting reports whether a pod is being deleted.
func Deleting(pod *corev1.Pod) bool { return pod.DeletionTimestamp != nil }

// MadeByReplicaSet reports whether a pod's controller is a ReplicaSet.
func MadeByReplicaSet(pod *corev1.Pod) bool {
	o := metav1.GetControllerOf(pod)
	return o != nil && o.Kind == "ReplicaSet" && o.APIVersion == appsv1.SchemeGroupVersion.String()
}

// NewestPod picks the newest JobManager pod not being deleted, so that a replacement is observed.
func NewestPod(pods []corev1.Pod) *corev1.Pod {
	var newest *corev1.Pod
	for i := range pods {
		p := &pods[i]
		if Deleting(p) {
			continue
		}
		if newest == nil || p.CreationTimestamp.After(newest.CreationTimestamp.Time) ||
			(p.CreationTimestamp.Equal(&newest.CreationTimestamp) && p.Name > newest.Name) {
			newest = p
		}
	}
	return newest
}

// FirstPod picks the Job's JobManager pod: the oldest one, as the Job has at most one.
func FirstPod(pods []corev1.Pod) *corev1.Pod {
	if len(pods) == 0 {
		return nil
	}
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(a, b corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return &sorted[0]
}

func jobManagerStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == resources.JobManagerContainer {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// ProcessRunning reports whether the pod, not being deleted, runs a JobManager process.
func ProcessRunning(pod *corev1.Pod) bool {
	if Deleting(pod) || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	cs := jobManagerStatus(pod)
	return cs != nil && cs.State.Running != nil
}

// Ready reports whether the pod is Running and Ready: only then does the Service route to it.
func Ready(pod *corev1.Pod) bool {
	if pod == nil || Deleting(pod) || pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// StartTime is when the JobManager last started: a container restart recovers from HA again.
func StartTime(pod *corev1.Pod) time.Time {
	var t time.Time
	if pod.Status.StartTime != nil {
		t = pod.Status.StartTime.Time
	} else {
		t = pod.CreationTimestamp.Time
	}
	if cs := jobManagerStatus(pod); cs != nil && cs.State.Running != nil && cs.State.Running.StartedAt.After(t) {
		t = cs.State.Running.StartedAt.Time
	}
	return t
}

// PodFailure returns why a JobManager pod cannot run, as Flink's operator judges it: an image or
// configuration error, or CrashLoopBackOff after CrashLoopRestarts short runs.
func PodFailure(pod *corev1.Pod) (kind, message string) {
	if pod == nil {
		return "", ""
	}
	all := append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...)
	for _, cs := range all {
		if w := cs.State.Waiting; w != nil && slices.Contains(waitingFailures, w.Reason) {
			return w.Reason, truncate(fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message))
		}
	}
	cs := jobManagerStatus(pod)
	if cs == nil || cs.State.Waiting == nil || cs.State.Waiting.Reason != crashLoopBackOff || cs.RestartCount < CrashLoopRestarts {
		return "", ""
	}
	last := cs.LastTerminationState.Terminated
	if last != nil && !last.StartedAt.IsZero() && !last.FinishedAt.IsZero() && last.FinishedAt.Sub(last.StartedAt.Time) > ShortRun {
		return "", ""
	}
	reason := fmt.Sprintf("JobManager container in CrashLoopBackOff after %d restarts", cs.RestartCount)
	if last != nil {
		reason += fmt.Sprintf(", exit code %d", last.ExitCode)
		if msg := TerminationSummary(last.Message); msg != "" {
			reason += ": " + msg
		} else if last.Reason != "" {
			reason += ": " + last.Reason
		}
	}
	return crashLoopBackOff, truncate(reason)
}

// TerminatedFailure returns why a JobManager container ended with a failure (Job mode), or "".
func TerminatedFailure(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	cs := jobManagerStatus(pod)
	if cs == nil {
		return ""
	}
	t := cs.State.Terminated
	if t == nil {
		t = cs.LastTerminationState.Terminated
	}
	if t == nil || t.ExitCode == 0 {
		return ""
	}
	reason := fmt.Sprintf("JobManager container exited with code %d", t.ExitCode)
	if msg := TerminationSummary(t.Message); msg != "" {
		reason += ": " + msg
	} else if t.Reason != "" {
		reason += ": " + t.Reason
	}
	return truncate(reason)
}

// TerminatedRun is how long the JobManager container's last terminated run lasted.
func TerminatedRun(pod *corev1.Pod) (d time.Duration, ok bool) {
	if pod == nil {
		return 0, false
	}
	cs := jobManagerStatus(pod)
	if cs == nil {
		return 0, false
	}
	t := cs.State.Terminated
	if t == nil {
		t = cs.LastTerminationState.Terminated
	}
	if t == nil || t.StartedAt.IsZero() || t.FinishedAt.IsZero() || t.FinishedAt.Before(&t.StartedAt) {
		return 0, false
	}
	return t.FinishedAt.Sub(t.StartedAt.Time), true
}

// RunningFor is how long the JobManager container has run at now; a lost node's run counts until
// now.
func RunningFor(pod *corev1.Pod, now time.Time) (d time.Duration, ok bool) {
	if pod == nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0, false
	}
	cs := jobManagerStatus(pod)
	if cs == nil || cs.State.Running == nil || cs.State.Running.StartedAt.IsZero() || now.Before(cs.State.Running.StartedAt.Time) {
		return 0, false
	}
	return now.Sub(cs.State.Running.StartedAt.Time), true
}

// TerminationSummary picks the most telling line of a termination message (a log's tail).
func TerminationSummary(msg string) string {
	var lines []string
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "Caused by: ") {
			return strings.TrimPrefix(lines[i], "Caused by: ")
		}
	}
	for _, l := range lines {
		if strings.Contains(l, "Exception") || strings.Contains(l, "Error") {
			return l
		}
	}
	return lines[len(lines)-1]
}

// DeploymentFailure returns a Deployment's FailedCreate message (quota, admission, policy), or "".
func DeploymentFailure(dep *appsv1.Deployment) string {
	if dep == nil {
		return ""
	}
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Reason == FailedCreate && c.Status == corev1.ConditionTrue {
			return truncate("JobManager pod cannot be created: " + c.Message)
		}
	}
	return ""
}

func truncate(s string) string {
	if len(s) > maxReasonLength {
		return s[:maxReasonLength]
	}
	return s
}

// Time formats a time for the status, which keeps times as RFC 3339 strings.
func Time(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// ParseTime reads a status time; zero when empty or malformed.
func ParseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// MetaTime converts to the API's time type.
func MetaTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
