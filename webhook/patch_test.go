package webhook

import (
	"encoding/json"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/flink-admission/flink-admission/policy"
)

// patchCases are objects as the API server might send them, shaped to exercise the places
// where the patch must not assume what the sent JSON holds.
func patchCases(t testing.TB) map[string][]byte {
	cases := map[string][]byte{
		"job cluster":                             mustJSON(jobCluster()),
		"Deployment cluster":                      mustJSON(deploymentCluster()),
		"no jobManager":                           mustJSON(del(deploymentCluster(), "spec.jobManager")),
		"null jobManager":                         mustJSON(set(jobCluster(), "spec.jobManager", nil)),
		"empty jobManager":                        mustJSON(set(jobCluster(), "spec.jobManager", obj{})),
		"null flinkProperties, Deployment":        mustJSON(set(set(deploymentCluster(), "spec.flinkProperties", nil), "spec.jobManager.deploymentType", "Deployment")),
		"empty flinkProperties, Deployment":       mustJSON(set(deploymentCluster(), "spec.flinkProperties", obj{})),
		"no image":                                mustJSON(del(jobCluster(), "spec.image")),
		"empty image":                             mustJSON(set(jobCluster(), "spec.image", obj{})),
		"no spec":                                 mustJSON(del(jobCluster(), "spec")),
		"keys to escape":                          mustJSON(set(set(deploymentCluster(), "metadata.annotations", obj{"a/b": "1", "c~d": "2"}), "spec.flinkProperties.x/y~z", "v")),
		"empty lists and maps":                    mustJSON(set(set(jobCluster(), "spec.envVars", []any{}), "metadata.labels", obj{})),
		"quantity zero":                           mustJSON(set(jobCluster(), "spec.taskManager.memoryOffHeapMin", "0")),
		"unnormalized quantity":                   mustJSON(set(jobCluster(), "spec.jobManager.resources.limits.cpu", "0.5")),
		"batchSchedulerName":                      mustJSON(set(jobCluster(), "spec.batchSchedulerName", "volcano")),
		"user probe merged over the default":      mustJSON(set(jobCluster(), "spec.jobManager.livenessProbe", obj{"periodSeconds": int64(7)})),
		"Flink 1.10 memory model":                 mustJSON(set(jobCluster(), "spec.flinkVersion", "1.10")),
		"status present":                          mustJSON(set(jobCluster(), "status", obj{"state": "Running"})),
		"grace period shorter than the preStop":   mustJSON(set(deploymentCluster(), "spec.jobManager.terminationGracePeriodSeconds", int64(10))),
		"bad flinkVersion, memory left unset":     mustJSON(set(jobCluster(), "spec.flinkVersion", "latest")),
		"hadoopConfig without mountPath":          mustJSON(set(jobCluster(), "spec.hadoopConfig", obj{"configMapName": "hadoop"})),
		"Deployment with the user's shutdown key": mustJSON(set(deploymentCluster(), "spec.flinkProperties.execution\\.shutdown-on-application-finish", "false")),
	}
	for name, body := range benchReviews(t) {
		var review struct {
			Request struct{ Object json.RawMessage }
		}
		if err := json.Unmarshal(body, &review); err != nil {
			t.Fatal(err)
		}
		cases[name] = review.Request.Object
	}
	return cases
}

// TestDefaultingPatch checks, for objects shaped every way the JSON can be, that the
// mutating webhook's patch applies to the object as sent and gives the defaulted object,
// and that the defaulted object sent again gets no patch.
func TestDefaultingPatch(t *testing.T) {
	for name, raw := range patchCases(t) {
		t.Run(name, func(t *testing.T) {
			checkDefaultingPatch(t, raw)
		})
	}
}

// FuzzDefaultingPatch runs the same check on random objects.
func FuzzDefaultingPatch(f *testing.F) {
	for _, raw := range patchCases(f) {
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkDefaultingPatch(t, raw)
	})
}

func checkDefaultingPatch(t *testing.T, raw []byte) {
	t.Helper()
	fc, err := decodeCluster(raw)
	if err != nil || !json.Valid(raw) {
		return // refused before any patch is built
	}
	policy.Default(fc)

	patched := patchedObject(t, raw)
	got, err := decodeCluster(patched)
	if err != nil {
		t.Fatalf("the patched object does not decode: %v\n%s", err, patched)
	}
	if !equality.Semantic.DeepEqual(got, fc) {
		t.Fatalf("patched object differs from the defaulted one (-defaulted +patched):\n%s", cmp.Diff(fc, got))
	}
	// Defaulting is idempotent, so the defaulted object gets no patch.
	if again := patchedObject(t, patched); string(again) != string(patched) {
		t.Fatalf("the defaulted object got a patch:\n%s\n%s", patched, again)
	}
}

// patchedObject posts raw to the mutating webhook as a CREATE and returns it with the
// answer's patch applied.
func patchedObject(t *testing.T, raw []byte) []byte {
	t.Helper()
	req := request(admissionv1.Create, nil, nil)
	req.Object.Raw = raw
	resp := post(t, testHandlers.Mutate, reviewBody(req)).response(t)
	if !resp.Allowed {
		t.Fatalf("the mutating webhook denied the object: %+v", resp.Result)
	}
	if len(resp.Patch) == 0 {
		return raw
	}
	return applyOps(t, raw, resp.Patch)
}

func applyOps(t *testing.T, raw, ops []byte) []byte {
	t.Helper()
	p, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		t.Fatalf("decoding the patch %s: %v", ops, err)
	}
	out, err := p.Apply(raw)
	if err != nil {
		t.Fatalf("the patch does not apply to the object as sent: %v\npatch: %s\nobject: %s", err, ops, raw)
	}
	return out
}
