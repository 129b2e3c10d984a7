package check

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// positionsYAML has two documents, the first after a comment and a separator with a comment,
// a sequence, a key with dots, an anchor and a third document in a List.
const positionsYAML = `# leading comment
--- # first document
apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: one
spec:
  job:
    args:
      - --input
      - &out --output
  flinkProperties:
    high-availability.type: kubernetes
---
apiVersion: v1
kind: List
items:
  - apiVersion: flinkoperator.k8s.io/v1beta1
    kind: FlinkCluster
    metadata:
      name: two
    spec:
      image:
        name: flink:2.2.1
`

func TestPositionOf(t *testing.T) {
	docs, _, err := Load([]string{writeFile(t, t.TempDir(), "p.yaml", positionsYAML)}, nil)
	require.NoError(t, err)
	require.Len(t, docs, 2)
	one, two := docs[0], docs[1]
	assert.Equal(t, []int{1, 2}, []int{one.Index, two.Index}, "the leading comment is document 0, as kubectl counts")
	assert.Equal(t, Position{Line: 3, Column: 1}, one.Position, "after the comment and the separator")
	assert.Equal(t, Position{Line: 18, Column: 5}, two.Position, "a List item starts at its first key")

	tests := []struct {
		name string
		doc  Document
		path string
		want Position
	}{
		{"a nested field is its key", one, "spec.job.args", Position{9, 5}},
		{"a sequence item is the item", one, "spec.job.args[1]", Position{11, 9}},
		{"a key with dots in brackets", one, "spec.flinkProperties[high-availability.type]", Position{13, 5}},
		{"a quoted key, as CEL fieldPaths write it", one, "spec.flinkProperties['high-availability.type']", Position{13, 5}},
		{"a missing field is its deepest written parent", one, "spec.flinkProperties[high-availability.storageDir]", Position{12, 3}},
		{"an index past the end is the sequence's key", one, "spec.job.args[7]", Position{9, 5}},
		{"a field below a scalar is the scalar's key", one, "metadata.name.first", Position{6, 3}},
		{"the root is the document", one, "", Position{3, 1}},
		{"in a List item", two, "spec.image.name", Position{24, 9}},
		{"the second document counts lines from the file's start", two, "metadata.name", Position{21, 7}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.doc.PositionOf(tc.path))
		})
	}
}

func TestPositionsOfJSON(t *testing.T) {
	docs, _, err := Load([]string{writeFile(t, t.TempDir(), "c.json", `{
  "apiVersion": "flinkoperator.k8s.io/v1beta1",
  "kind": "FlinkCluster",
  "metadata": {"name": "j"},
  "spec": {"jobManager": {"replicas": 2}}
}`)}, nil)
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, Position{Line: 5, Column: 27}, docs[0].PositionOf("spec.jobManager.replicas"))
}

func TestSplitDocumentsMatchesTheDecoder(t *testing.T) {
	data := "a: 1\n---\n---\n# only a comment\n---\nb: 2\n--- # c\nc: 3"
	chunks := splitDocuments([]byte(data))
	require.Len(t, chunks, 4, "an empty document between two separators is no chunk, as in the decoder")
	assert.Equal(t, []int{1, 4, 6, 8}, []int{chunks[0].startLine, chunks[1].startLine, chunks[2].startLine, chunks[3].startLine})
	// The comment-only chunk is document 1 for the decoder too: b is document 2.
	docs, _, err := Load([]string{writeFile(t, t.TempDir(), "d.yaml", "apiVersion: v1\nkind: ConfigMap\n---\n---\n# only a comment\n---\n"+
		"apiVersion: flinkoperator.k8s.io/v1beta1\nkind: FlinkCluster\nmetadata:\n  name: b\n")}, nil)
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, 2, docs[0].Index)
	assert.Equal(t, Position{Line: 10, Column: 3}, docs[0].PositionOf("metadata.name"))
}

// TestErrorsCarryPositions: every error of a denied cluster points at its field in the file.
func TestErrorsCarryPositions(t *testing.T) {
	c := newChecker(t)
	res := c.Run(context.Background(), load(t, "testdata/deployment-mode.yaml"), load(t, "testdata/job-mode.yaml"))
	require.Len(t, res, 1)
	got := map[string]Position{}
	for _, e := range res[0].Errors {
		got[e.Field] = e.Position
	}
	assert.Equal(t, map[string]Position{
		"spec.jobManager.deploymentType": {Line: 12, Column: 5},
		"spec.flinkProperties":           {Line: 29, Column: 3},
	}, got)
}
