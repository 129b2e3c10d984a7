package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// TestQueueServesTheClustersOfTheInitialList checks that a cluster the cache listed when the
// controller started (its event enqueued at controller-runtime's low priority, as For's
// handler does) is reconciled while other clusters are requeued as fast as the workers
// take them, as they are when the controller has more clusters than it polls in one
// interval. controller-runtime's priority queue, its default, never serves it: the row that
// says so fails should it change, and then the choice of newQueue can be revisited.
func TestQueueServesTheClustersOfTheInitialList(t *testing.T) {
	rl := func() workqueue.TypedRateLimiter[reconcile.Request] {
		return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, 30*time.Second)
	}
	tests := []struct {
		name   string
		queue  func() workqueue.TypedRateLimitingInterface[reconcile.Request]
		served bool
	}{
		{name: "the controller's queue", queue: func() workqueue.TypedRateLimitingInterface[reconcile.Request] {
			return newQueue("test", rl())
		}, served: true},
		{name: "controller-runtime's priority queue", queue: func() workqueue.TypedRateLimitingInterface[reconcile.Request] {
			return priorityqueue.New[reconcile.Request]("test", func(o *priorityqueue.Opts[reconcile.Request]) { o.RateLimiter = rl() })
		}, served: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.queue()
			defer q.ShutDown()
			ctx := context.Background()
			h := handler.WithLowPriorityWhenUnchanged(&handler.EnqueueRequestForObject{})
			cluster := func(name string) *v1beta1.FlinkCluster {
				return &v1beta1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "n", Name: name}}
			}
			listed := types.NamespacedName{Namespace: "n", Name: "listed"}
			h.Create(ctx, event.CreateEvent{Object: cluster(listed.Name), IsInInitialList: true}, q)
			busy := []string{"a", "b", "c"}
			for _, name := range busy {
				h.Create(ctx, event.CreateEvent{Object: cluster(name)}, q)
			}
			served := false
			// Ten rounds of the busy clusters: in order, the listed one comes within the first.
			for range 10 * (len(busy) + 1) {
				req, _ := q.Get()
				q.Done(req)
				if req.NamespacedName == listed {
					served = true
					break
				}
				// The reconcile's RequeueAfter has passed: the cluster is due again at once.
				q.Forget(req)
				q.Add(req)
			}
			assert.Equal(t, tt.served, served, "the cluster of the initial list was reconciled")
		})
	}
}
