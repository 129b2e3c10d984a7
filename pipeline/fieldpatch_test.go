package pipeline

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	sigsjson "sigs.k8s.io/json"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// TestFieldPatch checks the operations fieldPatch finds from the Go values, and where it
// anchors them in the JSON as sent, against CreatePatch on the objects' JSON anchored by
// anchor; a changed list is left to diffPatch.
func TestFieldPatch(t *testing.T) {
	const head = `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","metadata":{"name":"a"},`
	addLimits := func(fc *v1beta1.FlinkCluster) {
		if fc.Spec.Job == nil {
			fc.Spec.Job = &v1beta1.JobSpec{}
		}
		fc.Spec.Job.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	}
	tests := []struct {
		name   string
		sent   string
		change func(*v1beta1.FlinkCluster)
		want   []string // op and path of each operation
		diffed bool     // left to diffPatch
	}{{
		name:   "a struct member sent has as {} gets its members added",
		sent:   head + `"spec":{"flinkVersion":"1.17","image":{"name":"f"},"job":{"resources":{}}}}`,
		change: addLimits,
		want:   []string{"add /spec/job/resources/limits"},
	}, {
		name:   "a struct member sent has null is set whole",
		sent:   head + `"spec":{"flinkVersion":"1.17","image":{"name":"f"},"job":{"resources":null}}}`,
		change: addLimits,
		want:   []string{"add /spec/job/resources"},
	}, {
		name:   "a struct member sent lacks is set whole",
		sent:   head + `"spec":{"flinkVersion":"1.17","image":{"name":"f"},"job":{}}}`,
		change: addLimits,
		want:   []string{"add /spec/job/resources"},
	}, {
		name:   "a member behind an unset pointer is set with the pointer",
		sent:   head + `"spec":{"flinkVersion":"1.17","image":{"name":"f"}}}`,
		change: addLimits,
		want:   []string{"add /spec/job"},
	}, {
		name:   "no spec: the spec is set whole",
		sent:   head[:len(head)-1] + `}`,
		change: func(fc *v1beta1.FlinkCluster) { fc.Spec.Image.Name = "f" },
		want:   []string{"add /spec"},
	}, {
		name:   "a null object is set whole",
		sent:   `null`,
		change: func(fc *v1beta1.FlinkCluster) { fc.Spec.Image.Name = "f" },
		want:   []string{"add "},
	}, {
		name:   "a changed value is replaced",
		sent:   head + `"spec":{"flinkVersion":"1.17","image":{"name":"f","pullPolicy":"IfNotPresent"}}}`,
		change: func(fc *v1beta1.FlinkCluster) { fc.Spec.Image.PullPolicy = corev1.PullAlways },
		want:   []string{"replace /spec/image/pullPolicy"},
	}, {
		name:   "an empty value the Go type writes is replaced where sent has it",
		sent:   head + `"spec":{"flinkVersion":"","image":{"name":"f"}}}`,
		change: func(fc *v1beta1.FlinkCluster) { fc.Spec.FlinkVersion = "1.17" },
		want:   []string{"replace /spec/flinkVersion"},
	}, {
		name:   "an empty value the Go type writes is added where sent lacks it",
		sent:   head + `"spec":{"image":{"name":"f"}}}`,
		change: func(fc *v1beta1.FlinkCluster) { fc.Spec.FlinkVersion = "1.17" },
		want:   []string{"add /spec/flinkVersion"},
	}, {
		name: "map entries are added, replaced and removed by key, escaped",
		sent: head + `"spec":{"flinkVersion":"1.17","image":{"name":"f"},"flinkProperties":{"a":"1","b":"2"}}}`,
		change: func(fc *v1beta1.FlinkCluster) {
			fc.Spec.FlinkProperties = map[string]string{"b": "3", "c/d~e": "4"}
		},
		want: []string{"remove /spec/flinkProperties/a", "replace /spec/flinkProperties/b", "add /spec/flinkProperties/c~1d~0e"},
	}, {
		name:   "a quantity spelled another way is no change",
		sent:   head + `"spec":{"flinkVersion":"1.17","image":{"name":"f"},"jobManager":{"memoryOffHeapMin":"1000m"}}}`,
		change: func(fc *v1beta1.FlinkCluster) { fc.Spec.JobManager.MemoryOffHeapMin = resource.MustParse("1") },
		want:   nil,
	}, {
		name:   "a removed pointer is removed",
		sent:   head + `"spec":{"flinkVersion":"1.17","image":{"name":"f"},"recreateOnUpdate":false}}`,
		change: func(fc *v1beta1.FlinkCluster) { fc.Spec.RecreateOnUpdate = nil },
		want:   []string{"remove /spec/recreateOnUpdate"},
	}, {
		name:   "a changed list is left to diffPatch",
		sent:   head + `"spec":{"flinkVersion":"1.17","image":{"name":"f"},"envVars":[{"name":"x"}]}}`,
		change: func(fc *v1beta1.FlinkCluster) { fc.Spec.EnvVars = append(fc.Spec.EnvVars, corev1.EnvVar{Name: "y"}) },
		want:   []string{"add /spec/envVars/1"},
		diffed: true,
	}, {
		name:   "a list set where there was none is added whole",
		sent:   head + `"spec":{"flinkVersion":"1.17","image":{"name":"f"}}}`,
		change: func(fc *v1beta1.FlinkCluster) { fc.Spec.EnvVars = []corev1.EnvVar{{Name: "y"}} },
		want:   []string{"add /spec/envVars"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sent := []byte(tt.sent)
			decoded := decodeSent(t, sent)
			changed := decoded.DeepCopy()
			tt.change(changed)
			_, ok := fieldPatch(sent, decoded, changed)
			assert.Equal(t, !tt.diffed, ok, "fieldPatch answered")
			ops, err := DefaultingPatch(sent, decoded, changed)
			require.NoError(t, err)
			var got []string
			for _, op := range ops {
				got = append(got, op.Operation+" "+op.Path)
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, normalJSON(t, createPatchAnchored(t, sent, decoded, changed)), normalJSON(t, ops))
			checkApplies(t, sent, ops, changed)
		})
	}
}

