package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// updatingCluster is a cluster in the middle of an update: final savepoint taken, old
// JobManager Deployment deleted, next revision not created yet.
func updatingCluster(t *testing.T) *v1beta1.FlinkCluster {
	fc := builder.MakeAppCluster("wc").Deployment().Obj()
	fc.Finalizers = []string{Finalizer}
	rev, err := resources.Revision(fc)
	require.NoError(t, err)
	fc.Status.Revision = v1beta1.RevisionStatus{CurrentRevision: "wc-old", NextRevision: rev}
	fc.Status.Components.Job = &v1beta1.JobStatus{
		ID: "0123456789abcdef0123456789abcdef", State: v1beta1.JobStateUpdating, StartTime: "2026-11-30T11:00:00Z",
		SavepointLocation: "file:///savepoints/sp-1", FinalSavepoint: true,
	}
	fc.Status.Savepoint = &v1beta1.SavepointStatus{JobID: "0123456789abcdef0123456789abcdef", TriggerReason: SavepointReasonUpdate, State: SavepointStateSucceeded}
	return fc
}

func reconcilerWith(t *testing.T, fc *v1beta1.FlinkCluster, listPods func() error) (*Reconciler, client.Client) {
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	cl := fake.NewClientBuilder().WithScheme(s).WithObjects(fc).WithStatusSubresource(fc).Build()
	reader := interceptor.NewClient(cl.(client.WithWatch), interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.PodList); ok {
				if err := listPods(); err != nil {
					return err
				}
			}
			return c.List(ctx, list, opts...)
		},
	})
	opts, err := Options{FlinkClientFor: DefaultFlinkClient}.complete()
	require.NoError(t, err)
	m, err := newMetrics(prometheus.NewRegistry())
	require.NoError(t, err)
	return &Reconciler{Client: cl, Reader: reader, Recorder: events.NewFakeRecorder(100), Options: opts, metrics: m}, cl
}

func jobManagerDeployment(t *testing.T, cl client.Client) error {
	return cl.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "wc-jobmanager"}, &appsv1.Deployment{})
}

func TestPodListErrorIsNeverNoPodsLeft(t *testing.T) {
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "wc"}}

	r, cl := reconcilerWith(t, updatingCluster(t), func() error { return errors.New("etcdserver: request timed out") })
	_, err := r.Reconcile(context.Background(), req)
	require.Error(t, err, "the pod-list error is returned")
	assert.True(t, apierrors.IsNotFound(jobManagerDeployment(t, cl)), "no next revision while the old pods are unknown")

	// The same cluster with a pod list that works: the next revision is created.
	r, cl = reconcilerWith(t, updatingCluster(t), func() error { return nil })
	_, err = r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.True(t, apierrors.IsNotFound(jobManagerDeployment(t, cl)), "the next revision's job is recorded before its JobManager is created")
	_, err = r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	require.NoError(t, jobManagerDeployment(t, cl), "with no old pod left the next revision starts")
	d := &appsv1.Deployment{}
	require.NoError(t, cl.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "wc-jobmanager"}, d))
	cm := &corev1.ConfigMap{}
	require.NoError(t, cl.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: resources.ConfigMapName("wc")}, cm))
	assert.Contains(t, cm.Data[resources.ConfigFileName(updatingCluster(t))], resources.KeySavepointPath+": file:///savepoints/sp-1",
		"the next revision restores the final savepoint")
}

// A JobManager Deployment deleted without the controller's scale-down (by a user, in the
// background) leaves its ReplicaSet alive until the garbage collector reaches it, and a
// ReplicaSet replaces a deleted pod with a new JobManager beside the old one. The controller
// deletes the old JobManager pods it waits for, but never one a ReplicaSet controls: that one
// goes with its ReplicaSet.
func TestJobManagerPodsAReplicaSetControlsAreLeftToIt(t *testing.T) {
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "wc"}}
	r, cl := reconcilerWith(t, updatingCluster(t), func() error { return nil })
	pod := func(name string, owner *metav1.OwnerReference) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels: resources.SelectorLabels("wc", resources.ComponentJobManager)},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		require.NoError(t, cl.Create(ctx, p))
		return p
	}
	ofReplicaSet := pod("wc-jobmanager-5d8f-abcde", &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet",
		Name: "wc-jobmanager-5d8f", UID: "rs", Controller: ptr.To(true)})
	unowned := pod("wc-jobmanager-left", nil)

	_, err := r.Reconcile(ctx, req)
	require.NoError(t, err)
	assert.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(ofReplicaSet), &corev1.Pod{}), "a ReplicaSet's pod is left to it")
	assert.True(t, apierrors.IsNotFound(cl.Get(ctx, client.ObjectKeyFromObject(unowned), &corev1.Pod{})), "a pod no ReplicaSet controls is deleted")
	assert.True(t, apierrors.IsNotFound(jobManagerDeployment(t, cl)), "no next revision while an old JobManager pod runs")
}

// A cluster nothing was ever done to is created from the caches: no JobManager of it can
// exist, so no pod list confirms their absence from the API server. One that was touched
// before (its finalizer set) is confirmed: its JobManager pods are listed from the API server.
func TestAPristineClusterIsCreatedWithoutConfirmingItsPodsAreGone(t *testing.T) {
	for _, tc := range []struct {
		name      string
		finalizer bool
		wantReads bool
	}{
		{name: "untouched", finalizer: false, wantReads: false},
		{name: "touched before", finalizer: true, wantReads: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := builder.MakeAppCluster("wc").Deployment().Obj()
			if tc.finalizer {
				fc.Finalizers = []string{Finalizer}
			}
			reads := 0
			r, cl := reconcilerWith(t, fc, func() error { reads++; return nil })
			for range 2 { // the deploy recorded, then created
				_, err := r.Reconcile(context.Background(), reqFor(fc))
				require.NoError(t, err)
			}
			require.NoError(t, jobManagerDeployment(t, cl), "the JobManager is created")
			assert.Equal(t, tc.wantReads, reads > 0, "JobManager pods listed from the API server %d times", reads)
		})
	}
}
