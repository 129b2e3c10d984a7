package state_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

func TestNewestPodSkipsTerminating(t *testing.T) {
	a := builder.Pod("wc", "a", "r", t0)
	b := builder.Pod("wc", "b", "r", t0.Add(time.Minute))
	c := builder.Pod("wc", "c", "r", t0.Add(2*time.Minute))
	c.DeletionTimestamp = &metav1.Time{Time: t0}
	assert.Equal(t, "b", state.NewestPod([]corev1.Pod{*a, *c, *b}).Name)
	assert.Nil(t, state.NewestPod([]corev1.Pod{*c}))
	assert.Nil(t, state.NewestPod(nil))
	assert.Equal(t, "a", state.FirstPod([]corev1.Pod{*b, *a}).Name, "Job mode keeps the first pod")
}

func TestStartTimeFollowsContainerRestarts(t *testing.T) {
	p := running(t0)
	assert.Equal(t, t0, state.StartTime(p))
	p.Status.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(t0.Add(time.Hour))
	assert.Equal(t, t0.Add(time.Hour), state.StartTime(p), "a restarted container restarts the grace")
}

func TestTerminationSummary(t *testing.T) {
	assert.Equal(t, "", state.TerminationSummary(" \n "))
	assert.Equal(t, "java.lang.ClassNotFoundException: x", state.TerminationSummary("a\nCaused by: java.lang.Foo\nCaused by: java.lang.ClassNotFoundException: x\n\tat y"))
	assert.Equal(t, "java.lang.IllegalStateException: bad", state.TerminationSummary("INFO ok\njava.lang.IllegalStateException: bad\n\tat y"))
	assert.Equal(t, "last", state.TerminationSummary("first\nlast\n"))
}

func TestDeploymentFailure(t *testing.T) {
	d := &appsv1.Deployment{Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetCreated"},
	}}}
	assert.Equal(t, "", state.DeploymentFailure(d))
	d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{
		Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "pods \"x\" is forbidden: exceeded quota",
	})
	assert.Equal(t, "JobManager pod cannot be created: pods \"x\" is forbidden: exceeded quota", state.DeploymentFailure(d))
	assert.Equal(t, "", state.DeploymentFailure(nil))
}

func TestMadeByReplicaSetNamesOnlyAReplicaSetController(t *testing.T) {
	ref := func(apiVersion, kind string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "wc-jobmanager", UID: "u", Controller: &controller}
	}
	for _, tc := range []struct {
		name   string
		owners []metav1.OwnerReference
		want   bool
	}{
		{"a ReplicaSet's pod", []metav1.OwnerReference{ref("apps/v1", "ReplicaSet", true)}, true},
		{"a pod owned by the Deployment itself (no kube-controller-manager)", []metav1.OwnerReference{ref("apps/v1", "Deployment", true)}, false},
		{"a Job's pod", []metav1.OwnerReference{ref("batch/v1", "Job", true)}, false},
		{"a ReplicaSet that owns but does not control", []metav1.OwnerReference{ref("apps/v1", "ReplicaSet", false)}, false},
		{"another group's ReplicaSet kind", []metav1.OwnerReference{ref("example.com/v1", "ReplicaSet", true)}, false},
		{"no owner", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: tc.owners}}
			assert.Equal(t, tc.want, state.MadeByReplicaSet(p))
		})
	}
}

func TestProcessRunning(t *testing.T) {
	deleting := running(t0)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	imagePull := running(t0)
	imagePull.Status.Phase = corev1.PodPending
	imagePull.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}
	exited := running(t0)
	exited.Status.Phase = corev1.PodSucceeded
	exited.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"a running JobManager container":                 {pod: running(t0), want: true},
		"a pod being deleted: its process is going":      {pod: deleting},
		"an image that cannot be pulled: no process ran": {pod: imagePull},
		"a container that exited":                        {pod: exited},
	} {
		assert.Equal(t, tc.want, state.ProcessRunning(tc.pod), name)
	}
}