// FuzzFieldPatch checks fieldPatch against CreatePatch on the objects' JSON, anchored by
// anchor, for any two FlinkClusters: the object as sent and any other as the defaulted one.
func FuzzFieldPatch(f *testing.F) {
	seeds := admitPatchSeeds(f)
	for i, s := range seeds {
		f.Add(s, seeds[(i+1)%len(seeds)])
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, sent, other []byte) {
		decoded, changed := &v1beta1.FlinkCluster{}, &v1beta1.FlinkCluster{}
		for _, c := range []struct {
			data []byte
			obj  *v1beta1.FlinkCluster
		}{{sent, decoded}, {other, changed}} {
			if strict, err := sigsjson.UnmarshalStrict(c.data, c.obj, sigsjson.DisallowDuplicateFields); err != nil || len(strict) > 0 {
				return
			}
		}
		ops, err := DefaultingPatch(sent, decoded, changed)
		if err != nil {
			t.Fatalf("DefaultingPatch: %v", err)
		}
		if got, want := normalJSON(t, ops), normalJSON(t, createPatchAnchored(t, sent, decoded, changed)); got != want {
			t.Fatalf("the patch is not CreatePatch's:\n%s\n%s", got, want)
		}
		checkApplies(t, sent, ops, changed)
	})
}

// decodeSent decodes an object as the webhook does: case-sensitively, no name given twice.
func decodeSent(t *testing.T, sent []byte) *v1beta1.FlinkCluster {
	t.Helper()
	fc := &v1beta1.FlinkCluster{}
	strict, err := sigsjson.UnmarshalStrict(sent, fc, sigsjson.DisallowDuplicateFields)
	require.NoError(t, err)
	require.Empty(t, strict)
	return fc
}

// checkApplies checks that ops apply to sent and give want.
func checkApplies(t *testing.T, sent []byte, ops []jsonpatch.Operation, want *v1beta1.FlinkCluster) {
	t.Helper()
	patched := &v1beta1.FlinkCluster{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(apply(t, sent, ops), patched); err != nil {
		t.Fatalf("the patched object does not decode: %v", err)
	}
	if !equality.Semantic.DeepEqual(patched, want) {
		b, _ := json.Marshal(patched)
		t.Fatalf("the patched object is not the one wanted:\n%s", b)
	}
}
