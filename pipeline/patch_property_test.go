package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	"gomodules.xyz/jsonpatch/v2"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/benchdata"
)

// FuzzAdmitPatch checks Admit's defaulting against the generic way of building a patch:
// the full JSON diff of the object before and after (jsonpatch.CreatePatch). On any
// FlinkCluster, Admit's patch applied to the object as sent gives exactly what the full
// diff's patch gives, which is the defaulted object, and Admit leaves its argument as it
// was. The seeds are the policy's example objects, the benchmark objects and shapes that
// leave the members defaulting changes set but incomplete.
func FuzzAdmitPatch(f *testing.F) {
	for _, s := range admitPatchSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		obj := &v1beta1.FlinkCluster{}
		if json.Unmarshal(data, obj) != nil {
			return
		}
		checkAdmitPatch(t, obj)
	})
}

func checkAdmitPatch(t *testing.T, obj *v1beta1.FlinkCluster) {
	t.Helper()
	sent := obj.DeepCopy()
	v := Pipeline{}.Admit(nil, obj, Default)
	if !reflect.DeepEqual(obj, sent) {
		t.Fatalf("Admit changed its argument:\n%s", cmp.Diff(sent, obj))
	}

	before, after := marshal(t, sent), marshal(t, v.Object)
	full, err := jsonpatch.CreatePatch(before, after)
	if err != nil {
		t.Fatalf("the full diff: %v", err)
	}
	ours := apply(t, before, v.Patch)
	if want := apply(t, before, full); !reflect.DeepEqual(ours, want) {
		t.Fatalf("Admit's patch gives another object than the full diff's (-full diff +Admit):\n%s\nAdmit's patch: %s\nfull diff: %s",
			cmp.Diff(want, ours), marshal(t, v.Patch), marshal(t, full))
	}
	if (len(v.Patch) == 0) != (len(full) == 0) {
		t.Fatalf("Admit's patch has %d operations, the full diff %d", len(v.Patch), len(full))
	}
}

// apply applies ops to doc and returns the result as generic JSON values, for comparison.
func apply(t *testing.T, doc []byte, ops []jsonpatch.JsonPatchOperation) any {
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
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	return v
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
