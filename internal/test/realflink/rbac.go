package realflink

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FlinkServiceAccount is the service account the suites' FlinkClusters run as.
const FlinkServiceAccount = "flink"

// NamespaceObjects are what a namespace of Flink clusters needs, as deploy/samples tells a
// user: the namespace, the service account FlinkServiceAccount, and a Role on ConfigMaps
// (Flink's Kubernetes HA) bound to it.
func NamespaceObjects(ns string) []client.Object {
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: FlinkServiceAccount, Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "flink-ha", Namespace: ns}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"},
		}}},
		&rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "flink-ha", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "flink-ha"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: FlinkServiceAccount, Namespace: ns}},
		},
	}
}
