package server

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/flink-admission/flink-admission/internal/testenv"
	"github.com/flink-admission/flink-admission/webhook"
)

// TestWebhookConfigurationsFromTheManifests: dev's webhook configurations are deploy/base's,
// rendered by kustomize, with only the Service reference replaced by the local URL, so the
// local setup admits exactly what an installation does.
func TestWebhookConfigurationsFromTheManifests(t *testing.T) {
	root := testenv.RepoRoot()
	mutating, validating, err := WebhookConfigurations(root, "https://127.0.0.1:4443")
	require.NoError(t, err)

	require.Len(t, mutating.Webhooks, 1)
	require.Len(t, validating.Webhooks, 1)
	assert.Equal(t, "https://127.0.0.1:4443"+webhook.MutatePath, ptrValue(mutating.Webhooks[0].ClientConfig.URL))
	assert.Equal(t, "https://127.0.0.1:4443"+webhook.ValidatePath, ptrValue(validating.Webhooks[0].ClientConfig.URL))
	assert.Nil(t, mutating.Webhooks[0].ClientConfig.Service, "no Service in the local setup")
	assert.Nil(t, validating.Webhooks[0].ClientConfig.Service)
	assert.Empty(t, mutating.Webhooks[0].ClientConfig.CABundle, "the self-signed source injects the CA")

	// Everything but the client config is the manifests', read here straight from the file.
	wantM, wantV := readBaseWebhooks(t, filepath.Join(root, "deploy", "base", "webhooks.yaml"))
	gotM, gotV := mutating.DeepCopy(), validating.DeepCopy()
	for i := range gotM.Webhooks {
		gotM.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{}
	}
	for i := range gotV.Webhooks {
		gotV.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{}
	}
	assert.Empty(t, cmp.Diff(wantM.Webhooks, gotM.Webhooks), "mutating webhooks differ from deploy/base")
	assert.Empty(t, cmp.Diff(wantV.Webhooks, gotV.Webhooks), "validating webhooks differ from deploy/base")
	assert.Equal(t, wantM.Name, gotM.Name)
	assert.Equal(t, wantV.Name, gotV.Name)
}

func TestWebhookConfigurationsRejectsABadURL(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:4443", "https://", "https://127.0.0.1:4443/prefix", "::"} {
		_, _, err := WebhookConfigurations(testenv.RepoRoot(), u)
		assert.Error(t, err, u)
	}
}

func TestWebhookConfigurationsNeedsTheManifests(t *testing.T) {
	_, _, err := WebhookConfigurations(t.TempDir(), "https://127.0.0.1:4443")
	assert.ErrorContains(t, err, "rendering")
}

// readBaseWebhooks decodes the two configurations of deploy/base/webhooks.yaml without their
// client configs.
func readBaseWebhooks(t *testing.T, path string) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	require.NoError(t, dec.Decode(m))
	require.NoError(t, dec.Decode(v))
	require.Equal(t, "MutatingWebhookConfiguration", m.Kind)
	require.Equal(t, "ValidatingWebhookConfiguration", v.Kind)
	for i := range m.Webhooks {
		m.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{}
	}
	for i := range v.Webhooks {
		v.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{}
	}
	return m, v
}

func ptrValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
