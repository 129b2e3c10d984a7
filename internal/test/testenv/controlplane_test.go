package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// TestControlPlane runs a Deployment on the real controllers and KWOK nodes: its pod is made
// by a ReplicaSet, scheduled and started; a deleted pod stays Terminating through its grace
// period and is replaced; a node that stops its heartbeats is marked unreachable and tainted.
func TestControlPlane(t *testing.T) {
	cp, err := StartControlPlane(ControlPlaneOptions{
		Options:                Options{WithoutCRD: true},
		Nodes:                  2,
		NodeLeaseDuration:      20 * time.Second,
		NodeMonitorGracePeriod: 20 * time.Second,
	})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cp.Stop()) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(cp.Logs())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs := cp.Clientset

	labels := map[string]string{"app": "jm"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "jm", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](3),
					Containers:                    []corev1.Container{{Name: "jobmanager", Image: "flink:2.2"}},
				},
			},
		},
	}
	_, err = cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{})
	require.NoError(t, err)

	first := waitRunningPod(ctx, t, cp, labels, "")
	require.Len(t, first.OwnerReferences, 1)
	assert.Equal(t, "ReplicaSet", first.OwnerReferences[0].Kind, "the pod is the ReplicaSet's, not the Deployment's")
	assert.Contains(t, []string{"kwok-node-0", "kwok-node-1"}, first.Spec.NodeName, "the scheduler bound it to a KWOK node")
	require.Len(t, first.Status.ContainerStatuses, 1)
	assert.NotNil(t, first.Status.ContainerStatuses[0].State.Running, "KWOK runs its container")

	// Deleted: Terminating (its containers still running) until the end of its grace period.
	require.NoError(t, cs.CoreV1().Pods("default").Delete(ctx, first.Name, metav1.DeleteOptions{}))
	terminating, err := cs.CoreV1().Pods("default").Get(ctx, first.Name, metav1.GetOptions{})
	require.NoError(t, err, "a deleted pod is still there during its grace period")
	assert.NotNil(t, terminating.DeletionTimestamp)
	require.NoError(t, wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods("default").Get(ctx, first.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}), "the kubelet (KWOK) deletes the pod at the end of its grace period")
	second := waitRunningPod(ctx, t, cp, labels, first.Name)
	assert.NotEqual(t, first.UID, second.UID, "the ReplicaSet made a new pod")

	// A node whose heartbeats stop: unreachable, tainted; its pod stays Running in the API
	// (the toleration of 300 s the API server adds by default has not run out).
	require.NoError(t, cp.StopNode(second.Spec.NodeName))
	require.NoError(t, cp.WaitNodeReady(ctx, second.Spec.NodeName, corev1.ConditionUnknown))
	require.NoError(t, wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		node, err := cs.CoreV1().Nodes().Get(ctx, second.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, taint := range node.Spec.Taints {
			if taint.Key == corev1.TaintNodeUnreachable && taint.Effect == corev1.TaintEffectNoExecute {
				return true, nil
			}
		}
		return false, nil
	}), "the node lifecycle controller taints the unreachable node")
	pod, err := cs.CoreV1().Pods("default").Get(ctx, second.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Nil(t, pod.DeletionTimestamp, "not evicted before its toleration runs out")
	var tolerated bool
	for _, tol := range pod.Spec.Tolerations {
		if tol.Key == corev1.TaintNodeUnreachable && tol.TolerationSeconds != nil {
			tolerated = true
			assert.EqualValues(t, 300, *tol.TolerationSeconds, "the API server's DefaultTolerationSeconds")
		}
	}
	assert.True(t, tolerated, "the pod tolerates an unreachable node for a while")
}

// waitRunningPod waits for a Running pod with labels other than the pod named not.
func waitRunningPod(ctx context.Context, t *testing.T, cp *ControlPlane, labels map[string]string, not string) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	var seen string
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods, err := cp.Clientset.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + labels["app"]})
		if err != nil {
			return false, nil
		}
		seen = ""
		for i := range pods.Items {
			p := &pods.Items[i]
			seen += fmt.Sprintf("%s:%s:%v ", p.Name, p.Status.Phase, p.DeletionTimestamp != nil)
			if p.Name != not && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				found = p
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "a Running pod (seen: %s)", seen)
	return found
}
