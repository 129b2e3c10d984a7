package resources

import (
	"maps"
	"regexp"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// IngressName is the name of the JobManager Ingress (the Service's, another kind).
func IngressName(clusterName string) string { return clusterName + "-jobmanager" }

// PodDisruptionBudgetName and HorizontalPodAutoscalerName are the flink-on-k8s-operator's, so that
// a migrated cluster's objects are found again.
func PodDisruptionBudgetName(clusterName string) string { return "flink-" + clusterName }

// HorizontalPodAutoscalerName is the name of the TaskManagers' autoscaler.
func HorizontalPodAutoscalerName(clusterName string) string { return "flink-" + clusterName }

func clusterLabels(clusterName string) map[string]string {
	return map[string]string{LabelApp: AppFlink, LabelCluster: clusterName}
}

// hostFormatVar is hostFormat's placeholder, spaced as the operator accepts.
var hostFormatVar = regexp.MustCompile(`{{\s*[$]clusterName\s*}}`)

// IngressHost is hostFormat with the cluster's name for {{$clusterName}}; "" (every host) without.
func IngressHost(fc *v1beta1.FlinkCluster) string {
	in := fc.Spec.JobManager.Ingress
	if in == nil || in.HostFormat == nil {
		return ""
	}
	return hostFormatVar.ReplaceAllString(*in.HostFormat, fc.Name)
}

// Ingress builds the Ingress of jobManager.ingress to the JobManager Service's ui port, with TLS
// when useTls is set; nil when none is asked for.
func Ingress(fc *v1beta1.FlinkCluster, revision string) *networkingv1.Ingress {
	jm := fc.Spec.JobManager
	if jm == nil || jm.Ingress == nil {
		return nil
	}
	spec := jm.Ingress
	host := IngressHost(fc)
	var tls []networkingv1.IngressTLS
	if ptr.Deref(spec.UseTLS, false) {
		t := networkingv1.IngressTLS{SecretName: ptr.Deref(spec.TLSSecretName, "")}
		if host != "" {
			t.Hosts = []string{host}
		}
		if t.SecretName != "" || len(t.Hosts) > 0 {
			tls = []networkingv1.IngressTLS{t}
		}
	}
	in := &networkingv1.Ingress{
		ObjectMeta: objectMeta(fc, IngressName(fc.Name), componentLabels(fc.Name, ComponentJobManager, revision)),
		Spec: networkingv1.IngressSpec{
			TLS: tls,
			Rules: []networkingv1.IngressRule{{
				Host: host,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     "/",
						PathType: ptr.To(networkingv1.PathTypePrefix),
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: JobManagerName(fc.Name),
							Port: networkingv1.ServiceBackendPort{Name: "ui"},
						}},
					}},
				}},
			}},
		},
	}
	in.Annotations = maps.Clone(spec.Annotations)
	return in
}

// IngressURLs are the JobManager UI's URLs as the operator reports them: https:// per TLS host,
// else http:// per rule host, else the load balancer's addresses; ready is whether it has one.
func IngressURLs(in *networkingv1.Ingress) (urls []string, ready bool) {
	scheme := "http://"
	if len(in.Spec.TLS) > 0 {
		scheme = "https://"
		for _, t := range in.Spec.TLS {
			for _, h := range t.Hosts {
				if h != "" {
					urls = append(urls, scheme+h)
				}
			}
		}
	} else {
		for _, r := range in.Spec.Rules {
			if r.Host != "" {
				urls = append(urls, scheme+r.Host)
			}
		}
	}
	hosts := len(urls) > 0
	for _, lb := range in.Status.LoadBalancer.Ingress {
		addr := lb.Hostname
		if addr == "" {
			addr = lb.IP
		}
		if addr == "" {
			continue
		}
		ready = true
		if !hosts {
			urls = append(urls, scheme+addr)
		}
	}
	return urls, ready
}

// PodDisruptionBudget builds spec.podDisruptionBudget, its selector narrowed by the cluster's
// labels so it never selects another cluster's pods; nil when none is asked for.
func PodDisruptionBudget(fc *v1beta1.FlinkCluster, revision string) *policyv1.PodDisruptionBudget {
	if fc.Spec.PodDisruptionBudget == nil {
		return nil
	}
	spec := *fc.Spec.PodDisruptionBudget.DeepCopy()
	if spec.Selector == nil {
		spec.Selector = &metav1.LabelSelector{}
	}
	if spec.Selector.MatchLabels == nil {
		spec.Selector.MatchLabels = map[string]string{}
	}
	maps.Copy(spec.Selector.MatchLabels, clusterLabels(fc.Name))
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: objectMeta(fc, PodDisruptionBudgetName(fc.Name), withRevision(clusterLabels(fc.Name), revision)),
		Spec:       spec,
	}
}

// HorizontalPodAutoscaler builds the autoscaler of taskManager.horizontalPodAutoscaler, or nil. It
// scales the FlinkCluster's scale subresource, as the operator's does, so that the controller
// stays the TaskManager workload's one writer.
func HorizontalPodAutoscaler(fc *v1beta1.FlinkCluster, revision string) *autoscalingv2.HorizontalPodAutoscaler {
	tm := fc.Spec.TaskManager
	if tm == nil || tm.HorizontalPodAutoscaler == nil {
		return nil
	}
	h := tm.HorizontalPodAutoscaler.DeepCopy()
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: objectMeta(fc, HorizontalPodAutoscalerName(fc.Name), withRevision(clusterLabels(fc.Name), revision)),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
				APIVersion: v1beta1.GroupVersion.String(),
				Kind:       v1beta1.Kind,
				Name:       fc.Name,
			},
			MinReplicas: h.MinReplicas,
			MaxReplicas: h.MaxReplicas,
			Metrics:     h.Metrics,
			Behavior:    h.Behavior,
		},
	}
}

func withRevision(labels map[string]string, revision string) map[string]string {
	if revision != "" {
		labels[LabelRevision] = revision
	}
	return labels
}
