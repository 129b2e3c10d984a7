package resources

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// InternalLoadBalancerAnnotations make an accessScope VPC Service's load balancer internal. Each
// cloud reads only its own, so GKE's (as the flink-on-k8s-operator), AWS's and Azure's are all
// written; the user's serviceAnnotations win.
func InternalLoadBalancerAnnotations() map[string]string {
	return map[string]string{
		"networking.gke.io/load-balancer-type":                         "Internal",
		"networking.gke.io/internal-load-balancer-allow-global-access": "true",
		"service.beta.kubernetes.io/aws-load-balancer-internal":        "true",
		"service.beta.kubernetes.io/aws-load-balancer-scheme":          "internal",
		"service.beta.kubernetes.io/azure-load-balancer-internal":      "true",
	}
}

// Service builds the JobManager Service over JobManager pods of every revision, so the controller
// waits for every old JobManager pod to be gone before it starts the next revision.
func Service(fc *v1beta1.FlinkCluster, revision string) *corev1.Service {
	rpc, blob, query, ui := JobManagerPorts(fc)
	svc := &corev1.Service{
		ObjectMeta: objectMeta(fc, JobManagerName(fc.Name), componentLabels(fc.Name, ComponentJobManager, revision)),
		Spec: corev1.ServiceSpec{
			Selector: SelectorLabels(fc.Name, ComponentJobManager),
			Ports: []corev1.ServicePort{
				{Name: "rpc", Port: rpc, TargetPort: intstr.FromString("rpc")},
				{Name: "blob", Port: blob, TargetPort: intstr.FromString("blob")},
				{Name: "query", Port: query, TargetPort: intstr.FromString("query")},
				{Name: "ui", Port: ui, TargetPort: intstr.FromString("ui")},
			},
			Type: corev1.ServiceTypeClusterIP,
		},
	}
	if jm := fc.Spec.JobManager; jm != nil {
		if len(jm.ServiceLabels) > 0 {
			l := maps.Clone(jm.ServiceLabels)
			maps.Copy(l, svc.Labels)
			svc.Labels = l
		}
		svc.Annotations = maps.Clone(jm.ServiceAnnotations)
		switch jm.AccessScope {
		case v1beta1.AccessScopeVPC:
			svc.Spec.Type = corev1.ServiceTypeLoadBalancer
			ann := InternalLoadBalancerAnnotations()
			maps.Copy(ann, jm.ServiceAnnotations)
			svc.Annotations = ann
		case v1beta1.AccessScopeExternal:
			svc.Spec.Type = corev1.ServiceTypeLoadBalancer
		case v1beta1.AccessScopeNodePort:
			svc.Spec.Type = corev1.ServiceTypeNodePort
		case v1beta1.AccessScopeHeadless:
			svc.Spec.ClusterIP = corev1.ClusterIPNone
		}
	}
	return svc
}
