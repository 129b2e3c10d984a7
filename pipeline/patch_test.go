package pipeline

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// TestAnchor checks how the operations computed from the Go types' JSON are rewritten to
// apply to the JSON as sent, which may lack members, or have them null, where the Go types
// write empty values.
func TestAnchor(t *testing.T) {
	after := `{"image":{"name":"flink","pullPolicy":"IfNotPresent"},"a/b":{"c":"d"},"envVars":[{"name":"x","value":"1"}],"n":{"m":{"k":12345678901234567890}}}`
	tests := []struct {
		name string
		sent string
		ops  []jsonpatch.Operation
		want []jsonpatch.Operation
	}{{
		name: "a member whose parent sent has is patched where it is",
		sent: `{"image":{"name":"flink"}}`,
		ops:  []jsonpatch.Operation{{Operation: "add", Path: "/image/pullPolicy", Value: "IfNotPresent"}},
		want: []jsonpatch.Operation{{Operation: "add", Path: "/spec/image/pullPolicy", Value: "IfNotPresent"}},
	}, {
		name: "the parent sent lacks is set whole, once",
		sent: `{}`,
		ops: []jsonpatch.Operation{
			{Operation: "add", Path: "/image/pullPolicy", Value: "IfNotPresent"},
			{Operation: "replace", Path: "/image/name", Value: "flink"},
		},
		want: []jsonpatch.Operation{{Operation: "add", Path: "/spec/image", Value: map[string]any{"name": "flink", "pullPolicy": "IfNotPresent"}}},
	}, {
		name: "a null parent is replaced whole",
		sent: `{"image":null}`,
		ops:  []jsonpatch.Operation{{Operation: "add", Path: "/image/pullPolicy", Value: "IfNotPresent"}},
		want: []jsonpatch.Operation{{Operation: "add", Path: "/spec/image", Value: map[string]any{"name": "flink", "pullPolicy": "IfNotPresent"}}},
	}, {
		name: "a parent sent has as no object is replaced whole",
		sent: `{"image":"flink"}`,
		ops:  []jsonpatch.Operation{{Operation: "add", Path: "/image/pullPolicy", Value: "IfNotPresent"}},
		want: []jsonpatch.Operation{{Operation: "add", Path: "/spec/image", Value: map[string]any{"name": "flink", "pullPolicy": "IfNotPresent"}}},
	}, {
		name: "only the first member missing on the way is set, numbers unrounded",
		sent: `{"n":{}}`,
		ops:  []jsonpatch.Operation{{Operation: "add", Path: "/n/m/k", Value: json.Number("12345678901234567890")}},
		want: []jsonpatch.Operation{{Operation: "add", Path: "/spec/n/m", Value: map[string]any{"k": json.Number("12345678901234567890")}}},
	}, {
		name: "a null list element is replaced, not inserted before",
		sent: `{"envVars":[null]}`,
		ops:  []jsonpatch.Operation{{Operation: "replace", Path: "/envVars/0/name", Value: "x"}},
		want: []jsonpatch.Operation{{Operation: "replace", Path: "/spec/envVars/0", Value: map[string]any{"name": "x", "value": "1"}}},
	}, {
		name: "a member to escape keeps its escape",
		sent: `{}`,
		ops:  []jsonpatch.Operation{{Operation: "add", Path: "/a~1b/c", Value: "d"}},
		want: []jsonpatch.Operation{{Operation: "add", Path: "/spec/a~1b", Value: map[string]any{"c": "d"}}},
	}, {
		name: "removing a member sent lacks is no operation",
		sent: `{"image":{}}`,
		ops:  []jsonpatch.Operation{{Operation: "remove", Path: "/image/tag"}},
		want: nil,
	}, {
		name: "replacing a member sent lacks adds it",
		sent: `{"image":{}}`,
		ops:  []jsonpatch.Operation{{Operation: "replace", Path: "/image/name", Value: "flink"}},
		want: []jsonpatch.Operation{{Operation: "add", Path: "/spec/image/name", Value: "flink"}},
	}, {
		name: "no spec at all: the spec is set whole",
		sent: `null`,
		ops: []jsonpatch.Operation{
			{Operation: "add", Path: "/image/pullPolicy", Value: "IfNotPresent"},
			{Operation: "add", Path: "/envVars/0", Value: map[string]any{"name": "x", "value": "1"}},
		},
		want: []jsonpatch.Operation{{Operation: "add", Path: "/spec", Value: mustValue(t, after)}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sent, err := split(json.RawMessage(tt.sent))
			require.NoError(t, err)
			got, err := anchor(slices.Clone(tt.ops), sent, json.RawMessage(after), "/spec")
			require.NoError(t, err)
			assert.Equal(t, string(marshal(t, tt.want)), string(marshal(t, got)))
		})
	}
}

// mustValue decodes one JSON value as the patch reads the object as sent.
func mustValue(t *testing.T, doc string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(doc))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v))
	return v
}

