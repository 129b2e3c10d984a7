package deploy_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

// limitCriticalClasses is the ResourceQuota admission configuration of clusters that keep
// the system- priority classes to the namespaces with a quota that covers them (GKE's, for
// kube-system): a pod of such a class is refused anywhere else.
const limitCriticalClasses = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ResourceQuota
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ResourceQuotaConfiguration
    limitedResources:
    - resource: pods
      matchScopes:
      - scopeName: PriorityClass
        operator: In
        values: [system-node-critical, system-cluster-critical]
`

// TestPodsAdmittedWhereSystemClassesAreLimited: on an API server that admits the system-
// priority classes only under a ResourceQuota, the webhook's pods (the install's pod
// template, in its own PriorityClass) are admitted in the install's namespace, where the
// same pods in system-cluster-critical are refused.
func TestPodsAdmittedWhereSystemClassesAreLimited(t *testing.T) {
	config := filepath.Join(t.TempDir(), "admission.yaml")
	require.NoError(t, os.WriteFile(config, []byte(limitCriticalClasses), 0o644))
	env, err := testenv.Start(testenv.Options{WithoutCRD: true, APIServerFlags: map[string]string{"admission-control-config-file": config}})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })
	client, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	ctx := context.Background()

	objs := objects(t, selfSigned)
	_, err = client.CoreV1().Namespaces().Create(ctx, one[*corev1.Namespace](t, objs, namespace).DeepCopy(), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().ServiceAccounts(namespace).Create(ctx, one[*corev1.ServiceAccount](t, objs, serviceAccountName).DeepCopy(), metav1.CreateOptions{})
	require.NoError(t, err)
	pc := one[*schedulingv1.PriorityClass](t, objs, priorityClassName).DeepCopy()
	_, err = client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{})
	require.NoError(t, err)

	d := one[*appsv1.Deployment](t, objs, deploymentName)
	pod := func(class string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "flink-admission-x", Namespace: namespace, Labels: d.Spec.Template.Labels}}
		d.Spec.Template.Spec.DeepCopyInto(&p.Spec)
		p.Spec.PriorityClassName = class
		return p
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

	created, err := client.CoreV1().Pods(namespace).Create(ctx, pod(d.Spec.Template.Spec.PriorityClassName), dryRun)
	require.NoError(t, err, "the install's pods in its PriorityClass")
	require.NotNil(t, created.Spec.Priority)
	assert.Equal(t, pc.Value, *created.Spec.Priority, "the Priority admission plugin resolved the class")

	_, err = client.CoreV1().Pods(namespace).Create(ctx, pod("system-cluster-critical"), dryRun)
	assert.ErrorContains(t, err, "insufficient quota to match these scopes", "the check can fail: system-cluster-critical outside a covering ResourceQuota")
}
