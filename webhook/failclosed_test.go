package webhook

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestFailClosed posts reviews that the webhooks cannot judge to both of them: each is
// denied with a 400 status that says why, never allowed, never a 5xx, never a panic.
func TestFailClosed(t *testing.T) {
	raw := func(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }
	tests := []struct {
		name   string
		modify func(r *admissionv1.AdmissionRequest)
		// msg is a part of the denial's message.
		msg string
	}{
		{
			name:   "deny: another group",
			modify: func(r *admissionv1.AdmissionRequest) { r.Resource.Group, r.Kind.Group = "apps", "apps" },
			msg:    "this webhook admits flinkclusters.flinkoperator.k8s.io/v1beta1 only, not apps/v1beta1, resource flinkclusters",
		},
		{
			name:   "deny: another version",
			modify: func(r *admissionv1.AdmissionRequest) { r.Resource.Version, r.Kind.Version = "v1beta2", "v1beta2" },
			msg:    "not flinkoperator.k8s.io/v1beta2, resource flinkclusters",
		},
		{
			name:   "deny: another resource",
			modify: func(r *admissionv1.AdmissionRequest) { r.Resource.Resource = "flinksessions" },
			msg:    "resource flinksessions",
		},
		{
			name:   "deny: another kind",
			modify: func(r *admissionv1.AdmissionRequest) { r.Kind.Kind = "Deployment" },
			msg:    "this webhook admits kind FlinkCluster (flinkoperator.k8s.io/v1beta1) only, not flinkoperator.k8s.io/v1beta1, kind Deployment",
		},
		{
			name:   "deny: empty resource",
			modify: func(r *admissionv1.AdmissionRequest) { r.Resource = metav1.GroupVersionResource{} },
			msg:    msgNoResource,
		},
		{
			name:   "deny: status subresource",
			modify: func(r *admissionv1.AdmissionRequest) { r.SubResource = "status" },
			msg:    "not the status subresource",
		},
		{
			name:   "deny: DELETE",
			modify: func(r *admissionv1.AdmissionRequest) { r.Operation = admissionv1.Delete },
			msg:    `operation "DELETE" is not supported`,
		},
		{
			name:   "deny: CONNECT",
			modify: func(r *admissionv1.AdmissionRequest) { r.Operation = admissionv1.Connect },
			msg:    `operation "CONNECT" is not supported`,
		},
		{
			name:   "deny: unknown operation",
			modify: func(r *admissionv1.AdmissionRequest) { r.Operation = "PATCH" },
			msg:    `operation "PATCH" is not supported`,
		},
		{
			name:   "deny: no operation",
			modify: func(r *admissionv1.AdmissionRequest) { r.Operation = "" },
			msg:    `operation "" is not supported`,
		},
		{
			name:   "deny: no uid",
			modify: func(r *admissionv1.AdmissionRequest) { r.UID = "" },
			msg:    msgNoUID,
		},
		{
			name:   "deny: no object",
			modify: func(r *admissionv1.AdmissionRequest) { r.Object = runtime.RawExtension{} },
			msg:    msgNoObject,
		},
		{
			name:   "deny: null object",
			modify: func(r *admissionv1.AdmissionRequest) { r.Object = raw("null") },
			msg:    msgNoObject,
		},
		{
			name:   "deny: object is a list",
			modify: func(r *admissionv1.AdmissionRequest) { r.Object = raw(`[{"kind":"FlinkCluster"}]`) },
			msg:    "the object is not a valid FlinkCluster",
		},
		{
			name:   "deny: object is a string",
			modify: func(r *admissionv1.AdmissionRequest) { r.Object = raw(`"FlinkCluster"`) },
			msg:    "the object is not a valid FlinkCluster",
		},
		{
			name: "deny: object with a wrong type (number for a string)",
			modify: func(r *admissionv1.AdmissionRequest) {
				r.Object = raw(string(mustJSON(set(jobCluster(), "spec.flinkVersion", 1.14))))
			},
			msg: "the object is not a valid FlinkCluster",
		},
		{
			name: "deny: object with an unknown field",
			modify: func(r *admissionv1.AdmissionRequest) {
				r.Object = raw(string(mustJSON(set(jobCluster(), "spec.jobManager.deploymentMode", "Deployment"))))
			},
			msg: `unknown field "spec.jobManager.deploymentMode"`,
		},
		{
			name: "deny: object with a field in the wrong case",
			modify: func(r *admissionv1.AdmissionRequest) {
				o := jobCluster()
				o["Spec"] = o["spec"]
				delete(o, "spec")
				r.Object = raw(string(mustJSON(o)))
			},
			msg: `unknown field "Spec"`,
		},
		{
			name: "deny: object of another kind",
			modify: func(r *admissionv1.AdmissionRequest) {
				r.Object = raw(string(mustJSON(set(jobCluster(), "kind", "FlinkSession"))))
			},
			msg: `kind "FlinkSession"`,
		},
		{
			name: "deny: object of another apiVersion",
			modify: func(r *admissionv1.AdmissionRequest) {
				r.Object = raw(string(mustJSON(set(jobCluster(), "apiVersion", "flinkoperator.k8s.io/v1"))))
			},
			msg: `apiVersion "flinkoperator.k8s.io/v1"`,
		},
		{
			name:   "deny: object of unknown shape",
			modify: func(r *admissionv1.AdmissionRequest) { r.Object = raw(`{"foo":{"bar":[1,2,3]}}`) },
			msg:    `unknown field "foo"`,
		},
		{
			name: "deny: UPDATE without the old object",
			modify: func(r *admissionv1.AdmissionRequest) {
				r.Operation = admissionv1.Update
				r.OldObject = runtime.RawExtension{}
			},
			msg: msgNoOldObject,
		},
	}
	for _, tt := range tests {
		for _, wh := range []struct {
			name string
			h    http.Handler
		}{{"validate", testHandlers.Validate}, {"mutate", testHandlers.Mutate}} {
			t.Run(wh.name+"/"+tt.name, func(t *testing.T) {
				req := request(admissionv1.Create, jobCluster(), nil)
				tt.modify(req)
				a := post(t, wh.h, reviewBody(req))
				if a.code != http.StatusOK {
					t.Errorf("HTTP status %d, want 200 (a well-formed review gets a review back)", a.code)
				}
				resp := a.response(t)
				if resp.Allowed {
					t.Fatalf("allowed, want denied: %s", a.body)
				}
				if resp.Result == nil || resp.Result.Code != http.StatusBadRequest {
					t.Fatalf("result %+v, want code 400", resp.Result)
				}
				if !strings.Contains(resp.Result.Message, tt.msg) {
					t.Errorf("message %q does not say %q", resp.Result.Message, tt.msg)
				}
				if len(resp.Patch) != 0 {
					t.Errorf("a denial carries a patch: %s", resp.Patch)
				}
			})
		}
	}
}

// TestFailClosedOldObject checks the validating webhook's decoding of the old object (the
// mutating webhook does not need it beyond its presence).
func TestFailClosedOldObject(t *testing.T) {
	for name, old := range map[string]string{
		"deny: old object is a number":           `42`,
		"deny: old object with an unknown field": string(mustJSON(set(jobCluster(), "spec.unknown", true))),
		"deny: old object of another kind":       string(mustJSON(set(jobCluster(), "kind", "Pod"))),
	} {
		t.Run(name, func(t *testing.T) {
			req := request(admissionv1.Update, jobCluster(), nil)
			req.OldObject.Raw = json.RawMessage(old)
			resp := post(t, testHandlers.Validate, reviewBody(req)).response(t)
			if resp.Allowed || resp.Result.Code != http.StatusBadRequest ||
				!strings.Contains(resp.Result.Message, "the old object is not a valid FlinkCluster") {
				t.Errorf("got allowed=%v %+v, want a 400 denial about the old object", resp.Allowed, resp.Result)
			}
		})
	}
}
