package controller

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// TestCacheSelectsEveryOwnedObject: every object and pod the resources package builds is in
// the restricted cache's view, for both deployment types; the HA ConfigMaps Flink creates are
// not, which is why their cleanup lists them from the API server.
func TestCacheSelectsEveryOwnedObject(t *testing.T) {
	by := CacheOptions().ByObject
	selector := func(obj client.Object) labels.Selector {
		for o, b := range by {
			if fmt.Sprintf("%T", o) == fmt.Sprintf("%T", obj) {
				return b.Label
			}
		}
		t.Fatalf("%T is not in the cache options", obj)
		return nil
	}
	assert.Len(t, by, 9, "Pod, ConfigMap, Service, Job, Deployment, StatefulSet, Ingress, PodDisruptionBudget, HorizontalPodAutoscaler")

	for _, w := range []*builder.FlinkClusterWrapper{builder.MakeAppCluster("wc"), builder.MakeAppCluster("wc").Deployment().TaskManagerDeploymentType(v1beta1.TaskManagerDeploymentTypeDeployment)} {
		fc := w.Obj()
		fc.Spec.JobManager.Ingress = &v1beta1.JobManagerIngressSpec{}
		fc.Spec.PodDisruptionBudget = &policyv1.PodDisruptionBudgetSpec{}
		fc.Spec.TaskManager.HorizontalPodAutoscaler = &v1beta1.HorizontalPodAutoscalerSpec{MaxReplicas: 4}
		fc.Spec.JobManager.PodLabels = map[string]string{"app": "mine", "team": "a"}
		fc.Spec.JobManager.ServiceLabels = map[string]string{"app": "mine"}
		d := resources.Deploy{Revision: "wc-r1", JobID: "0123456789abcdef0123456789abcdef"}
		cm, err := resources.ConfigMap(fc, d)
		require.NoError(t, err)
		job := resources.JobManagerJob(fc, d)
		dep := resources.JobManagerDeployment(fc, d, 1)
		sts := resources.TaskManagerStatefulSet(fc, "wc-r1")
		tmDep := resources.TaskManagerDeployment(fc, "wc-r1")
		objects := []client.Object{cm, resources.Service(fc, "wc-r1"), job, dep, sts, tmDep,
			resources.Ingress(fc, "wc-r1"), resources.PodDisruptionBudget(fc, "wc-r1"), resources.HorizontalPodAutoscaler(fc, "wc-r1"),
			&corev1.Pod{ObjectMeta: job.Spec.Template.ObjectMeta},
			&corev1.Pod{ObjectMeta: dep.Spec.Template.ObjectMeta},
			&corev1.Pod{ObjectMeta: sts.Spec.Template.ObjectMeta},
			&corev1.Pod{ObjectMeta: tmDep.Spec.Template.ObjectMeta},
		}
		for _, obj := range objects {
			assert.True(t, selector(obj).Matches(labels.Set(obj.GetLabels())), "%T %s with labels %v is cached", obj, obj.GetName(), obj.GetLabels())
		}
	}

	ha := labels.Set(flinkha.Labels("wc"))
	assert.False(t, selector(&corev1.ConfigMap{}).Matches(ha), "Flink's HA ConfigMaps are outside the cache")
}

// cacheView makes cl answer Gets as the restricted cache does: objects without the
// controller's label are not found (FlinkClusters, which it caches whole, excepted).
func cacheView(cl client.Client) client.Client {
	return interceptor.NewClient(cl.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if _, cluster := obj.(*v1beta1.FlinkCluster); !cluster && obj.GetLabels()[resources.LabelApp] != resources.AppFlink {
				return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
			}
			return nil
		},
	})
}

// TestObjectsOutsideTheCache: a same-named object without the controller's label is
// invisible to the cache, and creating ours fails with AlreadyExists. The controller reads it
// from the API server: someone else's is reported, never taken for its own; its own, whose
// label was removed, gets the label back.
func TestObjectsOutsideTheCache(t *testing.T) {
	ctx := context.Background()
	fc := builder.MakeAppCluster("wc").Obj()
	cmKey := client.ObjectKey{Namespace: fc.Namespace, Name: resources.ConfigMapName(fc.Name)}
	jmKey := client.ObjectKey{Namespace: fc.Namespace, Name: resources.JobManagerName(fc.Name)}

	t.Run("someone else's object is reported", func(t *testing.T) {
		r, cl := reconcilerWith(t, fc, func() error { return nil })
		foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmKey.Name, Namespace: cmKey.Namespace,
			Labels: map[string]string{"app": "someone-else"}}}
		require.NoError(t, cl.Create(ctx, foreign))
		r.Client = cacheView(cl)
		_, err := r.Reconcile(ctx, reqFor(fc))
		require.NoError(t, err, "the first reconcile records the deploy")
		_, err = r.Reconcile(ctx, reqFor(fc))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "wc-configmap exists and is not owned by FlinkCluster wc")
		assert.True(t, apierrors.IsNotFound(cl.Get(ctx, jmKey, &batchv1.Job{})), "no JobManager next to someone else's configuration")
		got := &corev1.ConfigMap{}
		require.NoError(t, cl.Get(ctx, cmKey, got))
		assert.Equal(t, "someone-else", got.Labels["app"], "the foreign ConfigMap is untouched")
	})

	t.Run("our object without its label is labelled again", func(t *testing.T) {
		r, cl := reconcilerWith(t, fc, func() error { return nil })
		require.NoError(t, cl.Get(ctx, keyOf(fc), fc))
		rev, err := resources.Revision(fc)
		require.NoError(t, err)
		own, err := resources.ConfigMap(fc, resources.Deploy{Revision: rev})
		require.NoError(t, err)
		// Written by the controller from this very spec (same hash), then the label removed.
		hash, err := hashOf(own)
		require.NoError(t, err)
		own.Annotations = map[string]string{specHashAnnotation: hash}
		delete(own.Labels, resources.LabelApp)
		require.NoError(t, cl.Create(ctx, own))
		r.Client = cacheView(cl)
		for range 2 { // the deploy recorded, then created
			_, err = r.Reconcile(ctx, reqFor(fc))
			require.NoError(t, err)
		}
		got := &corev1.ConfigMap{}
		require.NoError(t, cl.Get(ctx, cmKey, got))
		assert.Equal(t, resources.AppFlink, got.Labels[resources.LabelApp], "back in the cache's view")
		assert.NoError(t, cl.Get(ctx, jmKey, &batchv1.Job{}), "the JobManager is created")
	})
}
