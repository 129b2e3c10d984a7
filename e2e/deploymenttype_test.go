package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

const (
	crdName = "flinkclusters.flinkoperator.k8s.io"
	// crdImmutableMessage is the CRD rule's fixed message (api/v1beta1 markers).
	crdImmutableMessage = "spec.jobManager.deploymentType: Forbidden: deploymentType is immutable (unset means Job): delete and recreate the cluster to change it"
	// webhookImmutableDetail ends the policy's message for the same rule, which names the
	// values; the CRD rule cannot.
	webhookImmutableDetail = "to change it from Deployment to Job"
	toJob                  = `{"spec":{"jobManager":{"deploymentType":"Job"}}}`
)

// TestDeploymentTypeChangeDenied: changing deploymentType on update is denied by each layer
// on its own. The API server runs the CRD's validation (its CEL rule) before the validating
// webhooks, so with both in place the CRD rule answers; the webhook's own denial shows once
// that rule is taken out of the CRD, and the CRD rule's once both webhook configurations are
// deleted. Each subtest puts back what it took away.
func TestDeploymentTypeChangeDenied(t *testing.T) {
	ns := newNamespace(t, nil)
	name := readSample(t, "deployment-mode.yaml").Name
	r := kubectl(t, "apply", "-n", ns, "-f", sample("deployment-mode.yaml"))
	require.Equal(t, 0, r.exitCode, "the sample is admitted")
	patch := func(t *testing.T) result {
		return kubectl(t, "patch", "-n", ns, "flinkcluster", name, "--type", "merge", "-p", toJob)
	}
	stillDeployment := func(t *testing.T) {
		t.Helper()
		out := kubectl(t, "get", "-n", ns, "flinkcluster", name, "-o", "jsonpath={.spec.jobManager.deploymentType}")
		require.Equal(t, 0, out.exitCode)
		assert.Equal(t, "Deployment", out.stdout, "the stored cluster is unchanged")
	}

	t.Run("denied with the webhooks and the CRD rule in place", func(t *testing.T) {
		r := patch(t)
		require.Equal(t, 1, r.exitCode)
		assert.Contains(t, r.stderr, fmt.Sprintf("The FlinkCluster %q is invalid", name))
		assert.Contains(t, r.stderr, crdImmutableMessage, "the CRD's validation runs before the validating webhooks")
		stillDeployment(t)
	})

	t.Run("denied by the webhook alone", func(t *testing.T) {
		restore := removeCRDRule(t, "deploymentType is immutable")
		t.Cleanup(func() {
			restore()
			// Back in force when the CRD rule answers again before the webhook does (a dry
			// run, so that nothing changes if it is not).
			c := crClient(t)
			eventually(t, 30*time.Second, "the CRD rule in force again", func() error {
				fc := &v1beta1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
				err := c.Patch(context.Background(), fc, client.RawPatch(types.MergePatchType, []byte(toJob)), client.DryRunAll)
				if err == nil || strings.Contains(err.Error(), webhookImmutableDetail) {
					return fmt.Errorf("the CRD rule does not answer yet: %v", err)
				}
				return nil
			})
		})
		// Poll with the Go client (a kubectl run costs a process start), then show kubectl's.
		c := crClient(t)
		eventually(t, 30*time.Second, "the webhook's denial once the CRD rule is gone", func() error {
			fc := &v1beta1.FlinkCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			err := c.Patch(context.Background(), fc, client.RawPatch(types.MergePatchType, []byte(toJob)))
			if err == nil {
				t.Fatal("the deploymentType change was admitted")
			}
			if !strings.Contains(err.Error(), webhookImmutableDetail) {
				return err
			}
			return nil
		})
		last := patch(t)
		require.Equal(t, 1, last.exitCode)
		assert.Contains(t, last.stderr, "spec.jobManager.deploymentType: Forbidden: deploymentType is immutable (unset means Job): delete and recreate the cluster "+webhookImmutableDetail)
		stillDeployment(t)
	})

	t.Run("denied by the CRD rule alone", func(t *testing.T) {
		deleteWebhookConfigurations(t)
		r := patch(t)
		require.Equal(t, 1, r.exitCode)
		assert.Contains(t, r.stderr, crdImmutableMessage)
		assert.NotContains(t, r.stderr, webhookImmutableDetail, "no webhook answered")
		stillDeployment(t)
	})
}

// removeCRDRule takes the CEL rule whose message starts with prefix out of the FlinkCluster
// CRD and returns a function that puts the original CRD back.
func removeCRDRule(t *testing.T, prefix string) (restore func()) {
	t.Helper()
	c := apiextensionsClient(t)
	ctx := context.Background()
	var original apiextensionsv1.CustomResourceDefinitionSpec
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
			return err
		}
		original = *crd.Spec.DeepCopy()
		spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		n := len(spec.XValidations)
		for i, v := range spec.XValidations {
			if strings.HasPrefix(v.Message, prefix) {
				spec.XValidations = append(spec.XValidations[:i:i], spec.XValidations[i+1:]...)
				break
			}
		}
		require.Len(t, spec.XValidations, n-1, "the CRD has the rule %q on spec", prefix)
		crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		return c.Update(ctx, crd)
	})
	require.NoError(t, err, "removing the CRD rule")
	return func() {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
				return err
			}
			crd.Spec = original
			return c.Update(ctx, crd)
		})
		require.NoError(t, err, "restoring the CRD")
	}
}

// deleteWebhookConfigurations deletes both webhook configurations of the local setup, waits
// until the API server no longer calls them, and reinstalls them when the test ends.
func deleteWebhookConfigurations(t *testing.T) {
	t.Helper()
	cs := clientset(t)
	ctx := context.Background()
	mutating, validating := dev.Server.Options.MutatingWebhookConfiguration, dev.Server.Options.ValidatingWebhookConfiguration
	require.NoError(t, cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, mutating, metav1.DeleteOptions{}))
	require.NoError(t, cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, validating, metav1.DeleteOptions{}))
	t.Cleanup(func() {
		_, _, err := dev.InstallWebhooks(ctx)
		require.NoError(t, err, "reinstalling the webhook configurations")
		require.NoError(t, dev.WaitReady(ctx, time.Minute), "the webhooks answer again")
	})

	// Gone means: the mutating webhook adds no default and the validating webhook denies
	// nothing that only it knows (an invalid flinkVersion).
	c := crClient(t)
	eventually(t, 30*time.Second, "the API server stops calling the webhooks", func() error {
		fc := readSample(t, "deployment-mode.yaml")
		fc.Namespace = "default"
		fc.Spec.FlinkVersion = "latest"
		if err := c.Create(ctx, fc, client.DryRunAll); err != nil {
			return fmt.Errorf("still denied: %w", err)
		}
		if len(fc.Spec.FlinkProperties) != len(readSample(t, "deployment-mode.yaml").Spec.FlinkProperties) {
			return errors.New("still defaulted")
		}
		return nil
	})
	_, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, mutating, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "nothing recreated the configuration: %v", err)
}

func apiextensionsClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, apiextensionsv1.AddToScheme(scheme))
	require.NoError(t, v1beta1.AddToScheme(scheme))
	c, err := client.New(dev.Env.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}
