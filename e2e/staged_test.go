package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/flink-admission/flink-admission/policy"
)

// TestStagedEnforcement drives the staged rollout with kubectl through the API server and
// the installed webhook configurations: in a namespace labelled
// flink-admission.dev/enforcement=warn a write that breaks a rule only the webhook enforces
// is admitted with the staged warning and counted, and one that breaks a CEL rule of the
// CRD is refused by the API server; in an unlabelled namespace, and in the labelled one once
// the label is removed, the same webhook-only write is refused.
func TestStagedEnforcement(t *testing.T) {
	staged := newNamespace(t, map[string]string{policy.EnforcementLabel: policy.EnforcementWarn})
	enforced := newNamespace(t, nil)

	// flinkVersion "latest" breaks flink-version, a rule of the webhook alone.
	webhookOnly := func(name string) string {
		fc := readSample(t, "job-mode.yaml")
		fc.Name, fc.Spec.FlinkVersion = name, "latest"
		return manifest(t, fc)
	}
	versionErr := field.Invalid(field.NewPath("spec", "flinkVersion"), "latest", policy.MessageFlinkVersion).Error()
	stagedWarning := "Warning: " + fmt.Sprintf(policy.WarningStagedFormat, policy.RuleFlinkVersion, versionErr)

	t.Run("staged: a webhook-only rule warns, the write is stored and counted", func(t *testing.T) {
		before := warnedWrites(t, policy.RuleFlinkVersion)
		r := kubectl(t, "apply", "-n", staged, "-f", webhookOnly("staged"))
		require.Equal(t, 0, r.exitCode, "admitted")
		assert.Contains(t, r.stdout, "flinkcluster.flinkoperator.k8s.io/staged created")
		assert.Contains(t, r.stderr, stagedWarning)
		get := kubectl(t, "get", "-n", staged, "flinkcluster", "staged", "-o", "jsonpath={.spec.flinkVersion}")
		require.Equal(t, 0, get.exitCode)
		assert.Equal(t, "latest", get.stdout, "stored as written")
		assert.Equal(t, before+1, warnedWrites(t, policy.RuleFlinkVersion), "one warned write of flink-version")
	})

	t.Run("staged: a CEL rule of the CRD is still refused by the API server", func(t *testing.T) {
		cel := ruleInfo(t, policy.RuleJobParallelism)
		require.Equal(t, policy.EnforcedByCRDRule, cel.EnforcedBy)
		fc := readSample(t, "job-mode.yaml")
		fc.Name, fc.Spec.Job.Parallelism = "cel", ptrTo(int32(0))
		before := warnedWrites(t, policy.RuleFlinkVersion)
		r := kubectl(t, "apply", "-n", staged, "-f", manifest(t, fc))
		require.Equal(t, 1, r.exitCode, "refused")
		assert.Contains(t, r.stderr, cel.Field)
		assert.Contains(t, r.stderr, crdMessage(cel))
		assert.NotContains(t, r.stderr, "staged enforcement", "the API server refused before any validating webhook")
		assert.Equal(t, before, warnedWrites(t, policy.RuleFlinkVersion))
		get := kubectl(t, "get", "-n", staged, "flinkcluster", "cel")
		assert.Contains(t, get.stderr, "NotFound", "nothing is stored")
	})

	t.Run("enforced: the same webhook-only write is refused in an unlabelled namespace", func(t *testing.T) {
		r := kubectl(t, "apply", "-n", enforced, "-f", webhookOnly("enforced"))
		require.Equal(t, 1, r.exitCode, "refused")
		assert.Contains(t, r.stderr, versionErr)
		assert.NotContains(t, r.stderr, "staged enforcement")
	})

	t.Run("enforced: once the label is removed, the namespace is enforced", func(t *testing.T) {
		require.Equal(t, 0, kubectl(t, "label", "namespace", staged, policy.EnforcementLabel+"-").exitCode)
		// The API server picks the webhook by the namespace as its informer last saw it.
		eventually(t, time.Minute, "a webhook-only write refused after the label's removal", func() error {
			r := kubectl(t, "apply", "--dry-run=server", "-n", staged, "-f", webhookOnly("after"))
			if r.exitCode == 0 {
				return fmt.Errorf("still admitted:\n%s", r.stderr)
			}
			return nil
		})
		r := kubectl(t, "apply", "-n", staged, "-f", webhookOnly("after"))
		require.Equal(t, 1, r.exitCode, "refused")
		assert.Contains(t, r.stderr, versionErr)
	})
}

// warnedWrites reads flink_admission_webhook_warned_writes_total{rule} from the in-process
// server's registry (the dev setup's server runs in this process).
func warnedWrites(t *testing.T, rule string) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "flink_admission_webhook_warned_writes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelValue(m, "rule") == rule {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no flink_admission_webhook_warned_writes_total{rule=%q} on the registry", rule)
	return 0
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// ruleInfo returns the policy's description of a rule.
func ruleInfo(t *testing.T, name string) policy.RuleInfo {
	t.Helper()
	for _, r := range policy.Rules() {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no rule %s", name)
	return policy.RuleInfo{}
}

// crdMessage is what the API server says of a violation of a rule the CRD carries.
func crdMessage(r policy.RuleInfo) string {
	if r.CRDMessage != "" {
		return r.CRDMessage
	}
	return strings.TrimSpace(r.Message)
}
