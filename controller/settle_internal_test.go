package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flink-admission/flink-admission/controller/resources"
)

// A burst of changes of a cluster's pods asks for one reconcile, ownedSettle after the first.
func TestOwnedChangesWithinTheSettleTimeAskForOneReconcile(t *testing.T) {
	clock := clocktesting.NewFakeClock(metav1.Now().Time)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request](),
		workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Clock: clock})
	defer q.ShutDown()
	h := settled{handler.EnqueueRequestsFromMapFunc(podToCluster)}
	pod := func(phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "wc-jobmanager-0",
			Labels: map[string]string{resources.LabelApp: resources.AppFlink, resources.LabelCluster: "wc"}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	ctx := context.Background()
	h.Create(ctx, event.CreateEvent{Object: pod(corev1.PodPending)}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: pod(corev1.PodPending), ObjectNew: pod(corev1.PodRunning)}, q)
	assert.Zero(t, q.Len(), "nothing is asked for before the settle time")

	clock.Step(ownedSettle)
	got, _ := q.Get() // blocks until the queue has it
	assert.Equal(t, types.NamespacedName{Namespace: "default", Name: "wc"}, got.NamespacedName)
	assert.Zero(t, q.Len(), "one reconcile for the burst")
	q.Done(got)

	h.Delete(ctx, event.DeleteEvent{Object: pod(corev1.PodRunning)}, q)
	assert.Zero(t, q.Len())
	clock.Step(ownedSettle)
	got, _ = q.Get()
	assert.Equal(t, "wc", got.Name, "a later change asks again")
	q.Done(got)
}
