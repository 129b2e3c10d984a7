// Package containerargs expands a container's args as the kubelet does when it creates the
// container, for the simulated kubelets of the tests (internal/test/flinksim on the real control
// plane, the simulation's model): a JobManager reads its restore path from the cluster's
// ConfigMap through an env variable, and a restarted container must see the ConfigMap as it
// is then.
package containerargs

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Expand is a container's args as the kubelet runs them: each $(NAME) of a variable of
// the container's env replaced by its value, a literal value or an entry of cm (the
// valueFrom.configMapKeyRef variables that name it), read now. The kubelet does so every time
// it creates the container (makeEnvironmentVariables in pkg/kubelet/kubelet_pods.go, then
// ExpandContainerCommandAndArgs), so a restarted container sees the ConfigMap as it is then.
// A reference to a variable it cannot resolve stays as written, as in Kubernetes.
func Expand(c *corev1.Container, cm *corev1.ConfigMap) []string {
	return ExpandIn(nil, c, cm)
}

// ExpandIn is Expand for a container of pod: the variables of its env that refer to the pod's
// own fields (metadata.name, metadata.namespace, status.podIP, spec.serviceAccountName,
// spec.nodeName) resolve too, as the kubelet resolves them.
func ExpandIn(pod *corev1.Pod, c *corev1.Container, cm *corev1.ConfigMap) []string {
	vars := Values(pod, c, cm)
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		for name, v := range vars {
			a = strings.ReplaceAll(a, "$("+name+")", v)
		}
		args[i] = a
	}
	return args
}

// Values are the container's variables the kubelet resolves from literal values, entries of cm
// and (pod not nil) the pod's own fields; the others are left out.
func Values(pod *corev1.Pod, c *corev1.Container, cm *corev1.ConfigMap) map[string]string {
	vars := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		case e.ValueFrom.ConfigMapKeyRef != nil && cm != nil && e.ValueFrom.ConfigMapKeyRef.Name == cm.Name:
			if v, ok := cm.Data[e.ValueFrom.ConfigMapKeyRef.Key]; ok {
				vars[e.Name] = v
			}
		case e.ValueFrom.FieldRef != nil && pod != nil:
			if v, ok := podField(pod, e.ValueFrom.FieldRef.FieldPath); ok {
				vars[e.Name] = v
			}
		}
	}
	return vars
}

// podField is the value of a pod field a downward-API variable names.
func podField(pod *corev1.Pod, path string) (string, bool) {
	switch path {
	case "metadata.name":
		return pod.Name, true
	case "metadata.namespace":
		return pod.Namespace, true
	case "metadata.uid":
		return string(pod.UID), true
	case "status.podIP":
		return pod.Status.PodIP, true
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, true
	case "spec.nodeName":
		return pod.Spec.NodeName, true
	}
	return "", false
}
