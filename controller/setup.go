package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/flinkpoll"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/shard"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/scope"
)

// ControllerName names the controller, its Events' reporting controller and its logger.
const ControllerName = "flinkcluster"

// The permissions the controller needs (rendered by controller-gen rbac when deploy/ asks for
// them):
//
// +kubebuilder:rbac:groups=flinkoperator.k8s.io,resources=flinkclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=flinkoperator.k8s.io,resources=flinkclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=flinkoperator.k8s.io,resources=flinkclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// NewReconciler builds a reconciler outside a manager (tests, a one-shot tool): reader reads
// what must be fresh, metrics go to reg.
func NewReconciler(cl client.Client, reader client.Reader, recorder events.EventRecorder, opts Options, reg prometheus.Registerer) (*Reconciler, error) {
	opts, err := opts.complete()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Reconciler{Client: cl, Reader: reader, Recorder: recorder, Options: opts, metrics: m}, nil
}

// Setup registers the FlinkCluster reconciler with the manager. Leader election is the
// manager's; with Options.Shard the replicas share the clusters instead.
func Setup(mgr ctrl.Manager, opts Options) error {
	opts, err := opts.complete()
	if err != nil {
		return err
	}
	m, err := registryMetrics()
	if err != nil {
		return err
	}
	// Flink's HA ConfigMaps carry Flink's labels, not the one the manager's cache selects:
	// they get a cache of their own, read and never watched (their leader renewals and
	// checkpoints would each wake a reconcile).
	haCache, err := cache.New(mgr.GetConfig(), HACacheOptions(mgr, opts.Scope))
	if err != nil {
		return err
	}
	if err := mgr.Add(haCache); err != nil {
		return err
	}
	r := &Reconciler{
		Client:   mgr.GetClient(),
		Reader:   mgr.GetAPIReader(),
		HAReader: haCache,
		Recorder: mgr.GetEventRecorder(ControllerName + "-controller"),
		Options:  opts,
		metrics:  m,
		polls: flinkpoll.New(flinkpoll.Options{Workers: opts.FlinkPollers, Timeout: flinkCallTimeout},
			func(a, b *state.Flink) bool { return equality.Semantic.DeepEqual(a, b) }),
	}
	owned := settled{handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &v1beta1.FlinkCluster{}, handler.OnlyControllerOwner())}
	b := ctrl.NewControllerManagedBy(mgr).WatchesRawSource(flinkChanges(r.polls))
	if s := opts.Shard; s != nil {
		if err := mgr.Add(s); err != nil {
			return fmt.Errorf("adding the shard membership to the manager: %w", err)
		}
		b = b.WatchesRawSource(gainedClusters(s, mgr.GetCache()))
		// Another replica polls the clusters it took over. The view is read now: changes may be told
		// out of order.
		s.OnChange(func(_, _ shard.View) {
			cur := s.View()
			r.polls.Retain(func(key types.NamespacedName) bool { return cur.Owns(key.String()) })
		})
	}
	return b.
		Named(ControllerName).
		For(&v1beta1.FlinkCluster{}, builder.WithPredicates(notStatusOnly)).
		Watches(&batchv1.Job{}, owned).
		Watches(&appsv1.Deployment{}, owned).
		Watches(&appsv1.StatefulSet{}, owned).
		Watches(&corev1.Service{}, owned).
		Watches(&corev1.ConfigMap{}, owned).
		Watches(&networkingv1.Ingress{}, owned).
		Watches(&policyv1.PodDisruptionBudget{}, owned).
		Watches(&autoscalingv2.HorizontalPodAutoscaler{}, owned).
		// JobManager pods are owned by a Job or a ReplicaSet, so they are mapped by label.
		Watches(&corev1.Pod{}, settled{handler.EnqueueRequestsFromMapFunc(podToCluster)}).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
			// The default per-item backoff grows to 1000 s, leaving a cluster whose reconciles failed a
			// dozen times unlooked-at for minutes while its JobManager may be failing.
			RateLimiter:      workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, 30*time.Second),
			UsePriorityQueue: ptr.To(false),
			NewQueue:         newQueue,
		}).
		Complete(r)
}

// ownedSettle is how long a change of an owned object or pod waits before the reconcile it
// asks for: one step of a cluster changes several at once (a Deployment's status, its pod's
// phase and readiness, the TaskManagers'), and one look at all of them writes one status
// instead of one per change.
const ownedSettle = time.Second

// settled enqueues what its handler enqueues ownedSettle later; the work queue keeps one
// entry per cluster, so the changes within that time ask for one reconcile.
type settled struct {
	handler.EventHandler
}

// Create implements handler.EventHandler.
func (s settled) Create(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	s.EventHandler.Create(ctx, e, later{q})
}

// Update implements handler.EventHandler.
func (s settled) Update(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	s.EventHandler.Update(ctx, e, later{q})
}

// Delete implements handler.EventHandler.
func (s settled) Delete(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	s.EventHandler.Delete(ctx, e, later{q})
}

