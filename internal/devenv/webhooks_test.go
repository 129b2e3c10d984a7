package devenv

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/deploy"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/scope"
	"github.com/flink-admission/flink-admission/webhook"
)

// TestWebhookConfigurationsFromTheManifests: dev's webhook configurations are deploy/base's
// as kustomize renders them, with only the Service reference replaced by the local URL (and
// without the common label), so the local setup admits exactly what an installation does.
func TestWebhookConfigurationsFromTheManifests(t *testing.T) {
	mutating, validating, err := WebhookConfigurations("https://127.0.0.1:4443")
	require.NoError(t, err)

	require.Len(t, mutating.Webhooks, 1)
	require.Len(t, validating.Webhooks, 2, "the validating webhook and the staged one")
	assert.Equal(t, "https://127.0.0.1:4443"+webhook.MutatePath, ptrValue(mutating.Webhooks[0].ClientConfig.URL))
	assert.Equal(t, "https://127.0.0.1:4443"+webhook.ValidatePath, ptrValue(validating.Webhooks[0].ClientConfig.URL))
	assert.Equal(t, "https://127.0.0.1:4443"+webhook.ValidateWarnPath, ptrValue(validating.Webhooks[1].ClientConfig.URL))
	assert.Nil(t, mutating.Webhooks[0].ClientConfig.Service, "no Service in the local setup")
	assert.Nil(t, validating.Webhooks[0].ClientConfig.Service)
	assert.Nil(t, validating.Webhooks[1].ClientConfig.Service)
	assert.Empty(t, mutating.Webhooks[0].ClientConfig.CABundle, "the self-signed source injects the CA")

	wantM, wantV := renderedBaseWebhooks(t)
	gotM, gotV := mutating.DeepCopy(), validating.DeepCopy()
	for i := range gotM.Webhooks {
		gotM.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{}
	}
	for i := range gotV.Webhooks {
		gotV.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{}
	}
	assert.Empty(t, cmp.Diff(wantM, gotM), "mutating webhook configuration differs from deploy/base's")
	assert.Empty(t, cmp.Diff(wantV, gotV), "validating webhook configuration differs from deploy/base's")
}

func TestWebhookConfigurationsRejectsABadURL(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:4443", "https://", "https://127.0.0.1:4443/prefix", "::"} {
		_, _, err := WebhookConfigurations(u)
		assert.Error(t, err, u)
	}
}

// renderedBaseWebhooks renders deploy/base with kustomize, as `kubectl apply -k` does, and
// returns its webhook configurations without client configs and labels.
func renderedBaseWebhooks(t *testing.T) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(testenv.RepoRoot(), "deploy", "base"))
	require.NoError(t, err)
	var stream []byte
	for _, r := range m.Resources() {
		if k := r.GetKind(); k != "MutatingWebhookConfiguration" && k != "ValidatingWebhookConfiguration" {
			continue
		}
		y, err := r.AsYAML()
		require.NoError(t, err)
		stream = append(append(stream, "---\n"...), y...)
	}
	mutating, validating, err := deploy.DecodeWebhooks(stream)
	require.NoError(t, err)
	mutating.Labels, validating.Labels = nil, nil
	for i := range mutating.Webhooks {
		mutating.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{}
	}
	for i := range validating.Webhooks {
		validating.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{}
	}
	return mutating, validating
}

func ptrValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestDevWebhooksReadItsClusterSelector: dev writes its controller's --cluster-selector into
// the validating webhooks' match conditions, as the installs do, and none without a
// controller.
func TestDevWebhooksReadItsClusterSelector(t *testing.T) {
	sel, err := scope.ParseSelector("flink.example.com/controller=flink-admission")
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		o    DevOptions
		want string
	}{
		{"no selector", DevOptions{EnableController: true}, ""},
		{"a selector", DevOptions{EnableController: true, Controller: controller.Options{Scope: scope.Scope{Selector: sel}}},
			"flink.example.com/controller=flink-admission"},
		{"a selector without the controller", DevOptions{Controller: controller.Options{Scope: scope.Scope{Selector: sel}}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, v, err := webhookConfigurationsWith("https://127.0.0.1:4443", clusterSelector(c.o))
			require.NoError(t, err)
			for _, w := range v.Webhooks {
				got, ok := deploy.ClusterSelector(w.MatchConditions[0].Expression)
				require.True(t, ok)
				assert.Equal(t, c.want, got, w.Name)
			}
		})
	}
}
