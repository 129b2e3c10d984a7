package deploy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/flink-admission/flink-admission/internal/containerargs"
	"github.com/flink-admission/flink-admission/scope"
)

// controllerRoleName is the Role the scoped overlay grants in each watched namespace.
const controllerRoleName = "flink-admission-controller"

// TestScopedOverlay: the scoped install grants the controller's rules in the namespaces of
// --watch-namespaces and nowhere else — one Role per namespace, exactly the rules the
// cluster-wide install grants for FlinkClusters — and keeps cluster-wide only the CA bundle
// injection into its own webhook configurations.
func TestScopedOverlay(t *testing.T) {
	objs := objects(t, scoped)

	args := containerargs.Expand(&one[*appsv1.Deployment](t, objs, "flink-admission").Spec.Template.Spec.Containers[0], nil)
	watched := flagValue(t, args, "--watch-namespaces")
	require.NotEmpty(t, watched, "the scoped overlay sets --watch-namespaces")
	want, err := scope.ParseNamespaces(watched)
	require.NoError(t, err)
	_, err = scope.ParseSelector(flagValue(t, args, "--cluster-selector"))
	require.NoError(t, err)

	// Cluster-wide, only what every replica needs; the controller's rules are the cluster-wide
	// install's, granted in each watched namespace instead.
	controllerRules, webhookRules := wantControllerClusterRules, wantWebhookClusterRules
	var clusterRules []rbacv1.PolicyRule
	for _, b := range all[*rbacv1.ClusterRoleBinding](objs) {
		require.Equal(t, "ClusterRole", b.RoleRef.Kind)
		clusterRules = append(clusterRules, one[*rbacv1.ClusterRole](t, objs, b.RoleRef.Name).Rules...)
	}
	assertSameRules(t, "cluster-wide", webhookRules, clusterRules)

	var granted []string
	for _, b := range all[*rbacv1.RoleBinding](objs) {
		if b.RoleRef.Name != controllerRoleName {
			continue
		}
		require.Equal(t, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: serviceAccountName, Namespace: namespace}}, b.Subjects,
			"RoleBinding in %s binds the server's ServiceAccount", b.Namespace)
		require.Equal(t, "Role", b.RoleRef.Kind)
		var role *rbacv1.Role
		for _, r := range all[*rbacv1.Role](objs) {
			if r.Name == controllerRoleName && r.Namespace == b.Namespace {
				role = r
			}
		}
		require.NotNil(t, role, "RoleBinding in %s refers to a Role there", b.Namespace)
		assertNoWildcards(t, "Role "+b.Namespace+"/"+role.Name, role.Rules)
		assertSameRules(t, "namespace "+b.Namespace, controllerRules, role.Rules)
		granted = append(granted, b.Namespace)
	}
	slices.Sort(granted)
	assert.Equal(t, want, granted, "--watch-namespaces and the namespaces with the controller's Role must agree")
}

// flagValue returns the value of --name=value in args, "" when absent.
func flagValue(t *testing.T, args []string, name string) string {
	t.Helper()
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}
