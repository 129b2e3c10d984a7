package pipeline

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

func TestEscapePointer(t *testing.T) {
	for in, want := range map[string]string{"a": "a", "a/b": "a~1b", "c~d": "c~0d", "~/": "~0~1", "execution.x": "execution.x"} {
		if got := escapePointer(in); got != want {
			t.Errorf("escapePointer(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDeepEqualAgreesWithReflect compares deepEqual with reflect.DeepEqual on pairs that
// differ in one of the ways a decoded object can: nil and empty, pointers, interfaces,
// maps, quantities, times.
func TestDeepEqualAgreesWithReflect(t *testing.T) {
	q := resource.MustParse("1Gi")
	now := metav1.Now()
	cases := map[string][2]any{
		"nil and empty slice":        {[]string(nil), []string{}},
		"equal slices":               {[]string{"a", "b"}, []string{"a", "b"}},
		"slices differ by one":       {[]string{"a", "b"}, []string{"a", "c"}},
		"longer slice":               {[]int32{1}, []int32{1, 2}},
		"nil and set pointer":        {(*int32)(nil), ptr.To[int32](1)},
		"pointers to equal values":   {ptr.To("x"), ptr.To("x")},
		"pointers to other values":   {ptr.To("x"), ptr.To("y")},
		"nil and empty map":          {map[string]string(nil), map[string]string{}},
		"maps differ in a value":     {map[string]string{"a": "1"}, map[string]string{"a": "2"}},
		"maps differ in a key":       {map[string]string{"a": "1"}, map[string]string{"b": "1"}},
		"equal resource lists":       {corev1.ResourceList{"memory": q}, corev1.ResourceList{"memory": resource.MustParse("1Gi")}},
		"resource lists differ":      {corev1.ResourceList{"memory": q}, corev1.ResourceList{"memory": resource.MustParse("2Gi")}},
		"other map types":            {map[string]int{"a": 1}, map[string]int{"a": 1}},
		"other map types differ":     {map[string]int{"a": 1}, map[string]int{"a": 2}},
		"int-or-string kinds":        {intstr.FromInt32(1), intstr.FromString("1")},
		"equal times":                {now, *now.DeepCopy()},
		"interfaces of other types":  {[]any{1}, []any{"1"}},
		"interfaces of equal values": {[]any{map[string]any{"a": 1.5}}, []any{map[string]any{"a": 1.5}}},
		"containers differ in a port": {
			[]corev1.Container{{Name: "a", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}},
			[]corev1.Container{{Name: "a", Ports: []corev1.ContainerPort{{ContainerPort: 81}}}},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b, a := reflect.ValueOf(&c[0]).Elem().Elem(), reflect.ValueOf(&c[1]).Elem().Elem()
			assert.Equal(t, reflect.DeepEqual(c[0], c[1]), deepEqual(b, a))
			assert.True(t, deepEqual(b, b))
		})
	}
}

func TestDefaultingPatchOfResourceLists(t *testing.T) {
	before := &v1beta1.FlinkCluster{}
	before.Spec.TaskManager = &v1beta1.TaskManagerSpec{Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")},
		Limits:   corev1.ResourceList{"cpu": resource.MustParse("2"), "memory": resource.MustParse("2Gi")},
	}}
	after := before.DeepCopy()
	// 1024Mi is 1Gi: it encodes to the same JSON, so it needs no operation.
	after.Spec.TaskManager.Resources.Requests["memory"] = resource.MustParse("1024Mi")
	after.Spec.TaskManager.Resources.Requests["cpu"] = resource.MustParse("1500m")
	delete(after.Spec.TaskManager.Resources.Limits, "cpu")
	after.Spec.TaskManager.Resources.Limits["ephemeral-storage"] = resource.MustParse("1Gi")

	assert.Equal(t, []jsonpatch.JsonPatchOperation{
		{Operation: "add", Path: "/spec/taskManager/resources/limits/ephemeral-storage", Value: resource.MustParse("1Gi")},
		{Operation: "remove", Path: "/spec/taskManager/resources/limits/cpu"},
		{Operation: "add", Path: "/spec/taskManager/resources/requests/cpu", Value: resource.MustParse("1500m")},
	}, DefaultingPatch(before, after))
}
