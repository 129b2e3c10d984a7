package realplane_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// TestOptionalObjects: an Ingress, a PodDisruptionBudget and an autoscaler the spec asks for
// are created and owned by the cluster, the Ingress's URL reaches the status once its load
// balancer has an address, and each is deleted when the spec stops asking for it, without
// a redeploy of the job.
func TestOptionalObjects(t *testing.T) {
	t.Parallel()
	h := newHarness(t, depMode, func(w *builder.FlinkClusterWrapper) {
		w.JobManager(func(jm *v1beta1.JobManagerSpec) {
			jm.Ingress = &v1beta1.JobManagerIngressSpec{HostFormat: ptr.To("{{$clusterName}}.flink.example.com")}
		})
		w.Spec(func(s *v1beta1.FlinkClusterSpec) {
			s.PodDisruptionBudget = &policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1))}
		})
		w.TaskManager(func(tm *v1beta1.TaskManagerSpec) {
			tm.HorizontalPodAutoscaler = &v1beta1.HorizontalPodAutoscalerSpec{MaxReplicas: 4}
		})
	})
	h.runJob()
	jobID := h.jobID()

	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: h.ns, Name: name} }
	owned := func(obj client.Object, name string) bool {
		if err := k8s.Get(h.ctx, key(name), obj); err != nil {
			return false
		}
		return metav1.IsControlledBy(obj, h.get())
	}
	in := &networkingv1.Ingress{}
	h.eventually("the Ingress", func() bool { return owned(in, "wc-jobmanager") })
	assert.Equal(t, "wc.flink.example.com", in.Spec.Rules[0].Host)
	pdb := &policyv1.PodDisruptionBudget{}
	h.eventually("the PodDisruptionBudget", func() bool { return owned(pdb, "flink-wc") })
	assert.Equal(t, map[string]string{"app": "flink", "cluster": "wc"}, pdb.Spec.Selector.MatchLabels)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	h.eventually("the HorizontalPodAutoscaler", func() bool { return owned(hpa, "flink-wc") })
	assert.Equal(t, "FlinkCluster", hpa.Spec.ScaleTargetRef.Kind)

	// The ingress controller gives the Ingress an address.
	in.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.7"}}
	require.NoError(t, k8s.Status().Update(h.ctx, in))
	h.eventually("the Ingress URL in the status", func() bool {
		s := h.get().Status.Components.JobManagerIngress
		return s != nil && s.State == v1beta1.ComponentStateReady && len(s.URLs) == 1 && s.URLs[0] == "http://wc.flink.example.com"
	})

	h.patch(func(fc *v1beta1.FlinkCluster) {
		fc.Spec.JobManager.Ingress = nil
		fc.Spec.PodDisruptionBudget = nil
		fc.Spec.TaskManager.HorizontalPodAutoscaler = nil
	})
	gone := func(obj client.Object, name string) bool {
		err := k8s.Get(h.ctx, key(name), obj)
		return apierrors.IsNotFound(err) || (err == nil && obj.GetDeletionTimestamp() != nil)
	}
	h.eventually("the optional objects deleted", func() bool {
		return gone(&networkingv1.Ingress{}, "wc-jobmanager") && gone(&policyv1.PodDisruptionBudget{}, "flink-wc") &&
			gone(&autoscalingv2.HorizontalPodAutoscaler{}, "flink-wc")
	})
	h.eventually("the Ingress status Deleted", func() bool {
		s := h.get().Status.Components.JobManagerIngress
		return s != nil && s.State == v1beta1.ComponentStateDeleted
	})
	assert.Equal(t, jobID, h.jobID(), "no redeploy: the optional objects are not part of the revision")
	assert.Equal(t, v1beta1.JobStateRunning, h.jobState())
}
