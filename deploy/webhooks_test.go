package deploy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/deploy"
)

func TestDecodeWebhooksRejects(t *testing.T) {
	m := "apiVersion: admissionregistration.k8s.io/v1\nkind: MutatingWebhookConfiguration\nmetadata: {name: m}\n"
	v := "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: v}\n"
	for name, stream := range map[string]string{
		"deny: no validating configuration": m,
		"deny: two mutating configurations": m + "---\n" + m + "---\n" + v,
		"deny: another kind":                m + "---\n" + v + "---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: p}\n",
		"deny: an unknown field":            m + "  color: red\n---\n" + v,
	} {
		_, _, err := deploy.DecodeWebhooks([]byte(stream))
		assert.Error(t, err, name)
	}
	_, _, err := deploy.DecodeWebhooks([]byte(m + "---\n" + v))
	assert.NoError(t, err)
}

// TestSetClusterSelector: the selector lands in every validating webhook's match condition,
// where ClusterSelector reads it back, and the rest of the expression stays as it was.
func TestSetClusterSelector(t *testing.T) {
	_, v, err := deploy.WebhookConfigurations()
	require.NoError(t, err)
	before := v.DeepCopy()
	const sel = "team in (a,b),!legacy,flink.example.com/controller=flink-admission"
	require.NoError(t, deploy.SetClusterSelector(v, sel))
	require.Len(t, v.Webhooks, 2)
	for i, w := range v.Webhooks {
		require.Len(t, w.MatchConditions, 1, w.Name)
		got, ok := deploy.ClusterSelector(w.MatchConditions[0].Expression)
		require.True(t, ok, w.Name)
		assert.Equal(t, sel, got, w.Name)
		was, ok := deploy.ClusterSelector(before.Webhooks[i].MatchConditions[0].Expression)
		require.True(t, ok, w.Name)
		assert.Empty(t, was, "deploy/base names no selector")
	}
	require.NoError(t, deploy.SetClusterSelector(v, ""))
	assert.Equal(t, before, v, "setting no selector gives deploy/base's expressions back")
}

func TestSetClusterSelectorRejectsWhatWouldEndTheString(t *testing.T) {
	for _, sel := range []string{`team="a"`, `team=a\`, "team=a\n"} {
		_, v, err := deploy.WebhookConfigurations()
		require.NoError(t, err)
		assert.Error(t, deploy.SetClusterSelector(v, sel), sel)
	}
}
