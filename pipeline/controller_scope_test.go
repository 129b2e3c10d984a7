package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/policy"
	"github.com/flink-admission/flink-admission/scope"
)

// TestAdmitJudgesTheControllerScope: with a controller scope, Validate adds the scope check's
// warning or denial (named by its rule) to the policy's verdict; without one, it does not.
func TestAdmitJudgesTheControllerScope(t *testing.T) {
	fc := builder.MakeFlinkCluster("wc", "team-a").DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).HA().Obj()
	outside := policy.ControllerScope{Running: true, Scope: scope.Scope{Namespaces: []string{"team-b"}}}
	deny := outside
	deny.Deny = true
	cases := []struct {
		name         string
		controller   *policy.ControllerScope
		wantAllowed  bool
		wantWarnings int
	}{
		{name: "no scope: no check", wantAllowed: true},
		{name: "warn: admitted with the warning", controller: &outside, wantAllowed: true, wantWarnings: 1},
		{name: "deny: refused by the scope rule", controller: &deny},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Pipeline{Controller: tc.controller}.Admit(nil, fc, Default|Validate)
			require.Equal(t, tc.wantAllowed, v.Allowed(), "%v", v.Errors)
			assert.Len(t, v.Warnings, tc.wantWarnings)
			if !tc.wantAllowed {
				assert.Equal(t, []string{policy.RuleDeploymentWithoutController}, v.Rules)
			}
		})
	}
}
