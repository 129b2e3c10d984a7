package webhook

import (
	"encoding/json"
	"net/http"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
)

// mutate posts req to the mutating webhook, checks that it is allowed, and returns the
// object with the answer's patch applied, and the patch operations.
func mutate(t *testing.T, req *admissionv1.AdmissionRequest) (obj, []map[string]any) {
	t.Helper()
	a := post(t, testHandlers.Mutate, reviewBody(req))
	resp := a.response(t)
	if a.code != http.StatusOK || !resp.Allowed {
		t.Fatalf("mutate: HTTP %d, allowed %v: %s", a.code, resp.Allowed, a.body)
	}
	if len(resp.Patch) == 0 {
		if resp.PatchType != nil {
			t.Errorf("patch type %q without a patch", *resp.PatchType)
		}
		return decodeObj(t, req.Object.Raw), nil
	}
	if resp.PatchType == nil || *resp.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("patch type %v, want JSONPatch", resp.PatchType)
	}
	patch, err := jsonpatch.DecodePatch(resp.Patch)
	if err != nil {
		t.Fatalf("decoding the patch: %v", err)
	}
	patched, err := patch.Apply(req.Object.Raw)
	if err != nil {
		t.Fatalf("applying the patch %s: %v", resp.Patch, err)
	}
	var ops []map[string]any
	if err := json.Unmarshal(resp.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	return decodeObj(t, patched), ops
}

func decodeObj(t *testing.T, b []byte) obj {
	t.Helper()
	var o obj
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// get reads a dotted path of o ("\\." escapes a dot inside a key).
func get(o obj, path string) any {
	var v any = o
	for _, k := range splitPath(path) {
		m, ok := v.(obj)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// TestMutateDeploymentShutdownDefaults shows the patch a Deployment JobManager gets: the
// shutdown settings it needs, as JSON patch operations on the object as sent.
func TestMutateDeploymentShutdownDefaults(t *testing.T) {
	patched, ops := mutate(t, request(admissionv1.Create, deploymentCluster(), nil))
	for _, want := range []map[string]any{
		{"op": "add", "path": "/spec/flinkProperties/execution.shutdown-on-application-finish", "value": "false"},
		{"op": "add", "path": "/spec/flinkProperties/execution.submit-failed-job-on-application-error", "value": "true"},
		{"op": "add", "path": "/spec/jobManager/preStopDelaySeconds", "value": float64(15)},
		{"op": "add", "path": "/spec/jobManager/terminationGracePeriodSeconds", "value": float64(60)},
	} {
		found := false
		for _, op := range ops {
			if cmp.Equal(op, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("patch has no operation %v; patch: %v", want, ops)
		}
	}
	for path, want := range map[string]any{
		"spec.flinkProperties.execution\\.shutdown-on-application-finish":         "false",
		"spec.flinkProperties.execution\\.submit-failed-job-on-application-error": "true",
		// The user's properties stay.
		"spec.flinkProperties.high-availability\\.type": "kubernetes",
		"spec.jobManager.deploymentType":                "Deployment",
	} {
		if got := get(patched, path); got != want {
			t.Errorf("patched %s = %v, want %v", path, got, want)
		}
	}
}

func TestMutate(t *testing.T) {
	tests := []struct {
		name string
		req  *admissionv1.AdmissionRequest
		// want are paths of the patched object and their values.
		want map[string]any
	}{
		{
			name: "default: a user's shutdown setting is kept",
			req: request(admissionv1.Create,
				set(deploymentCluster(), "spec.flinkProperties.execution\\.submit-failed-job-on-application-error", "false"), nil),
			want: map[string]any{
				"spec.flinkProperties.execution\\.submit-failed-job-on-application-error": "false",
				"spec.flinkProperties.execution\\.shutdown-on-application-finish":         "false",
			},
		},
		{
			name: "default: a job cluster gets no Deployment settings",
			req:  request(admissionv1.Create, jobCluster(), nil),
			want: map[string]any{
				"spec.flinkProperties.execution\\.shutdown-on-application-finish": nil,
				"spec.image.pullPolicy": "Always",
			},
		},
		{
			name: "default: an UPDATE is defaulted too",
			req:  request(admissionv1.Update, deploymentCluster(), deploymentCluster()),
			want: map[string]any{"spec.flinkProperties.execution\\.shutdown-on-application-finish": "false"},
		},
		{
			name: "keep: empty lists and maps the request carries are not removed",
			req: request(admissionv1.Create,
				set(set(jobCluster(), "spec.envVars", []any{}), "metadata.annotations", obj{}), nil),
			want: map[string]any{"spec.envVars": []any{}, "metadata.annotations": obj{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			patched, ops := mutate(t, tt.req)
			for path, want := range tt.want {
				if got := get(patched, path); !cmp.Equal(got, want) {
					t.Errorf("patched %s = %#v, want %#v", path, got, want)
				}
			}
			for _, op := range ops {
				if op["op"] == "remove" {
					t.Errorf("patch removes %v", op["path"])
				}
			}
		})
	}
}

// TestMutateIdempotent checks that a defaulted object gets no patch the second time, and
// that it passes the validating webhook on create and update (defaulting and validation
// never disagree).
func TestMutateIdempotent(t *testing.T) {
	for name, o := range map[string]obj{"job cluster": jobCluster(), "Deployment cluster": deploymentCluster()} {
		t.Run(name, func(t *testing.T) {
			patched, ops := mutate(t, request(admissionv1.Create, o, nil))
			if len(ops) == 0 {
				t.Fatal("the first mutation gave no patch; the fixture should lack defaults")
			}
			again, ops := mutate(t, request(admissionv1.Update, patched, patched))
			if len(ops) != 0 {
				t.Errorf("a defaulted object got a patch: %v", ops)
			}
			if !cmp.Equal(again, patched) {
				t.Errorf("object changed: %s", cmp.Diff(patched, again))
			}
			for _, req := range []*admissionv1.AdmissionRequest{
				request(admissionv1.Create, patched, nil),
				request(admissionv1.Update, patched, patched),
				request(admissionv1.Update, patched, o),
			} {
				resp := post(t, testHandlers.Validate, reviewBody(req)).response(t)
				if !resp.Allowed {
					t.Errorf("%s of the defaulted object denied: %s", req.Operation, resp.Result.Message)
				}
			}
		})
	}
}
