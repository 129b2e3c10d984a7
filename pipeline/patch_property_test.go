package pipeline

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/test/benchdata"
)

// FuzzAdmitPatch checks Admit's defaulting and DefaultingPatch on any FlinkCluster: Admit
// leaves its argument as it was, the patch applied to the object as sent decodes to the
// defaulted object, and a defaulted object sent again gets no patch. The seeds are the
// policy's example objects, the benchmark objects and shapes that leave the members
// defaulting changes set but incomplete.
func FuzzAdmitPatch(f *testing.F) {
	for _, s := range admitPatchSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Read as the webhook reads it (case-sensitive, a name given twice refused); the
		// webhook refuses unknown fields too, which the patch leaves alone anyway.
		obj := &v1beta1.FlinkCluster{}
		if strict, err := sigsjson.UnmarshalStrict(data, obj, sigsjson.DisallowDuplicateFields); err != nil || len(strict) > 0 {
			return
		}
		checkAdmitPatch(t, data, obj)
	})
}

func checkAdmitPatch(t *testing.T, sent []byte, obj *v1beta1.FlinkCluster) {
	t.Helper()
	decoded := obj.DeepCopy()
	v := Pipeline{}.Admit(nil, obj, Default)
	if !reflect.DeepEqual(obj, decoded) {
		t.Fatalf("Admit changed its argument:\n%s", cmp.Diff(decoded, obj))
	}
	ops, err := DefaultingPatch(sent, obj, v.Object)
	if err != nil {
		t.Fatalf("DefaultingPatch: %v", err)
	}
	patched := &v1beta1.FlinkCluster{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(apply(t, sent, ops), patched); err != nil {
		t.Fatalf("the patched object does not decode: %v", err)
	}
	if !equality.Semantic.DeepEqual(patched, v.Object) {
		t.Fatalf("the patched object is not the defaulted one (-defaulted +patched):\n%s\npatch: %s",
			cmp.Diff(v.Object, patched), marshal(t, ops))
	}
	checkChangedFields(t, sent, obj, v.Object, ops)
	again := Pipeline{}.Admit(nil, v.Object, Default)
	if ops, err := DefaultingPatch(marshal(t, v.Object), v.Object, again.Object); err != nil || len(ops) != 0 {
		t.Fatalf("a defaulted object got a patch (%v): %s", err, marshal(t, ops))
	}
}

// checkChangedFields checks that DefaultingPatch, which compares only the fields
// defaulting changed, answers as CreatePatch on the whole objects, anchored the same way:
// the same operations with the same values (whose members may come in another order).
func checkChangedFields(t *testing.T, sent []byte, decoded, defaulted *v1beta1.FlinkCluster, got []jsonpatch.Operation) {
	t.Helper()
	want := createPatchAnchored(t, sent, decoded, defaulted)
	if got, want := normalJSON(t, got), normalJSON(t, want); got != want {
		t.Fatalf("the patch of the changed fields is not the whole objects':\n%s\n%s", got, want)
	}
}

// createPatchAnchored is the patch of CreatePatch on the whole objects' JSON, anchored in
// sent by anchor.
func createPatchAnchored(t *testing.T, sent []byte, decoded, defaulted *v1beta1.FlinkCluster) []jsonpatch.Operation {
	t.Helper()
	ops, err := jsonpatch.CreatePatch(marshal(t, decoded), marshal(t, defaulted))
	if err != nil {
		t.Fatalf("CreatePatch on the whole objects: %v", err)
	}
	doc, err := split(sent)
	if err != nil {
		t.Fatalf("reading the object as sent: %v", err)
	}
	want, err := anchor(ops, doc, defaulted, "")
	if err != nil {
		t.Fatalf("anchoring the whole objects' patch: %v", err)
	}
	return want
}

// normalJSON writes v as JSON with the members of every object in order, numbers as written.
func normalJSON(t *testing.T, v any) string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(marshal(t, v)))
	d.UseNumber()
	var generic any
	if err := d.Decode(&generic); err != nil {
		t.Fatal(err)
	}
	return string(marshal(t, generic))
}

