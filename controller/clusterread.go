package controller

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// maxOlderVersions bounds how many versions of a cluster, older than the newest one this
// replica knows, it remembers while its cache has not shown the newest.
const maxOlderVersions = 16

// knownCluster is what this replica knows of a cluster's object beyond its cache: the newest
// version it read from the API server or wrote, under one shard tenure.
type knownCluster struct {
	tenure uint64
	// rv is the newest version's resourceVersion, and obj that version while the cache has
	// not shown it (nil once it has).
	rv  string
	obj *v1beta1.FlinkCluster
	// older are the versions before rv this replica read or wrote, while the cache has not
	// shown rv: a cache that shows one of them is behind this replica's own writes.
	older []string
	// configMapRV is the version of the cluster's Flink ConfigMap this replica last wrote or
	// read from the API server (cycle.ownConfigMap), configMap that version while the cache
	// has not shown it, and configMapOlder the versions before it this replica knew.
	configMapRV    string
	configMap      *corev1.ConfigMap
	configMapOlder []string
	// pristine: this replica added the finalizer to the cluster's untouched version and has
	// created no JobManager since (cycle.pristine).
	pristine bool
}

// readCluster reads a FlinkCluster for a reconcile: from the cache when it shows the newest
// version this replica read or wrote under its tenure (shard.Membership.Tenure), or a cluster
// nothing was recorded on yet (the finalizer's patch and the status write then carry that
// version as a precondition); from this replica's last write when the cache only lags behind
// it; otherwise from the API server (fresh: observe reads pods and HA ConfigMaps there too), so
// that a status another replica wrote is never missed (the fence's proof in controller/shard).
func (r *Reconciler) readCluster(ctx context.Context, key types.NamespacedName, tenure uint64) (fc *v1beta1.FlinkCluster, fresh bool, err error) {
	cached := &v1beta1.FlinkCluster{}
	cerr := r.Client.Get(ctx, key, cached)
	if cerr != nil && !apierrors.IsNotFound(cerr) {
		return nil, false, cerr
	}
	k := r.knownCluster(key, tenure)
	switch {
	case cerr != nil && k == nil:
		// Never seen, or gone: a create is told by the watch, which reconciles it again.
		return nil, false, cerr
	case cerr != nil || cached.DeletionTimestamp != nil:
		// Gone from the cache, or being deleted: the finalizer's work reads fresh.
	case k != nil && cached.ResourceVersion == k.rv:
		k.obj, k.older = nil, nil
		return cached, false, nil
	case k != nil && k.obj != nil && slices.Contains(k.older, cached.ResourceVersion):
		return k.obj.DeepCopy(), false, nil
	case k == nil && untouched(cached):
		r.known.Store(key, &knownCluster{tenure: tenure, rv: cached.ResourceVersion})
		return cached, false, nil
	}
	fc = &v1beta1.FlinkCluster{}
	if err := r.Reader.Get(ctx, key, fc); err != nil {
		r.known.Delete(key)
		return nil, true, err
	}
	r.known.Store(key, &knownCluster{tenure: tenure, rv: fc.ResourceVersion, obj: fc.DeepCopy()})
	return fc, true, nil
}

// untouched reports whether nothing was recorded on a cluster: no finalizer, no status.
func untouched(fc *v1beta1.FlinkCluster) bool {
	return len(fc.Finalizers) == 0 && equality.Semantic.DeepEqual(fc.Status, v1beta1.FlinkClusterStatus{})
}

// knownCluster is what this replica knows of key under tenure; nil when nothing.
func (r *Reconciler) knownCluster(key types.NamespacedName, tenure uint64) *knownCluster {
	v, ok := r.known.Load(key)
	if !ok {
		return nil
	}
	k := v.(*knownCluster)
	if k.tenure != tenure {
		r.known.Delete(key)
		return nil
	}
	return k
}

// wrote records fc, the API server's answer to a write of this replica, as the newest
// version of the cluster. Reconciles of one cluster never overlap (the work queue), so the
// record needs no lock of its own.
func (r *Reconciler) wrote(fc *v1beta1.FlinkCluster) {
	key := types.NamespacedName{Namespace: fc.Namespace, Name: fc.Name}
	v, ok := r.known.Load(key)
	if !ok {
		return
	}
	k := v.(*knownCluster)
	if fc.ResourceVersion == "" || fc.ResourceVersion == k.rv {
		return
	}
	k.older = append(k.older, k.rv)
	if n := len(k.older); n > maxOlderVersions {
		k.older = k.older[n-maxOlderVersions:]
	}
	k.rv, k.obj = fc.ResourceVersion, fc.DeepCopy()
}

// distrust makes the next read of key fresh: after a failed reconcile, this replica's
// record of the cluster may miss a write whose answer it did not get.
func (r *Reconciler) distrust(key types.NamespacedName, tenure uint64) {
	r.known.Store(key, &knownCluster{tenure: tenure})
}