// TestDefaultingPatchLeavesManagedFieldsAlone checks that a stored object's managed fields
// (and the rest of its metadata and status) get no operation, however they are spelled.
func TestDefaultingPatchLeavesManagedFieldsAlone(t *testing.T) {
	sent := []byte(`{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster",` +
		`"metadata":{"name":"a","namespace":"n","creationTimestamp":null,"managedFields":[{"manager":"kubectl",` +
		`"operation":"Update","apiVersion":"flinkoperator.k8s.io/v1beta1","time":"2026-12-01T10:00:00Z",` +
		`"fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:flinkVersion":{}}}}]},` +
		`"spec":{"flinkVersion":"1.17","image":{"name":"flink"}},"status":{"state":"Running"}}`)
	obj := &v1beta1.FlinkCluster{}
	require.NoError(t, json.Unmarshal(sent, obj))
	require.Len(t, obj.ManagedFields, 1)
	defaulted := Pipeline{}.Admit(nil, obj, Default).Object
	ops, err := DefaultingPatch(sent, obj, defaulted)
	require.NoError(t, err)
	require.NotEmpty(t, ops, "defaulting sets the ports and probes")
	for _, op := range ops {
		assert.True(t, strings.HasPrefix(op.Path, "/spec/"), "an operation outside the spec: %s", op.Json())
	}
	patched := &v1beta1.FlinkCluster{}
	require.NoError(t, json.Unmarshal(apply(t, sent, ops), patched))
	assert.Equal(t, obj.ManagedFields, patched.ManagedFields)
	assert.Equal(t, defaulted.Spec, patched.Spec)
}

// TestComparePathsOrdersAPatch checks the order of a patch's operations: by path, list
// indices as numbers, a list's trailing removals from the last one down, a member before
// the members inside it.
func TestComparePathsOrdersAPatch(t *testing.T) {
	want := []jsonpatch.Operation{
		{Operation: "add", Path: ""},
		{Operation: "add", Path: "/a"},
		{Operation: "add", Path: "/a/2"},
		{Operation: "add", Path: "/a/10"},
		{Operation: "add", Path: "/a/10/x"},
		{Operation: "add", Path: "/a/b"},
		{Operation: "remove", Path: "/l/12"},
		{Operation: "remove", Path: "/l/3"},
		{Operation: "remove", Path: "/l/2"},
		{Operation: "add", Path: "/l/20/name"},
		{Operation: "add", Path: "/m~0n"},
		{Operation: "add", Path: "/m~1n"},
		{Operation: "add", Path: "/z"},
	}
	for _, perm := range [][]jsonpatch.Operation{slices.Clone(want), reversed(want), rotated(want, 5)} {
		slices.SortStableFunc(perm, comparePaths)
		assert.Equal(t, paths(want), paths(perm))
	}
}

func reversed(ops []jsonpatch.Operation) []jsonpatch.Operation {
	out := slices.Clone(ops)
	slices.Reverse(out)
	return out
}

func rotated(ops []jsonpatch.Operation, n int) []jsonpatch.Operation {
	return append(slices.Clone(ops[n:]), ops[:n]...)
}

func paths(ops []jsonpatch.Operation) []string {
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = op.Operation + " " + op.Path
	}
	return out
}

// TestDeepEqualIsReflectDeepEqual checks deepEqual against reflect.DeepEqual on fields of
// every kind it takes a shortcut for: unset and empty maps, slices and pointers are not
// equal, equal contents are.
func TestDeepEqualIsReflectDeepEqual(t *testing.T) {
	type fields struct {
		S     string
		B     bool
		I     int32
		P     *int32
		M     map[string]string
		Q     corev1.ResourceList
		L     []string
		Probe *corev1.Probe
	}
	one, two := int32(1), int32(2)
	values := []fields{
		{},
		{S: "a", B: true, I: 1, P: &one, M: map[string]string{}, Q: corev1.ResourceList{}, L: []string{}, Probe: &corev1.Probe{}},
		{S: "b", I: 2, P: &two, M: map[string]string{"k": "v"}, Q: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			L: []string{"x"}, Probe: &corev1.Probe{PeriodSeconds: 3}},
		{S: "b", I: 2, P: &two, M: map[string]string{"k": "w"}, Q: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m")},
			L: []string{"x", "y"}, Probe: &corev1.Probe{PeriodSeconds: 4}},
	}
	for i := range values {
		for j := range values {
			x, y := &values[i], &values[j]
			c := &fields{}
			*c = *y // the same values, another copy of the struct
			vx, vy := reflect.ValueOf(x).Elem(), reflect.ValueOf(c).Elem()
			for f := range vx.NumField() {
				want := reflect.DeepEqual(vx.Field(f).Interface(), vy.Field(f).Interface())
				assert.Equal(t, want, deepEqual(vx.Field(f), vy.Field(f)), "%d and %d, field %s", i, j, vx.Type().Field(f).Name)
			}
		}
	}
}
