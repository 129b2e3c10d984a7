package policy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/policy"
)

// TestValidateStoredSaysWhichViolationsRatchet: a stored cluster is judged as a create, and
// each refusal says whether an edit that keeps it is admitted.
func TestValidateStoredSaysWhichViolationsRatchet(t *testing.T) {
	cases := []struct {
		name          string
		stored        *v1beta1.FlinkCluster
		wantRules     []string
		wantRatcheted []bool
	}{
		{name: "a valid cluster: no refusal", stored: builder.MakeFlinkCluster("ok", "ns").Obj()},
		{name: "a webhook rule a stored cluster breaks ratchets",
			stored:    builder.MakeFlinkCluster("v", "ns").FlinkVersion("latest").Obj(),
			wantRules: []string{policy.RuleFlinkVersion}, wantRatcheted: []bool{true}},
		{name: "a Deployment rule ratchets as its CEL rule does",
			stored:    builder.MakeFlinkCluster("d", "ns").DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).Obj(),
			wantRules: []string{policy.RuleDeploymentRequiresHA, policy.RuleDeploymentRequiresHAStorageDir}, wantRatcheted: []bool{true, true}},
		{name: "last-state without a Deployment JobManager refuses every edit",
			stored:    builder.MakeFlinkCluster("l", "ns").Job(func(j *v1beta1.JobSpec) { j.UpgradeMode = ptr.To(v1beta1.UpgradeModeLastState) }).Obj(),
			wantRules: []string{policy.RuleLastStateRequiresKubernetesHA}, wantRatcheted: []bool{false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, ratcheted, _ := policy.Validator{}.ValidateStored(tc.stored, defaulted(tc.stored))
			var rules []string
			for _, e := range errs {
				rules = append(rules, policy.RuleOf(e))
			}
			assert.ElementsMatch(t, tc.wantRules, rules)
			require.Len(t, ratcheted, len(tc.wantRatcheted))
			assert.Equal(t, tc.wantRatcheted, ratcheted)
		})
	}
}

// TestValidateStoredRefusesNoObject: a missing object is a refusal, never a pass.
func TestValidateStoredRefusesNoObject(t *testing.T) {
	errs, ratcheted, _ := policy.Validator{}.ValidateStored(nil, nil)
	require.Len(t, errs, 1)
	assert.Equal(t, policy.RuleNoObject, policy.RuleOf(errs[0]))
	assert.Equal(t, []bool{false}, ratcheted)
}

// TestValidateStoredAgreesWithAnEdit: for the example of every rule, stored as it is, what
// ValidateStored says of each refusal is what ValidateUpdate does on an edit of the spec that
// leaves the violation as it is (a new environment variable): a ratcheted one is not among
// its errors, another one is.
func TestValidateStoredAgreesWithAnEdit(t *testing.T) {
	for _, r := range policy.Rules() {
		if r.ExampleOld != "" {
			continue // an update rule: the stored example breaks nothing
		}
		t.Run(r.Name, func(t *testing.T) {
			stored := &v1beta1.FlinkCluster{}
			require.NoError(t, yaml.Unmarshal([]byte(r.Example), stored))
			errs, ratcheted, _ := policy.Validator{}.ValidateStored(stored, defaulted(stored))
			require.NotEmpty(t, errs, "the example breaks its rule")

			edited := stored.DeepCopy()
			edited.Spec.EnvVars = append(edited.Spec.EnvVars, corev1.EnvVar{Name: "AUDIT_TEST_EDIT", Value: "1"})
			updateErrs, _ := policy.ValidateUpdate(stored, defaulted(edited))
			refused := map[string]bool{}
			for _, e := range updateErrs {
				refused[e.Field+"|"+string(e.Type)+"|"+e.Origin] = true
			}
			for i, e := range errs {
				assert.Equal(t, !ratcheted[i], refused[e.Field+"|"+string(e.Type)+"|"+e.Origin],
					"%s (ratcheted=%v): ValidateUpdate errors %v", e, ratcheted[i], updateErrs)
			}
		})
	}
}
