package policy_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flink-admission/flink-admission/policy"
)

func TestRuleOf(t *testing.T) {
	errs, _ := policy.ValidateCreate(deploymentFC().FlinkProperty(policy.PropertyHAType, "none").Obj())
	cases := []struct {
		name string
		err  *field.Error
		want string
	}{
		{"nil error", nil, ""},
		{"error the policy did not make", field.Invalid(path("spec"), 1, "x"), policy.RuleUnknown},
		{"error from the policy", errs[0], policy.RuleDeploymentRequiresHA},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := policy.RuleOf(tc.err); got != tc.want {
				t.Errorf("RuleOf = %q, want %q", got, tc.want)
			}
		})
	}
}
