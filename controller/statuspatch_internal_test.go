package controller

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// A reconcile whose observation fails still patches the status: Reconciling says that the
// reconcile failed and why, stamped with the generation, while what only the observation
// could say (components, cluster state, status.observedGeneration) keeps its record — and a
// new cluster gets the state the schema requires.
func TestStatusIsPatchedWhenObserveFails(t *testing.T) {
	newCluster := func(t *testing.T) *v1beta1.FlinkCluster {
		fc := builder.MakeAppCluster("wc").Deployment().Obj()
		fc.Finalizers = []string{Finalizer}
		return fc
	}
	for _, tc := range []struct {
		name      string
		cluster   func(*testing.T) *v1beta1.FlinkCluster
		wantState string
	}{
		{"an update in progress keeps its recorded state", func(t *testing.T) *v1beta1.FlinkCluster {
			fc := updatingCluster(t)
			fc.Status.State = v1beta1.ClusterStateUpdating
			fc.Status.ObservedGeneration = 1
			return fc
		}, v1beta1.ClusterStateUpdating},
		{"a new cluster is Creating", newCluster, v1beta1.ClusterStateCreating},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := tc.cluster(t)
			fc.Generation = 2
			before := fc.Status.DeepCopy()
			r, cl := reconcilerWith(t, fc, func() error { return errors.New("etcdserver: request timed out") })
			_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "wc"}})
			require.ErrorContains(t, err, "observe", "the observation's error is returned")

			got := &v1beta1.FlinkCluster{}
			require.NoError(t, cl.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "wc"}, got))
			rec := meta.FindStatusCondition(got.Status.Conditions, ConditionReconciling)
			require.NotNil(t, rec, "the status was patched: %+v", got.Status)
			assert.Equal(t, metav1.ConditionTrue, rec.Status)
			assert.Equal(t, ConditionReasonReconcileFailed, rec.Reason)
			assert.Contains(t, rec.Message, "etcdserver: request timed out")
			assert.Equal(t, int64(2), rec.ObservedGeneration)
			if ready := meta.FindStatusCondition(got.Status.Conditions, ConditionReady); assert.NotNil(t, ready) {
				assert.Equal(t, metav1.ConditionFalse, ready.Status)
			}
			assert.Equal(t, tc.wantState, got.Status.State)
			assert.Equal(t, before.ObservedGeneration, got.Status.ObservedGeneration, "nothing was observed for generation 2")
			assert.Equal(t, before.Components.JobManager, got.Status.Components.JobManager, "components are the observation's")
			assert.Nil(t, meta.FindStatusCondition(got.Status.Conditions, ConditionJobManagerReady), "no condition derived from a failed observation")
		})
	}
}

// A deleted cluster's finalize patches the status in a defer too: when its observation fails,
// Reconciling says so while the finalizer holds the object; once the JobManager pods are gone
// the finalizer is released and nothing more is written.
func TestFinalizePatchesTheStatusWhenObserveFails(t *testing.T) {
	fc := updatingCluster(t)
	fc.Generation = 3
	now := metav1.Now()
	fc.DeletionTimestamp = &now
	listErr := errors.New("etcdserver: request timed out")
	r, cl := reconcilerWith(t, fc, func() error { return listErr })
	key := types.NamespacedName{Namespace: "default", Name: "wc"}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
	require.ErrorContains(t, err, "observe")

	got := &v1beta1.FlinkCluster{}
	require.NoError(t, cl.Get(context.Background(), key, got))
	rec := meta.FindStatusCondition(got.Status.Conditions, ConditionReconciling)
	require.NotNil(t, rec, "the status was patched: %+v", got.Status)
	assert.Equal(t, ConditionReasonReconcileFailed, rec.Reason)
	assert.Contains(t, rec.Message, "etcdserver: request timed out")
	assert.Equal(t, int64(3), rec.ObservedGeneration)
	assert.Contains(t, got.Finalizers, Finalizer, "the finalizer holds the object")

	listErr = nil
	_, err = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key})
	require.NoError(t, err)
	err = cl.Get(context.Background(), key, got)
	assert.True(t, err != nil || !slices.Contains(got.Finalizers, Finalizer), "the finalizer is released")
}

// failingPatches makes every patch of the FlinkCluster's object (not its status) fail.
func failingPatches(cl client.Client) client.Client {
	return interceptor.NewClient(cl.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*v1beta1.FlinkCluster); ok {
				return errors.New("etcdserver: request timed out")
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
}

// The status is written on every path after the cluster was read: when adding the finalizer
// fails, and when removing an annotation fails, Reconciling says which step failed and why.
func TestStatusSaysWhichWriteOfTheClusterFailed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster func() *v1beta1.FlinkCluster
		step    string
	}{
		{"the finalizer", func() *v1beta1.FlinkCluster { return builder.MakeAppCluster("wc").Deployment().Obj() }, "addFinalizer"},
		{"a control ignored while another is in flight", func() *v1beta1.FlinkCluster {
			fc := builder.MakeAppCluster("wc").Deployment().Obj()
			fc.Finalizers = []string{Finalizer}
			fc.Annotations = map[string]string{v1beta1.ControlAnnotation: v1beta1.ControlNameSavepoint}
			fc.Status.Control = &v1beta1.FlinkClusterControlStatus{Name: v1beta1.ControlNameSavepoint, State: v1beta1.ControlStateInProgress}
			return fc
		}, "removeControlAnnotation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := tc.cluster()
			r, cl := reconcilerWith(t, fc, func() error { return nil })
			r.Client = failingPatches(cl)
			_, err := r.Reconcile(t.Context(), reqFor(fc))
			require.ErrorContains(t, err, tc.step)

			got := &v1beta1.FlinkCluster{}
			require.NoError(t, cl.Get(t.Context(), keyOf(fc), got))
			rec := meta.FindStatusCondition(got.Status.Conditions, ConditionReconciling)
			require.NotNil(t, rec, "the status was written: %+v", got.Status)
			assert.Equal(t, ConditionReasonReconcileFailed, rec.Reason)
			assert.Contains(t, rec.Message, tc.step+": etcdserver: request timed out")
			assert.NotEmpty(t, got.Status.State, "the schema requires a state")
		})
	}
}
