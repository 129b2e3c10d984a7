package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkpoll"
	"github.com/flink-admission/flink-admission/controller/shard"
	"github.com/flink-admission/flink-admission/controller/state"
)

// Reconciler reconciles FlinkClusters.
type Reconciler struct {
	// Client reads the FlinkClusters, the owned objects and the JobManager pods from the
	// cache, and writes everything.
	Client client.Client
	// Reader reads from the API server what the cache may not show yet: a cluster whose
	// newest version this replica does not know (readCluster), and the JobManager pods and HA
	// ConfigMaps before a decision that their absence allows (a stale pod list could claim
	// that the old JobManager is gone before it is: confirmAbsent).
	Reader client.Reader
	// HAReader reads Flink's HA ConfigMaps, which the manager's cache does not hold (they
	// lack the label it selects): a cache of its own (Setup). Nil reads them from Client.
	HAReader client.Reader
	// Recorder records Events.
	Recorder events.EventRecorder
	// Options are complete (defaults filled in).
	Options Options

	metrics *metrics
	// polls reads the Flink REST API of clusters with nothing to do but watch their job; nil
	// (outside a manager) makes every reconcile poll on its own worker.
	polls *flinkpoll.Poller[*state.Flink]

	// notManaged remembers the generation told it is not managed: one Event per spec change.
	notManaged sync.Map
	// known is what this replica knows of each cluster's object beyond its cache
	// (*knownCluster by types.NamespacedName: readCluster).
	known sync.Map
}

var _ reconcile.Reconciler = &Reconciler{}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	var tenure uint64
	if s := r.Options.Shard; s != nil {
		// Another replica's cluster, or this replica may not act now: not even a read. The shard
		// view's change enqueues it once gained.
		fenced, release, ok := s.Begin(ctx, req.NamespacedName.String())
		if !ok {
			if ownedLater(s.View(), req.NamespacedName.String()) {
				// Its own cluster, at a moment it may not act (its right lapsed until its
				// renewal's list lands): no view change will tell it, so it looks again.
				return ctrl.Result{RequeueAfter: time.Second}, nil
			}
			r.metrics.setJobState(req.NamespacedName, "")
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		defer release()
		ctx = fenced
		// Read after Begin: a view change in between makes this replica distrust what it
		// records now, never the reverse.
		tenure = s.Tenure()
	}
	defer func() {
		r.metrics.observe(err)
		if err != nil {
			r.distrust(req.NamespacedName, tenure)
		}
	}()
	fc, fresh, err := r.readCluster(ctx, req.NamespacedName, tenure)
	if err != nil {
		if apierrors.IsNotFound(err) {
			r.metrics.setJobState(req.NamespacedName, "")
			r.notManaged.Delete(req.NamespacedName)
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading the FlinkCluster: %w", err)
	}
	if !r.Options.Scope.Contains(fc.Namespace, fc.Labels) {
		// Out of the scope (perhaps by a label change): hands off, no write, no Event; objects,
		// status and finalizer stay for whichever controller runs it now.
		r.metrics.setJobState(req.NamespacedName, "")
		r.notManaged.Delete(req.NamespacedName)
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if !fc.Spec.IsApplicationMode() {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, r.reportNotManaged(ctx, fc)
	}
	if fc.DeletionTimestamp != nil {
		r.forget(req.NamespacedName)
		return r.finalize(ctx, fc)
	}
	c := r.newCycle(fc)
	c.fresh, c.tenure = fresh, tenure
	res, err = c.run(ctx)
	if job := c.st.Components.Job; job != nil {
		r.metrics.setJobState(req.NamespacedName, job.State)
	}
	return res, err
}

// ownedLater reports whether a member that may not act on key now owns it by its members:
// its right to act lapsed between a renewal and the list that extends it, which changes no
// view the member's rounds compare (shard.Membership.OnChange), or it is joining.
func ownedLater(v shard.View, key string) bool {
	return !v.Acting && slices.Contains(v.Members, v.Self) && shard.Owner(key, v.Members) == v.Self
}

// forget stops polling a cluster this reconciler no longer runs, and what it knew of it.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.known.Delete(key)
	if r.polls != nil {
		r.polls.Forget(key)
	}
}

// reportNotManaged sets Managed False and records an Event once per generation.
func (r *Reconciler) reportNotManaged(ctx context.Context, fc *v1beta1.FlinkCluster) error {
	orig := fc.DeepCopy()
	cond := managedCondition(fc)
	now := r.Options.Clock.Now()
	setCondition(&fc.Status.Conditions, cond, now)
	// Ready and the generation observed, so that kstatus and kubectl wait see a cluster left
	// alone as done rather than waiting for a condition that never comes.
	setCondition(&fc.Status.Conditions, condition(ConditionReady, metav1.ConditionTrue, cond.Reason,
		cond.Message+": flink-admission has nothing to run; another operator reports its health"), now)
	observedGeneration(fc.Status.Conditions, fc.Generation)
	fc.Status.ObservedGeneration = fc.Generation
	if !equality.Semantic.DeepEqual(orig.Status, fc.Status) {
		// An update, not a patch: another controller may own the rest of this status, so a conflict
		// is retried rather than overwriting its write; the schema also requires the whole status.
		if err := r.Client.Status().Update(ctx, fc); err != nil {
			return fmt.Errorf("writing the not-managed status: %w", err)
		}
		r.wrote(fc)
	}
	key := types.NamespacedName{Namespace: fc.Namespace, Name: fc.Name}
	if g, ok := r.notManaged.Load(key); ok && g.(int64) == fc.Generation {
		return nil
	}
	r.notManaged.Store(key, fc.Generation)
	r.Recorder.Eventf(fc, nil, corev1.EventTypeNormal, ReasonNotManaged, "Observe", "%s", cond.Message)
	return nil
}
