package check

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
)

// storedResults are verdicts on stored clusters, as audit makes them: no file, each refusal
// saying whether it ratchets.
func storedResults() []Result {
	return []Result{
		{Namespace: "team-a", Name: "old", Operation: "CREATE", Errors: []FieldError{
			{Field: "spec.flinkVersion", Type: "FieldValueInvalid", Rule: "flink-version", Message: `Invalid value: "latest": must be a version`, Ratcheted: ptr.To(true)},
			{Field: "spec.job.upgradeMode", Type: "FieldValueInvalid", Rule: "last-state-requires-kubernetes-ha", Message: `Invalid value: "last-state": needs HA`, Ratcheted: ptr.To(false)},
		}, Warnings: []string{}},
		{Namespace: "team-a", Name: "fine", Operation: "CREATE", Allowed: true, Errors: []FieldError{}, Warnings: []string{}},
		{Namespace: "team-b", Name: "other", Operation: "CREATE", Errors: []FieldError{
			{Field: "spec.flinkVersion", Type: "FieldValueInvalid", Rule: "flink-version", Message: "Invalid value", Ratcheted: ptr.To(true)},
		}, Warnings: []string{}},
	}
}

func TestWriteStoredText(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteStored(&b, "text", storedResults()))
	assert.Equal(t, `DENIED team-a/old (stored, judged as a create)
  error:    spec.flinkVersion: Invalid value: "latest": must be a version (ratcheted: an edit that keeps it is admitted with a warning)
  error:    spec.job.upgradeMode: Invalid value: "last-state": needs HA (not ratcheted: every edit of the spec is refused until it is fixed)
ALLOWED team-a/fine (stored, judged as a create)
DENIED team-b/other (stored, judged as a create)
  error:    spec.flinkVersion: Invalid value (ratcheted: an edit that keeps it is admitted with a warning)
3 audited: 1 allowed, 2 would be denied
`, b.String())
}

// TestWriteStoredSARIF: a valid SARIF 2.1.0 log whose results name the cluster, with no file.
func TestWriteStoredSARIF(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteStored(&b, "sarif", storedResults()))
	require.Empty(t, sarifProblems(t, b.Bytes()), b.String())
	var log sarifLog
	require.NoError(t, json.Unmarshal(b.Bytes(), &log))
	results := log.Runs[0].Results
	require.Len(t, results, 3)
	for _, r := range results {
		require.Len(t, r.Locations, 1)
		assert.Nil(t, r.Locations[0].PhysicalLocation, "a stored cluster is in no file")
	}
	assert.Equal(t, "team-a/old", results[0].Locations[0].LogicalLocations[0].FullyQualifiedName)
	assert.Equal(t, map[string]any{"ratcheted": true}, results[0].Properties)
	assert.Equal(t, map[string]any{"ratcheted": false}, results[1].Properties)
	assert.Equal(t, "last-state-requires-kubernetes-ha", results[1].RuleID)
}

// TestWriteStoredJUnit: a suite per namespace, a case per cluster, a failure per refused one.
func TestWriteStoredJUnit(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteStored(&b, "junit", storedResults()))
	var out junitSuites
	require.NoError(t, xml.Unmarshal(b.Bytes(), &out), b.String())
	assert.Equal(t, "flink-admission audit", out.Name)
	assert.Equal(t, 3, out.Tests)
	assert.Equal(t, 2, out.Failures)
	require.Len(t, out.Suites, 2)
	assert.Equal(t, "team-a", out.Suites[0].Name)
	require.Len(t, out.Suites[0].Cases, 2)
	assert.Equal(t, "team-a/old", out.Suites[0].Cases[0].Name)
	require.NotNil(t, out.Suites[0].Cases[0].Failure)
	assert.Contains(t, out.Suites[0].Cases[0].Failure.Text, "(not ratcheted: every edit of the spec is refused until it is fixed)")
	assert.Nil(t, out.Suites[0].Cases[1].Failure)
	assert.Equal(t, "team-b", out.Suites[1].Name)
}

// TestWriteStoredJSON: check's array, each refusal with ratcheted.
func TestWriteStoredJSON(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteStored(&b, "json", storedResults()))
	var out []struct {
		Namespace, Name, Source string
		Allowed                 bool
		Errors                  []struct {
			Rule      string
			Ratcheted *bool
		}
	}
	require.NoError(t, json.Unmarshal(b.Bytes(), &out))
	require.Len(t, out, 3)
	assert.Empty(t, out[0].Source)
	require.Len(t, out[0].Errors, 2)
	assert.Equal(t, ptr.To(true), out[0].Errors[0].Ratcheted)
	assert.Equal(t, ptr.To(false), out[0].Errors[1].Ratcheted)
}

// TestManifestErrorsCarryNoRatchetedField: check's own output is unchanged.
func TestManifestErrorsCarryNoRatchetedField(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Write(&b, "json", []Result{{Namespace: "n", Name: "x", Source: "a.yaml", Errors: []FieldError{{Field: "spec", Rule: "r"}}}}, nil))
	assert.NotContains(t, b.String(), "ratcheted")
}
