package certs

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// leastPrivilegeRules are the permissions the package documentation tells deployments to grant
// the self-signed source: everything but creating the Secret is limited to the named objects.
func leastPrivilegeRules(secret, webhooks string) (namespaced, cluster []rbacv1.PolicyRule) {
	named := []string{"get", "update", "list", "watch"}
	return []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: named, ResourceNames: []string{secret}},
		}, []rbacv1.PolicyRule{{
			APIGroups:     []string{"admissionregistration.k8s.io"},
			Resources:     []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"},
			Verbs:         named,
			ResourceNames: []string{webhooks},
		}}
}

// TestSelfSignedWorksWithLeastPrivilege runs the source as a user holding only
// leastPrivilegeRules: the watches by name are allowed, and the source creates the CA, injects
// the bundle, and puts an overwritten bundle back without waiting for the hourly resync.
func TestSelfSignedWorksWithLeastPrivilege(t *testing.T) {
	apiServer(t)
	// The admin also grants RBAC: a whole Clientset.
	admin, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	ctx := context.Background()
	ns, webhooks := namespaceWithWebhooks(t, admin)

	user := "system:serviceaccount:" + ns + ":webhook"
	namespaced, cluster := leastPrivilegeRules(testSecret, webhooks)
	subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
	_, err = admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "webhook"}, Rules: namespaced}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "webhook"}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "webhook"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: webhooks}, Rules: cluster}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: webhooks}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: webhooks},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoles().Delete(ctx, webhooks, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, webhooks, metav1.DeleteOptions{})
	})

	authenticated, err := env.Environment.AddUser(envtest.User{Name: user}, nil)
	require.NoError(t, err)
	// The source's client, as serve makes it.
	client, err := NewClient(authenticated.Config())
	require.NoError(t, err)
	_, err = client.CoreV1().Secrets(ns).Get(ctx, "some-other-secret", metav1.GetOptions{})
	require.True(t, apierrors.IsForbidden(err), "the user really is limited: %v", err)
	// A list or watch with a metadata.name field selector is authorized as a request for that
	// name, which is what lets resourceNames limit the source's informers.
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", testSecret).String()}
	w, err := client.CoreV1().Secrets(ns).Watch(ctx, byName)
	require.NoError(t, err, "watching the CA secret by name is allowed")
	w.Stop()
	_, err = client.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "watching every secret is not: %v", err)
	w, err = client.AdmissionregistrationV1().MutatingWebhookConfigurations().Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", webhooks).String(),
	})
	require.NoError(t, err, "watching the webhook configuration by name is allowed")
	w.Stop()

	src := startSelfSigned(t, client, ns, webhooks, nil)
	require.Eventually(t, func() bool { return src.Healthy() == nil }, eventually, poll)
	require.Eventually(t, func() bool { return allInjected(t, admin, webhooks, src.CABundle()) }, eventually, poll)

	v, err := admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, webhooks, metav1.GetOptions{})
	require.NoError(t, err)
	v.Webhooks[1].ClientConfig.CABundle = nil
	_, err = admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, v, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return allInjected(t, admin, webhooks, src.CABundle()) }, eventually, poll,
		"the bundle is put back")
}
