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
	vars := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			vars[e.Name] = e.Value
		case e.ValueFrom.ConfigMapKeyRef != nil && cm != nil && e.ValueFrom.ConfigMapKeyRef.Name == cm.Name:
			if v, ok := cm.Data[e.ValueFrom.ConfigMapKeyRef.Key]; ok {
				vars[e.Name] = v
			}
		}
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		for name, v := range vars {
			a = strings.ReplaceAll(a, "$("+name+")", v)
		}
		args[i] = a
	}
	return args
}
