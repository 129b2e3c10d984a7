package celrules

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestMerge(t *testing.T) {
	invalid := func(path, detail string) *field.Error {
		return &field.Error{Type: field.ErrorTypeInvalid, Field: path, Detail: detail}
	}
	forbidden := func(path, detail string) *field.Error {
		return &field.Error{Type: field.ErrorTypeForbidden, Field: path, Detail: detail}
	}
	tests := []struct {
		name        string
		policy, cel field.ErrorList
		want        field.ErrorList
	}{
		{name: "no CEL errors: the policy's", policy: field.ErrorList{invalid("a", "p")}, want: field.ErrorList{invalid("a", "p")}},
		{name: "no policy errors: the CEL rules'", cel: field.ErrorList{invalid("a", "c")}, want: field.ErrorList{invalid("a", "c")}},
		{name: "same field and type: the policy's detail", policy: field.ErrorList{invalid("a", "p")}, cel: field.ErrorList{invalid("a", "c")}, want: field.ErrorList{invalid("a", "p")}},
		{name: "same field, other type: both", policy: field.ErrorList{invalid("a", "p")}, cel: field.ErrorList{forbidden("a", "c")}, want: field.ErrorList{invalid("a", "p"), forbidden("a", "c")}},
		{name: "other field: both", policy: field.ErrorList{invalid("a", "p")}, cel: field.ErrorList{invalid("b", "c")}, want: field.ErrorList{invalid("a", "p"), invalid("b", "c")}},
		{name: "two policy errors on one field stay", policy: field.ErrorList{invalid("a", "p1"), invalid("a", "p2")}, cel: field.ErrorList{invalid("a", "c")}, want: field.ErrorList{invalid("a", "p1"), invalid("a", "p2")}},
		{name: "root CEL error with the policy's message: the policy's", policy: field.ErrorList{invalid("metadata.name", "bad name")}, cel: field.ErrorList{invalid("<nil>", "bad name")}, want: field.ErrorList{invalid("metadata.name", "bad name")}},
		{name: "root CEL error with another message: both", policy: field.ErrorList{invalid("metadata.name", "bad name")}, cel: field.ErrorList{invalid("<nil>", "too long")}, want: field.ErrorList{invalid("metadata.name", "bad name"), invalid("<nil>", "too long")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Merge(tt.policy, tt.cel)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateSchema(t *testing.T) {
	v, err := New()
	if err != nil {
		t.Fatal(err)
	}
	obj := func(replicas any, pullPolicy string) map[string]any {
		return map[string]any{
			"apiVersion": "flinkoperator.k8s.io/v1beta1", "kind": "FlinkCluster",
			"metadata": map[string]any{"name": "app", "namespace": "ns"},
			"spec": map[string]any{
				"flinkVersion": "2.2.1",
				"image":        map[string]any{"name": "flink:2.2.1", "pullPolicy": pullPolicy},
				"jobManager":   map[string]any{"replicas": replicas},
			},
		}
	}
	tests := []struct {
		name     string
		obj, old map[string]any
		want     []string
	}{
		{name: "allow: a valid object", obj: obj(int64(1), "Always")},
		{name: "deny: jobManager replicas above the maximum", obj: obj(int64(2), "Always"), want: []string{"spec.jobManager.replicas"}},
		{name: "deny: pullPolicy outside the enum", obj: obj(int64(1), "Sometimes"), want: []string{"spec.image.pullPolicy"}},
		{name: "deny: a wrong type", obj: obj("one", "Always"), want: []string{"spec.jobManager.replicas"}},
		{name: "allow: an unchanged violation on update (ratcheting)", obj: obj(int64(2), "Never"), old: obj(int64(2), "Always")},
		{name: "deny: a new violation on update", obj: obj(int64(2), "Always"), old: obj(int64(1), "Always"), want: []string{"spec.jobManager.replicas"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range v.ValidateSchema(tt.obj, tt.old) {
				got = append(got, e.Field)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
