package pipeline

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// TestDefaultedMembers checks the table memberPatch reads against the JSON: each member's
// name is the spec's JSON member, and present says whether the JSON has it, both on an
// empty spec and on a defaulted one.
func TestDefaultedMembers(t *testing.T) {
	defaulted := Pipeline{}.Admit(nil, deploymentCluster(t), Default).Object.Spec
	for _, m := range defaultedMembers {
		t.Run(m.name, func(t *testing.T) {
			for name, spec := range map[string]*v1beta1.FlinkClusterSpec{"empty": {}, "defaulted": &defaulted} {
				var only v1beta1.FlinkClusterSpec
				m.copy(&only, spec)
				members := map[string]json.RawMessage{}
				require.NoError(t, json.Unmarshal(marshal(t, &only), &members))
				_, inJSON := members[m.name]
				assert.Equal(t, inJSON, m.present(spec), "%s spec: the JSON has %s: %v", name, m.name, inJSON)
			}
			assert.True(t, m.present(&defaulted), "defaulting sets %s on the example object", m.name)
		})
	}
}

// TestMemberPatchIsTheDocumentPatch checks, on every example object, that defaulting
// writes only the members memberPatch knows (so it answers and documentPatch is not
// needed), and that its patch is the one of the whole documents.
func TestMemberPatchIsTheDocumentPatch(t *testing.T) {
	for i, sent := range admitPatchSeeds(t) {
		obj := &v1beta1.FlinkCluster{}
		require.NoError(t, json.Unmarshal(sent, obj))
		defaulted := Pipeline{}.Admit(nil, obj, Default).Object
		ops, done, err := memberPatch(sent, obj, defaulted)
		require.NoError(t, err)
		require.True(t, done, "seed %d: defaulting wrote a member defaultedMembers lacks", i)
		want, err := documentPatch(sent, obj, defaulted)
		require.NoError(t, err)
		slices.SortStableFunc(ops, comparePaths)
		slices.SortStableFunc(want, comparePaths)
		assert.Equal(t, string(marshal(t, want)), string(marshal(t, ops)), "seed %d", i)
	}
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

// deploymentCluster is an object on which defaulting sets every member it writes.
func deploymentCluster(t *testing.T) *v1beta1.FlinkCluster {
	t.Helper()
	fc := &v1beta1.FlinkCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.GroupVersion.String(), Kind: v1beta1.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n"},
	}
	require.NoError(t, json.Unmarshal([]byte(`{"flinkVersion":"1.17","image":{"name":"flink"},"batchSchedulerName":"volcano",`+
		`"hadoopConfig":{"configMapName":"h"},"jobManager":{"deploymentType":"Deployment"},"job":{"jarFile":"j"}}`), &fc.Spec))
	return fc
}
