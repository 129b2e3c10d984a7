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
// taken. As in reconcile, its steps are a list, and the status is patched in a defer, whatever
// failed, until the finalizer is removed and the object goes with its status.
func (r *Reconciler) finalize(ctx context.Context, fc *v1beta1.FlinkCluster) (res ctrl.Result, err error) {
	if !controllerutil.ContainsFinalizer(fc, Finalizer) {
		return ctrl.Result{}, nil
	}
	c := r.newCycle(fc)
	// A cluster being deleted is read from the API server (readCluster), and so are its
	// pods and HA ConfigMaps: the finalizer goes once they are gone.
	c.fresh = true
	defer func() {
		if c.out.released {
			r.metrics.setJobState(client.ObjectKeyFromObject(fc), "")
			return
		}
		c.setHealth(err)
		observedGeneration(c.st.Conditions, fc.Generation)
		if werr := c.writeRecord(ctx); werr != nil && !apierrors.IsNotFound(werr) {
			err = errors.Join(err, fmt.Errorf("writeStatus: %w", werr))
		}
		if err == nil {
			res = ctrl.Result{RequeueAfter: c.out.requeue}
		}
	}()
	return ctrl.Result{}, runSteps(ctx, c, finalizeSteps)
}

// errNotYet ends a reconcile's steps without failing: what is left waits for a later look,
// which the step asked for.
var errNotYet = errors.New("waiting before the next step")

// finalizeSteps are a deleted cluster's reconcile in order: its objects removed, its HA
// ConfigMaps once no JobManager pod may write them any more, then the finalizer.
var finalizeSteps = []step{
	{name: "observe", run: (*cycle).observe},
	{name: "announceDeletion", run: (*cycle).announceDeletion},
	{name: "deleteJobManager", run: func(c *cycle, ctx context.Context) error {
		return c.out.act(c.deleteJobManager(ctx, &c.out.flowOut))
	}},
	{name: "deleteTaskManagers", run: func(c *cycle, ctx context.Context) error { return c.out.act(c.deleteTaskManagers(ctx)) }},
	{name: "deleteExtras", run: func(c *cycle, ctx context.Context) error { return c.out.act(c.deleteExtras(ctx)) }},
	{name: "deleteService", run: func(c *cycle, ctx context.Context) error {
		if !c.obs.serviceExists {
			return nil
		}
		return c.deleteObject(ctx, resources.Service(c.fc, ""))
	}},
	{name: "awaitJobManagerPods", run: func(c *cycle, _ context.Context) error {
		if len(c.obs.pods) == 0 {
			return nil
		}
		// JobManager pods still terminate: they may still write HA metadata.
		c.out.after(c.r.Options.RequeueInterval)
		return errNotYet
	}},
	{name: "deleteHAConfigMaps", run: func(c *cycle, ctx context.Context) error {
		_, err := c.deleteHAConfigMaps(ctx)
		return err
	}},
	{name: "deleteConfigMap", run: func(c *cycle, ctx context.Context) error {
		if !c.obs.configMapExists {
			return nil
		}
		cm := &corev1.ConfigMap{}
		cm.Name, cm.Namespace = resources.ConfigMapName(c.fc.Name), c.fc.Namespace
		return c.deleteObject(ctx, cm)
	}},
	{name: "removeFinalizer", run: (*cycle).removeFinalizer},
}

// announceDeletion records that the cluster stops because it was deleted.
func (c *cycle) announceDeletion(context.Context) error {
	c.setClusterState(v1beta1.ClusterStateStopping, ReasonDeleting, "Delete", "FlinkCluster deleted: removing its JobManager, TaskManagers and HA ConfigMaps")
	c.setJobManagerReady()
	return nil
}

// removeFinalizer releases the cluster, which then goes with its status.
func (c *cycle) removeFinalizer(ctx context.Context) error {
	patch := client.MergeFromWithOptions(c.fc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(c.fc, Finalizer)
	if err := c.r.Client.Patch(ctx, c.fc, patch); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	c.out.released = true
	return nil
}
