package deploy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/resmap"
)

// TestServiceMonitorCredentials: the ServiceMonitor of deploy/components/observability scrapes
// with credentials it names (`authorization`, not the deprecated `bearerTokenFile`): the token
// Secret of a ServiceAccount of the install, which is bound to the metrics reader ClusterRole.
func TestServiceMonitorCredentials(t *testing.T) {
	m := render(t, observability)
	get := func(kind, name string) map[string]any {
		t.Helper()
		var found []map[string]any
		for _, r := range m.Resources() {
			if r.GetKind() == kind && r.GetName() == name {
				obj, err := r.Map()
				require.NoError(t, err)
				found = append(found, obj)
			}
		}
		require.Len(t, found, 1, "want exactly one %s %s", kind, name)
		return found[0]
	}
	sm := get("ServiceMonitor", "flink-admission")
	endpoints, _, err := unstructured.NestedSlice(sm, "spec", "endpoints")
	require.NoError(t, err)
	require.NotEmpty(t, endpoints)
	for _, e := range endpoints {
		ep := e.(map[string]any)
		assert.NotContains(t, ep, "bearerTokenFile", "deprecated by the Prometheus Operator: use authorization")
		assert.NotContains(t, ep, "bearerTokenSecret", "deprecated by the Prometheus Operator: use authorization")
		typ, _, _ := unstructured.NestedString(ep, "authorization", "type")
		assert.Equal(t, "Bearer", typ)
		secretName, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "name")
		key, _, _ := unstructured.NestedString(ep, "authorization", "credentials", "key")
		assert.Equal(t, corev1.ServiceAccountTokenKey, key)

		secret := get("Secret", secretName)
		assert.Equal(t, string(corev1.SecretTypeServiceAccountToken), secret["type"])
		assert.Equal(t, namespace, nested(t, secret, "metadata", "namespace"), "the ServiceMonitor's namespace, where the Prometheus Operator reads it")
		account, _, _ := unstructured.NestedString(secret, "metadata", "annotations", corev1.ServiceAccountNameKey)
		sa := get("ServiceAccount", account)
		assert.Equal(t, namespace, nested(t, sa, "metadata", "namespace"))
		assertBoundToMetricsReader(t, m, account)
	}
}

// assertBoundToMetricsReader asserts that a ClusterRoleBinding grants the metrics reader
// ClusterRole to the ServiceAccount account of the install's namespace.
func assertBoundToMetricsReader(t *testing.T, m resmap.ResMap, account string) {
	t.Helper()
	for _, r := range m.Resources() {
		if r.GetKind() != "ClusterRoleBinding" {
			continue
		}
		obj, err := r.Map()
		require.NoError(t, err)
		if nested(t, obj, "roleRef", "name") != metricsReaderRole {
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(obj, "subjects")
		for _, s := range subjects {
			s := s.(map[string]any)
			if s["kind"] == "ServiceAccount" && s["name"] == account && s["namespace"] == namespace {
				return
			}
		}
	}
	t.Errorf("no ClusterRoleBinding grants %s to the ServiceAccount %s/%s", metricsReaderRole, namespace, account)
}

func nested(t *testing.T, obj map[string]any, fields ...string) string {
	t.Helper()
	s, _, err := unstructured.NestedString(obj, fields...)
	require.NoError(t, err)
	return s
}
