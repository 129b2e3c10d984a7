package realplane_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// TestOptionalObjectsGarbageCollected: on the real control plane, an Ingress and a
// PodDisruptionBudget added to a running cluster are created in place (the job keeps its
// ID), owned by the FlinkCluster, and go with it: deleted without the controller's
// finalizer, the real garbage collector removes them (should the controller put its
// finalizer back first, its deletion step removes them).
func TestOptionalObjectsGarbageCollected(t *testing.T) {
	t.Parallel()
	h := newHarness(t, depMode, nil)
	h.runJob()
	id := h.jobID()

	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fc := h.get()
		fc.Spec.JobManager.Ingress = &v1beta1.JobManagerIngressSpec{HostFormat: ptr.To("{{$clusterName}}.example.com")}
		fc.Spec.PodDisruptionBudget = &policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1))}
		return k8s.Update(h.ctx, fc)
	}))
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: h.ns, Name: name} }
	owned := func(obj client.Object, name string) bool {
		return k8s.Get(h.ctx, key(name), obj) == nil && metav1.IsControlledBy(obj, h.get())
	}
	h.eventually("the Ingress and the PodDisruptionBudget", func() bool {
		return owned(&networkingv1.Ingress{}, "wc-jobmanager") && owned(&policyv1.PodDisruptionBudget{}, "flink-wc")
	})
	pdb := &policyv1.PodDisruptionBudget{}
	require.NoError(t, k8s.Get(h.ctx, key("flink-wc"), pdb))
	// The real disruption controller is not running: the budget's status stays empty, but
	// its selector is the cluster's pods.
	assert.Equal(t, map[string]string{"app": "flink", "cluster": "wc"}, pdb.Spec.Selector.MatchLabels)
	assert.Equal(t, id, h.job().ID, "added in place: no redeploy")

	// retire removes the finalizer and deletes the FlinkCluster: what is left is the
	// garbage collector's work.
	h.retire()
	gone := func(obj client.Object, name string) bool {
		return apierrors.IsNotFound(k8s.Get(h.ctx, key(name), obj))
	}
	h.eventually("the Ingress and the PodDisruptionBudget garbage-collected", func() bool {
		return gone(&networkingv1.Ingress{}, "wc-jobmanager") && gone(&policyv1.PodDisruptionBudget{}, "flink-wc")
	})
}
