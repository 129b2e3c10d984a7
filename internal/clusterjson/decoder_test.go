package clusterjson

import (
	"errors"
	"strings"
	"testing"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// The decoder's results are held to the reference decoder's by the differential tests of
// package webhook (TestDecodeLikeReference, FuzzDecodeCluster, FuzzDecodeOld); these cases
// check what only this package states: how an error names its place.
func TestErrors(t *testing.T) {
	const head = `{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster",`
	tests := []struct {
		name, json string
		// msg is the error's message; syntax says it is a *SyntaxError.
		msg    string
		syntax bool
	}{
		{name: "deny: unknown field, named by its path", json: head + `"spec":{"jobManager":{"deploymentMode":"x"}}}`,
			msg: `unknown field "spec.jobManager.deploymentMode"`},
		{name: "deny: unknown field in a list element, index in the path", json: head + `"spec":{"envVars":[{"name":"A"},{"x":1}]}}`,
			msg: `unknown field "spec.envVars.1.x"`},
		{name: "deny: escaped unknown name, unescaped in the path", json: head + `"sp\u0065c":{"n\u006fpe":1}}`,
			msg: `unknown field "spec.nope"`},
		{name: "deny: integer out of range, with its path", json: head + `"spec":{"taskManager":{"replicas":2147483648}}}`,
			msg: "spec.taskManager.replicas: number 2147483648 overflows int32"},
		{name: "deny: wrong type, with its path", json: head + `"spec":{"flinkVersion":1.14}}`,
			msg: "spec.flinkVersion: cannot unmarshal number into a Go value of type string"},
		{name: "deny: map value of the wrong type, key in the path", json: head + `"spec":{"flinkProperties":{"a.b":1}}}`,
			msg: "spec.flinkProperties.a.b: cannot unmarshal number into a Go value of type string"},
		{name: "deny: syntax error, not a field error", json: head + `"spec":{"flinkVersion":"1.20",}}`,
			msg: "invalid JSON at offset 97: want a member name", syntax: true},
		{name: "deny: truncated", json: head + `"spec":{"flinkVersion":"1.2`,
			msg: "unexpected end of input", syntax: true},
		{name: "deny: data after the object", json: head + `"spec":{}} {}`,
			msg: "data after the value", syntax: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Unmarshal([]byte(tt.json), &v1beta1.FlinkCluster{})
			if err == nil {
				t.Fatal("decoded, want an error")
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not say %q", err, tt.msg)
			}
			if _, ok := errors.AsType[*SyntaxError](err); ok != tt.syntax {
				t.Errorf("error %q: syntax error %v, want %v", err, ok, tt.syntax)
			}
		})
	}
}