// Generic implements handler.EventHandler.
func (s settled) Generic(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	s.EventHandler.Generic(ctx, e, later{q})
}

// later is a work queue whose Add waits ownedSettle.
type later struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// Add implements workqueue.Interface.
func (q later) Add(r reconcile.Request) { q.AddAfter(r, ownedSettle) }

// flinkChanges runs the poller and enqueues each cluster whose Flink reading changed.
func flinkChanges(p *flinkpoll.Poller[*state.Flink]) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		go p.Run(ctx, func(key types.NamespacedName) { q.Add(reconcile.Request{NamespacedName: key}) })
		return nil
	})
}

// gainedClusters enqueues the clusters this replica gains: their watch events came while
// another replica owned them, and Reconcile dropped them.
func gainedClusters(s *shard.Membership, cache client.Reader) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		s.OnChange(func(old, cur shard.View) {
			list := &v1beta1.FlinkClusterList{}
			if err := cache.List(ctx, list); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "listing the FlinkClusters this replica gained")
				return
			}
			for _, fc := range list.Items {
				key := types.NamespacedName{Namespace: fc.Namespace, Name: fc.Name}
				if cur.Owns(key.String()) && !old.Owns(key.String()) {
					q.Add(reconcile.Request{NamespacedName: key})
				}
			}
		})
		return nil
	})
}

// newQueue is client-go's FIFO queue, not controller-runtime's priority queue, which serves a
// low-priority item (a cluster of the cache's initial list) only when nothing higher is ready:
// with every active cluster requeued each poll interval, a busy controller never reconciled
// them. In order, every cluster waits at most one round of the others.
func newQueue(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(rl, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{Name: name})
}

// CacheOptions restricts the manager's cache for the kinds the controller owns or watches to
// the objects that carry the label of every object and pod of a cluster (app=flink), so that
// the controller does not hold every pod and ConfigMap in memory. The HA ConfigMaps Flink
// labels its own way have a cache of their own (HACacheOptions); an object of the
// controller's that lost its label is read from the API server (Reconciler.Reader).
func CacheOptions() cache.Options { return ScopedCacheOptions(scope.All) }

// ScopedCacheOptions are CacheOptions restricted to a scope: namespaces limit every kind (so
// Roles suffice), a selector limits the FlinkClusters; Reconcile drops the events of owned
// objects of clusters outside it.
func ScopedCacheOptions(s scope.Scope) cache.Options {
	by := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{resources.LabelApp: resources.AppFlink})}
	opts := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}:                            by,
		&corev1.ConfigMap{}:                      by,
		&corev1.Service{}:                        by,
		&batchv1.Job{}:                           by,
		&appsv1.Deployment{}:                     by,
		&appsv1.StatefulSet{}:                    by,
		&networkingv1.Ingress{}:                  by,
		&policyv1.PodDisruptionBudget{}:          by,
		&autoscalingv2.HorizontalPodAutoscaler{}: by,
	}}
	if s.Selector != nil {
		opts.ByObject[&v1beta1.FlinkCluster{}] = cache.ByObject{Label: s.Selector}
	}
	if !s.AllNamespaces() {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range s.Namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// HACacheOptions are the options of the cache of Flink's HA ConfigMaps (Reconciler.HAReader):
// the ConfigMaps labelled as Flink's native Kubernetes integration labels them
// (flinkha.Labels), in the scope's namespaces, on the manager's scheme, HTTP client and REST
// mapper.
func HACacheOptions(mgr ctrl.Manager, s scope.Scope) cache.Options {
	opts := cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
		ByObject: map[client.Object]cache.ByObject{&corev1.ConfigMap{}: {
			Label: labels.SelectorFromSet(labels.Set{flinkha.LabelType: flinkha.LabelTypeNative}),
		}},
	}
	if !s.AllNamespaces() {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range s.Namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// notStatusOnly drops the FlinkCluster changes that touch only the status: the controller is
// its only writer, so such a change is the echo of its own write, and a reconcile that leaves
// a step for its next look asks for that look itself (a wait polls, a new record looks again
// at once: cycle.finish).
var notStatusOnly = predicate.TypedFuncs[client.Object]{UpdateFunc: func(e event.TypedUpdateEvent[client.Object]) bool {
	return !statusOnly(e.ObjectOld, e.ObjectNew)
}}

// statusOnly reports whether cur differs from old in its status only.
func statusOnly(old, cur client.Object) bool {
	return old.GetGeneration() == cur.GetGeneration() &&
		maps.Equal(old.GetLabels(), cur.GetLabels()) &&
		maps.Equal(old.GetAnnotations(), cur.GetAnnotations()) &&
		slices.Equal(old.GetFinalizers(), cur.GetFinalizers()) &&
		equality.Semantic.DeepEqual(old.GetOwnerReferences(), cur.GetOwnerReferences()) &&
		old.GetDeletionTimestamp().Equal(cur.GetDeletionTimestamp())
}

func podToCluster(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[resources.LabelApp] != resources.AppFlink || l[resources.LabelCluster] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: l[resources.LabelCluster]}}}
}
