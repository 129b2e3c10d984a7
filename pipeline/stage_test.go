package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/policy"
	"github.com/flink-admission/flink-admission/scope"
)

// TestAdmitStaged: with Stage, the errors of webhook-only rules (the controller's scope
// included) become warnings named in Warned, the rules the CRD carries stay denied and named
// in Rules; without it, every error is a denial.
func TestAdmitStaged(t *testing.T) {
	noImage := builder.MakeFlinkCluster("wc", "team-a").Image("")
	deny := &policy.ControllerScope{Running: true, Scope: scope.Scope{Namespaces: []string{"team-b"}}, Deny: true}
	deploymentOutside := builder.MakeFlinkCluster("wc", "team-a").DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).HA()
	cases := []struct {
		name        string
		fc          *v1beta1.FlinkCluster
		controller  *policy.ControllerScope
		steps       Steps
		wantRules   []string
		wantWarned  []string
		wantStaging int // warnings that Stage added
	}{
		{name: "enforced: a webhook-only rule denies", fc: noImage.Obj(), steps: Default | Validate,
			wantRules: []string{policy.RuleImage}},
		{name: "staged: a webhook-only rule warns", fc: noImage.Obj(), steps: Default | Validate | Stage,
			wantWarned: []string{policy.RuleImage}, wantStaging: 1},
		{name: "staged: the controller scope's denial warns", fc: deploymentOutside.Obj(), controller: deny,
			steps: Default | Validate | Stage, wantWarned: []string{policy.RuleDeploymentWithoutController}, wantStaging: 1},
		{name: "staged: a CEL rule still denies, the webhook-only rule beside it warns",
			fc: noImage.Clone().Parallelism(0).Obj(), steps: Default | Validate | Stage,
			wantRules: []string{policy.RuleJobParallelism}, wantWarned: []string{policy.RuleImage}, wantStaging: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			without := Pipeline{Controller: tc.controller}.Admit(nil, tc.fc, tc.steps&^Stage)
			v := Pipeline{Controller: tc.controller}.Admit(nil, tc.fc, tc.steps)
			assert.Equal(t, tc.wantRules, v.Rules)
			assert.Len(t, v.Errors, len(tc.wantRules))
			assert.Equal(t, tc.wantWarned, v.Warned)
			assert.Len(t, v.Warnings, len(without.Warnings)+tc.wantStaging)
		})
	}
}
