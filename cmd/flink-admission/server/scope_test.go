package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/policy"
	"github.com/flink-admission/flink-admission/scope"
)

// TestControllerScopeReachesWebhookAndCache: the webhook judges Deployment clusters against
// the scope the controller runs with (none when the controller is off), and the manager's
// cache watches only the scope's namespaces.
func TestControllerScopeReachesWebhookAndCache(t *testing.T) {
	s := scope.Scope{Namespaces: []string{"team-b"}}
	cases := []struct {
		name string
		o    Options
		want policy.ControllerScope
	}{
		{name: "controller on: its scope, warnings", o: Options{EnableController: true, Controller: controller.Options{Scope: s}},
			want: policy.ControllerScope{Running: true, Scope: s}},
		{name: "controller on: deny", o: Options{EnableController: true, DeploymentWithoutController: DeploymentCheckDeny},
			want: policy.ControllerScope{Running: true, Deny: true}},
		{name: "webhook only: no controller", o: Options{Controller: controller.Options{Scope: s}},
			want: policy.ControllerScope{Scope: s}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, *tc.o.controllerScope())
		})
	}
	on := Options{EnableController: true, Controller: controller.Options{Scope: s}}
	assert.Equal(t, map[string]cache.Config{"team-b": {}}, on.cacheOptions().DefaultNamespaces)
}
