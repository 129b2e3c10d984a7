package policy_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/policy"
	"github.com/flink-admission/flink-admission/scope"
)

func TestValidateControllerScope(t *testing.T) {
	s, err := scope.Parse("team-b", "flink.example.com/controller=flink-admission")
	require.NoError(t, err)
	running := policy.ControllerScope{Running: true, Scope: s}
	deny := running
	deny.Deny = true
	webhookOnly := policy.ControllerScope{Running: false, Scope: scope.All}

	deployment := func(ns string) *builder.FlinkClusterWrapper {
		return builder.MakeFlinkCluster("wc", ns).DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).HA()
	}
	inScope := deployment("team-b").Label("flink.example.com/controller", "flink-admission")

	cases := []struct {
		name     string
		ctrl     policy.ControllerScope
		old, obj *builder.FlinkClusterWrapper
		// want is the reason the warning or error names; "" for neither.
		want    string
		wantErr bool
	}{
		{name: "allow: Deployment cluster in the scope", ctrl: deny, obj: inScope},
		{name: "allow: Job cluster outside the scope says nothing", ctrl: deny,
			obj: builder.MakeFlinkCluster("wc", "team-a")},
		{name: "allow: session cluster outside the scope says nothing", ctrl: deny,
			obj: deployment("team-a").SessionCluster()},
		{name: "warn: namespace outside --watch-namespaces", ctrl: running, obj: deployment("team-a").Label("flink.example.com/controller", "flink-admission"),
			want: "namespace team-a is not in --watch-namespaces (team-b)"},
		{name: "warn: labels outside --cluster-selector", ctrl: running, obj: deployment("team-b"),
			want: `its labels do not match --cluster-selector "flink.example.com/controller=flink-admission"`},
		{name: "warn: webhook only, every Deployment cluster", ctrl: webhookOnly, obj: inScope,
			want: "flink-admission runs as a webhook only (--enable-controller=false)"},
		{name: "deny: outside the scope on create, with Deny", ctrl: deny, obj: deployment("team-a"),
			want: "namespace team-a is not in --watch-namespaces (team-b)", wantErr: true},
		{name: "deny: an update whose label change takes the cluster out", ctrl: deny, old: inScope,
			obj: inScope.Clone().Label("flink.example.com/controller", "operator"), want: "--cluster-selector", wantErr: true},
		{name: "warn: an update of a cluster already outside stays allowed (ratcheting)", ctrl: deny, old: deployment("team-a"),
			obj: deployment("team-a").Parallelism(3), want: "namespace team-a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var old *v1beta1.FlinkCluster
			if tc.old != nil {
				old = tc.old.Obj()
			}
			errs, warnings := policy.ValidateControllerScope(old, tc.obj.Obj(), tc.ctrl)
			switch {
			case tc.want == "":
				assert.Empty(t, errs)
				assert.Empty(t, warnings)
			case tc.wantErr:
				assert.Empty(t, warnings)
				require.Len(t, errs, 1)
				assert.Equal(t, field.ErrorTypeForbidden, errs[0].Type)
				assert.Equal(t, "spec.jobManager.deploymentType", errs[0].Field)
				assert.Equal(t, policy.RuleDeploymentWithoutController, policy.RuleOf(errs[0]))
				assert.Contains(t, errs[0].Detail, tc.want)
			default:
				assert.Empty(t, errs)
				require.Len(t, warnings, 1)
				assert.Contains(t, warnings[0], tc.want)
				assert.Contains(t, warnings[0], "runs its JobManager as a Job")
			}
		})
	}
}

func TestValidateControllerScopeNil(t *testing.T) {
	errs, warnings := policy.ValidateControllerScope(nil, nil, policy.ControllerScope{})
	assert.Empty(t, errs, fmt.Sprint(errs))
	assert.Empty(t, warnings)
}
