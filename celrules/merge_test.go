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
