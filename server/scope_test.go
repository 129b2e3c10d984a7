package server

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/policy"
	"github.com/flink-admission/flink-admission/scope"
	"github.com/flink-admission/flink-admission/webhook"
)

// TestControllerScopeReachesWebhookAndCache: the webhook judges Deployment clusters against
// the scope the controller runs with (none when the controller is off), and the manager's
// cache watches only the scope's namespaces.
func TestControllerScopeReachesWebhookAndCache(t *testing.T) {
	s := scope.Scope{Namespaces: []string{"team-b"}}
	cases := []struct {
		name string
		o    Options
		want *policy.ControllerScope
	}{
		{name: "controller on: its scope, warnings", o: Options{EnableController: true, Controller: controller.Options{Scope: s}, DeploymentWithoutController: DeploymentCheckWarn},
			want: &policy.ControllerScope{Running: true, Scope: s}},
		{name: "controller on: deny", o: Options{EnableController: true, DeploymentWithoutController: DeploymentCheckDeny},
			want: &policy.ControllerScope{Running: true, Deny: true}},
		{name: "webhook only: no controller", o: Options{Controller: controller.Options{Scope: s}, DeploymentWithoutController: DeploymentCheckWarn},
			want: &policy.ControllerScope{Scope: s}},
		{name: "unset (dev): no check", o: Options{EnableController: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.o.controllerScope())
		})
	}
	on := Options{EnableController: true, Controller: controller.Options{Scope: s}}
	assert.Equal(t, map[string]cache.Config{"team-b": {}}, on.cacheOptions().DefaultNamespaces)
}

// TestWebhookOnlyServerWarnsAboutDeployments: served over HTTPS, a webhook-only server (no
// Deployment-aware controller anywhere) admits a Deployment-mode cluster with the warning, or
// with deny refuses it, naming the reason.
func TestWebhookOnlyServerWarnsAboutDeployments(t *testing.T) {
	fc := builder.MakeFlinkCluster("x", "default").DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).HA().Obj()
	policy.Default(fc)
	object, err := json.Marshal(fc)
	require.NoError(t, err)
	const reason = "flink-admission runs as a webhook only (--enable-controller=false)"
	for _, mode := range []string{DeploymentCheckWarn, DeploymentCheckDeny} {
		t.Run(mode, func(t *testing.T) {
			ts := startFilesServer(t, func(o *Options) { o.DeploymentWithoutController = mode })
			client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ts.pool}}, Timeout: 10 * time.Second}
			resp, err := client.Post("https://"+ts.addr+webhook.ValidatePath, "application/json", bytes.NewReader(reviewOf(t, object)))
			require.NoError(t, err)
			defer func() { _ = resp.Body.Close() }()
			var out admissionv1.AdmissionReview
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
			require.NotNil(t, out.Response)
			if mode == DeploymentCheckWarn {
				assert.True(t, out.Response.Allowed, "%v", out.Response.Result)
				require.Len(t, out.Response.Warnings, 1)
				assert.Contains(t, out.Response.Warnings[0], reason)
				return
			}
			assert.False(t, out.Response.Allowed)
			require.NotNil(t, out.Response.Result)
			assert.Contains(t, out.Response.Result.Message, reason)
		})
	}
}
