package controller

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
)

// finalize runs when a FlinkCluster is deleted: the finalizer holds it until the JobManager
// pods are gone; owned objects and the cluster's HA ConfigMaps are removed. No savepoint is
// taken. As in reconcile, the status is patched in a defer, whatever failed, until the
// finalizer is removed and the object goes with its status.
func (r *Reconciler) finalize(ctx context.Context, fc *v1beta1.FlinkCluster) (res ctrl.Result, err error) {
	if !controllerutil.ContainsFinalizer(fc, Finalizer) {
		return ctrl.Result{}, nil
	}
	c := r.newCycle(fc)
	// A cluster being deleted is read from the API server (readCluster), and so are its
	// pods and HA ConfigMaps: the finalizer goes once they are gone.
	c.fresh = true
	released := false
	defer func() {
		if released {
			return
		}
		c.setHealth(err)
		observedGeneration(c.st.Conditions, fc.Generation)
		if werr := c.writeStatus(ctx); werr != nil && !apierrors.IsNotFound(werr) {
			err = errors.Join(err, fmt.Errorf("writeStatus: %w", werr))
		}
	}()
	if err := c.observe(ctx); err != nil {
		return ctrl.Result{}, fmt.Errorf("observe: %w", err)
	}
	c.setClusterState(v1beta1.ClusterStateStopping, ReasonDeleting, "Delete", "FlinkCluster deleted: removing its JobManager, TaskManagers and HA ConfigMaps")
	c.setJobManagerReady()
	if err := c.out.act(c.deleteJobManager(ctx, &c.out.flowOut)); errors.Is(err, errRecordFirst) {
		return ctrl.Result{RequeueAfter: lookAgainNow}, nil
	} else if err != nil {
		return ctrl.Result{}, fmt.Errorf("removing the JobManager: %w", err)
	}
	if err := c.out.act(c.deleteTaskManagers(ctx)); err != nil {
		return ctrl.Result{}, fmt.Errorf("removing the TaskManagers: %w", err)
	}
	if err := c.out.act(c.deleteExtras(ctx)); err != nil {
		return ctrl.Result{}, fmt.Errorf("removing the optional objects: %w", err)
	}
	if c.obs.serviceExists {
		if err := c.deleteObject(ctx, resources.Service(fc, "")); err != nil {
			return ctrl.Result{}, err
		}
	}
	if len(c.obs.pods) > 0 {
		// JobManager pods still terminate: they may still write HA metadata.
		return ctrl.Result{RequeueAfter: r.Options.RequeueInterval}, nil
	}
	if _, err := c.deleteHAConfigMaps(ctx); err != nil {
		return ctrl.Result{}, fmt.Errorf("removing the HA ConfigMaps: %w", err)
	}
	if c.obs.configMapExists {
		cm := &corev1.ConfigMap{}
		cm.Name, cm.Namespace = resources.ConfigMapName(fc.Name), fc.Namespace
		if err := c.deleteObject(ctx, cm); err != nil {
			return ctrl.Result{}, err
		}
	}
	patch := client.MergeFromWithOptions(fc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(fc, Finalizer)
	if err := r.Client.Patch(ctx, fc, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("removing the finalizer: %w", err)
	}
	released = true
	r.metrics.setJobState(client.ObjectKeyFromObject(fc), "")
	return ctrl.Result{}, nil
}