// TestDefaultingPatchKeepsTheUsersSpelling checks that the patch sets what defaulting
// sets and nothing else: a quantity or a null the Go type would write another way stays as
// sent.
func TestDefaultingPatchKeepsTheUsersSpelling(t *testing.T) {
	sent := []byte(`{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","metadata":{"name":"a"},` +
		`"spec":{"flinkVersion":"1.17","image":{"name":"flink","pullPolicy":"IfNotPresent"},"recreateOnUpdate":false,"batchScheduler":null,` +
		`"jobManager":{"accessScope":"Cluster","replicas":1,"resources":{"limits":{"cpu":"0.5","memory":"2Gi"}}}}}`)
	obj := &v1beta1.FlinkCluster{}
	if err := json.Unmarshal(sent, obj); err != nil {
		t.Fatal(err)
	}
	v := Pipeline{}.Admit(nil, obj, Default)
	ops, err := DefaultingPatch(sent, obj, v.Object)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		switch {
		case op.Path == "/spec/jobManager/resources/limits/cpu", op.Path == "/spec/batchScheduler",
			op.Path == "/metadata/creationTimestamp", op.Path == "/spec/image/pullPolicy":
			t.Errorf("the patch re-spells %s, which defaulting leaves alone: %s", op.Path, op.Json())
		}
	}
	if len(ops) == 0 {
		t.Fatal("no patch, but defaulting sets the ports and probes")
	}
}

// apply applies ops to doc.
func apply(t *testing.T, doc []byte, ops []jsonpatch.JsonPatchOperation) []byte {
	t.Helper()
	if len(ops) > 0 {
		p, err := jsonpatchapply.DecodePatch(marshal(t, ops))
		if err != nil {
			t.Fatalf("decoding the patch: %v", err)
		}
		if doc, err = p.Apply(doc); err != nil {
			t.Fatalf("applying %s: %v", marshal(t, ops), err)
		}
	}
	return doc
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// admitPatchSeeds returns the JSON of the policy's example objects and the benchmark
// objects, and of hand-made shapes.
func admitPatchSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	var seeds [][]byte
	files, err := filepath.Glob("../policy/testdata/*")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no policy examples: %v", err)
	}
	for _, name := range files {
		raw, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		seeds = append(seeds, js)
	}
	reviews, err := benchdata.Reviews()
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range reviews {
		for _, obj := range []*v1beta1.FlinkCluster{r.Object, r.Old} {
			if obj != nil {
				b, err := json.Marshal(obj)
				if err != nil {
					tb.Fatal(err)
				}
				seeds = append(seeds, b)
			}
		}
	}
	return append(seeds,
		[]byte(`{}`),
		[]byte(`{"spec":{"jobManager":null,"taskManager":null,"job":null}}`),
		[]byte(`{"spec":{"flinkVersion":"1.9","batchSchedulerName":"volcano","image":{"name":"flink"},"jobManager":{"ports":{"rpc":7000},"resources":{"limits":{"memory":"1Gi"}}}}}`),
		[]byte(`{"spec":{"flinkVersion":"1.17","flinkProperties":{"a/b~c":"d"},"hadoopConfig":{"configMapName":"h"},"jobManager":{"deploymentType":"Deployment","terminationGracePeriodSeconds":10,"ingress":{"hostFormat":"x"},"livenessProbe":{"httpGet":{"port":8081}}},"taskManager":{"readinessProbe":{"periodSeconds":3}},"job":{"jarFile":"j","cleanupPolicy":{"afterJobFails":"DeleteCluster"}}}}`),
	)
}

// TestComparePaths checks the order of a patch's operations: by path, list indices as
// numbers, and the removals of trailing list elements from the last one down.
func TestComparePaths(t *testing.T) {
	ops := []jsonpatch.JsonPatchOperation{
		{Operation: "add", Path: "/spec/taskManager/replicas"},
		{Operation: "remove", Path: "/spec/envVars/2"},
		{Operation: "add", Path: "/spec/envVars/10/name"},
		{Operation: "remove", Path: "/spec/envVars/3"},
		{Operation: "add", Path: "/spec/envVars/9/name"},
		{Operation: "add", Path: "/spec/jobManager/ports/ui"},
		{Operation: "add", Path: "/spec/jobManager"},
	}
	slices.SortStableFunc(ops, comparePaths)
	var got []string
	for _, op := range ops {
		got = append(got, op.Operation+" "+op.Path)
	}
	assert.Equal(t, []string{
		"remove /spec/envVars/3",
		"remove /spec/envVars/2",
		"add /spec/envVars/9/name",
		"add /spec/envVars/10/name",
		"add /spec/jobManager",
		"add /spec/jobManager/ports/ui",
		"add /spec/taskManager/replicas",
	}, got)
}
