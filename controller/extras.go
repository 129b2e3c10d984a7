package controller

import (
	"context"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
)

// The objects a cluster has only when its spec asks for them (jobManager.ingress,
// podDisruptionBudget, taskManager.horizontalPodAutoscaler): applied with the other components,
// deleted when the spec stops asking or by a cleanup, owned by the FlinkCluster.

// applyExtras writes the optional objects of the current spec and deletes those it no
// longer asks for. It returns the Ingress as the API server has it, for the status (its URLs).
func (c *cycle) applyExtras(ctx context.Context) (ingress *networkingv1.Ingress, err error) {
	rev := c.st.Revision.CurrentRevision
	name := c.fc.Name
	if in := resources.Ingress(c.fc, rev); in != nil {
		cur := &networkingv1.Ingress{}
		if _, err := applyOwned(ctx, c, in, cur, func(cur, des *networkingv1.Ingress) {
			cur.Spec = des.Spec
		}); err != nil {
			return nil, err
		}
		if cur.Name == "" {
			cur = in // just created: no load balancer yet
		}
		ingress = cur
	} else if err := c.deleteOwned(ctx, &networkingv1.Ingress{}, resources.IngressName(name)); err != nil {
		return nil, err
	}
	if pdb := resources.PodDisruptionBudget(c.fc, rev); pdb != nil {
		if _, err := applyOwned(ctx, c, pdb, &policyv1.PodDisruptionBudget{}, func(cur, des *policyv1.PodDisruptionBudget) {
			cur.Spec = des.Spec
		}); err != nil {
			return ingress, err
		}
	} else if err := c.deleteOwned(ctx, &policyv1.PodDisruptionBudget{}, resources.PodDisruptionBudgetName(name)); err != nil {
		return ingress, err
	}
	if hpa := resources.HorizontalPodAutoscaler(c.fc, rev); hpa != nil {
		if _, err := applyOwned(ctx, c, hpa, &autoscalingv2.HorizontalPodAutoscaler{}, func(cur, des *autoscalingv2.HorizontalPodAutoscaler) {
			cur.Spec = des.Spec
		}); err != nil {
			return ingress, err
		}
	} else if err := c.deleteOwned(ctx, &autoscalingv2.HorizontalPodAutoscaler{}, resources.HorizontalPodAutoscalerName(name)); err != nil {
		return ingress, err
	}
	return ingress, nil
}

// deleteExtras deletes every optional object the cluster owns (a cleanup that deletes the
// cluster's objects, the FlinkCluster's deletion).
func (c *cycle) deleteExtras(ctx context.Context) (acted, error) {
	name := c.fc.Name
	for _, o := range []struct {
		obj  client.Object
		name string
	}{
		{&networkingv1.Ingress{}, resources.IngressName(name)},
		{&policyv1.PodDisruptionBudget{}, resources.PodDisruptionBudgetName(name)},
		{&autoscalingv2.HorizontalPodAutoscaler{}, resources.HorizontalPodAutoscalerName(name)},
	} {
		if err := c.deleteOwned(ctx, o.obj, o.name); err != nil {
			return acted{}, err
		}
	}
	return acted{ingressApplied: true}, nil
}

// deleteOwned deletes the named object when the cluster owns it; a same-named object of
// someone else's is left alone.
func (c *cycle) deleteOwned(ctx context.Context, obj client.Object, name string) error {
	if err := c.r.Client.Get(ctx, c.key(name), obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !metav1.IsControlledBy(obj, c.fc) || obj.GetDeletionTimestamp() != nil {
		return nil
	}
	return c.deleteObject(ctx, obj)
}

// jobManagerIngressStatus is the status of the JobManager Ingress, with its URLs, as the operator's: Ready
// once its load balancer has an address.
func jobManagerIngressStatus(prev *v1beta1.JobManagerIngressStatus, in *networkingv1.Ingress) *v1beta1.JobManagerIngressStatus {
	if in == nil {
		if prev != nil {
			return &v1beta1.JobManagerIngressStatus{Name: prev.Name, State: v1beta1.ComponentStateDeleted}
		}
		return nil
	}
	urls, ready := resources.IngressURLs(in)
	st := v1beta1.ComponentStateNotReady
	if ready {
		st = v1beta1.ComponentStateReady
	}
	return &v1beta1.JobManagerIngressStatus{Name: in.Name, State: st, URLs: urls}
}
