package strictyaml_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flink-admission/flink-admission/internal/test/strictyaml"
)

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name, stream string
		wantErr      string
	}{
		{name: "accept: distinct keys in two documents", stream: "a: 1\nb: {c: 2}\n---\na: 1\n"},
		{name: "accept: comments and an empty document", stream: "# only a comment\n---\n---\na: [1, 2]\n"},
		{name: "accept: JSON", stream: `{"a": {"b": 1}, "c": 2}`},
		{name: "deny: a top-level key twice", stream: "images: []\nnamespace: x\nimages: []\n", wantErr: "document 1"},
		{name: "deny: a nested key twice, in the second document", stream: "a: 1\n---\nspec:\n  x: 1\n  x: 2\n", wantErr: "document 2"},
		{name: "deny: a JSON key twice", stream: `{"a": 1, "a": 2}`, wantErr: "document 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := strictyaml.Check([]byte(c.stream))
			if c.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, c.wantErr)
			}
		})
	}
}
