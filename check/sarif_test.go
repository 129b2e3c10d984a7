package check

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/policy"
)

// sarifSchema21 is the OASIS SARIF 2.1.0 JSON schema (errata 01), as
// github.com/owenrumney/go-sarif/v3 ships it (pkg/report/v210/sarif/schema.go).
var sarifSchema21 = sync.OnceValues(func() (*jsonschema.Schema, error) {
	f, err := os.Open("testdata/sarif-schema-2.1.0.json")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const url = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
})

// sarifProblems lists where data breaks the SARIF 2.1.0 schema, and where a result's
// ruleIndex does not point at its ruleId in the run's rules (which the schema cannot say).
func sarifProblems(t *testing.T, data []byte) []string {
	t.Helper()
	schema, err := sarifSchema21()
	require.NoError(t, err, "compiling the SARIF 2.1.0 schema")
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	var problems []string
	if err := schema.Validate(inst); err != nil {
		problems = append(problems, err.Error())
	}
	var log sarifLog
	if err := json.Unmarshal(data, &log); err != nil {
		return append(problems, err.Error())
	}
	for i, run := range log.Runs {
		for j, r := range run.Results {
			if r.RuleIndex < 0 || r.RuleIndex >= len(run.Tool.Driver.Rules) || run.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID {
				problems = append(problems, fmt.Sprintf("runs[%d].results[%d].ruleIndex: %d does not name rule %s", i, j, r.RuleIndex, r.RuleID))
			}
		}
	}
	return problems
}

func TestSARIFProblemsFindsBrokenLogs(t *testing.T) {
	tests := []struct {
		name, log, want string
	}{
		{"wrong version", `{"version":"2.0.0","runs":[{"tool":{"driver":{"name":"x"}}}]}`, "/version"},
		{"no driver name", `{"version":"2.1.0","runs":[{"tool":{"driver":{}}}]}`, "missing property 'name'"},
		{"misspelt property", `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x","informationURI":"u"}}}]}`, "informationURI"},
		{"line 0", `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"message":{"text":"m"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"a"},"region":{"startLine":0}}}]}]}]}`, "startLine"},
		{"bad level", `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"message":{"text":"m"},"level":"fatal"}]}]}`, "/level"},
		{"help link not a URI", `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x","rules":[{"id":"A","helpUri":"docs policy.md"}]}}}]}`, "helpUri"},
		{"rule index off", `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x","rules":[{"id":"A"}]}},"results":[{"ruleId":"B","ruleIndex":0,"message":{"text":"m"}}]}]}`, "does not name rule B"},
		{"no message", `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{}]}]}`, "missing property 'message'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			problems := sarifProblems(t, []byte(tc.log))
			require.NotEmpty(t, problems)
			assert.Contains(t, strings.Join(problems, "\n"), tc.want)
		})
	}
}

// warnedCluster is a new cluster the policy admits with two warnings, each about a field
// written in it.
const warnedCluster = `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: warned
  namespace: streaming
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  batchSchedulerName: default-scheduler
  flinkProperties:
    high-availability: kubernetes
    high-availability.storageDir: s3://flink/ha
`

func TestWriteSARIF(t *testing.T) {
	c := newChecker(t)
	denied := c.Run(context.Background(), load(t, "testdata/deployment-mode.yaml"), load(t, "testdata/job-mode.yaml"))
	warnedDocs, _, err := Load([]string{"-"}, strings.NewReader(warnedCluster))
	require.NoError(t, err)
	warned := c.Run(context.Background(), warnedDocs, nil)
	require.Len(t, warned, 1)
	require.True(t, warned[0].Allowed, "%+v", warned[0].Errors)
	require.Equal(t, []string{policy.WarningLegacyHAKey, policy.WarningBatchSchedulerName}, warned[0].Warnings)
	byHand := Result{Name: "w", Namespace: "ns", Source: "dir/with space.yaml", Position: Position{Line: 4, Column: 1},
		Allowed: true, Warnings: []string{"savepointsDir is not set"}}
	fromStdin := Result{Name: "s", Namespace: "ns", Source: "-", Errors: []FieldError{{Field: "spec", Type: "FieldValueRequired", Rule: RuleCRDSchema, Message: "Required value"}}}

	var buf bytes.Buffer
	require.NoError(t, Write(&buf, "sarif", append(denied, append(warned, byHand, fromStdin)...), nil))
	assert.Empty(t, sarifProblems(t, buf.Bytes()), "%s", buf.String())

	var log sarifLog
	require.NoError(t, json.Unmarshal(buf.Bytes(), &log))
	require.Len(t, log.Runs, 1)
	results := log.Runs[0].Results
	require.Len(t, results, 6, "two errors, three warnings, one error from stdin")

	t.Run("an error's rule is the policy rule that denies, at its field", func(t *testing.T) {
		assert.Equal(t, policy.RuleDeploymentTypeImmutable, results[0].RuleID, "the CRD's error, named by the policy's rule")
		assert.Equal(t, policy.RuleHAImmutable, results[1].RuleID)
		assert.Equal(t, "error", results[0].Level)
		loc := results[0].Locations[0].PhysicalLocation
		assert.Equal(t, "testdata/deployment-mode.yaml", loc.ArtifactLocation.URI)
		assert.Equal(t, &sarifRegion{StartLine: 12, StartColumn: 5}, loc.Region, "the deploymentType field")
		assert.Contains(t, results[0].Message.Text, "spec.jobManager.deploymentType: Forbidden:")
	})
	t.Run("a warning is located at the field it names", func(t *testing.T) {
		for i, want := range []sarifRegion{{StartLine: 12, StartColumn: 5}, {StartLine: 10, StartColumn: 3}} {
			r := results[2+i]
			assert.Equal(t, "warning", r.Level)
			assert.Equal(t, SARIFWarningRule, r.RuleID)
			assert.Equal(t, stdinURI, r.Locations[0].PhysicalLocation.ArtifactLocation.URI)
			assert.Equal(t, &want, r.Locations[0].PhysicalLocation.Region, "%s", r.Message.Text)
		}
		r := results[4]
		assert.Equal(t, "dir/with%20space.yaml", r.Locations[0].PhysicalLocation.ArtifactLocation.URI)
		assert.Equal(t, 4, r.Locations[0].PhysicalLocation.Region.StartLine, "a warning that names no field points at its document")
	})
	t.Run("an unknown position has no region", func(t *testing.T) {
		assert.Equal(t, stdinURI, results[5].Locations[0].PhysicalLocation.ArtifactLocation.URI)
		assert.Nil(t, results[5].Locations[0].PhysicalLocation.Region)
	})
	t.Run("each rule is listed once, with help and a link to its section of docs/policy.md", func(t *testing.T) {
		var ids []string
		for _, r := range log.Runs[0].Tool.Driver.Rules {
			ids = append(ids, r.ID)
			assert.NotEmpty(t, r.ShortDescription.Text, r.ID)
			assert.NotEmpty(t, r.Help.Text, r.ID)
		}
		assert.Equal(t, []string{policy.RuleDeploymentTypeImmutable, policy.RuleHAImmutable, SARIFWarningRule, RuleCRDSchema}, ids)
		rule := log.Runs[0].Tool.Driver.Rules[0]
		assert.Equal(t, "https://github.com/flink-admission/flink-admission/blob/main/docs/policy.md#deployment-type-immutable", rule.HelpURI)
		assert.Equal(t, "error", rule.DefaultConfiguration.Level)
		assert.Equal(t, "warning", log.Runs[0].Tool.Driver.Rules[2].DefaultConfiguration.Level)
	})

	t.Run("no results is a valid, empty run", func(t *testing.T) {
		var buf bytes.Buffer
		require.NoError(t, Write(&buf, "sarif", nil, nil))
		assert.Empty(t, sarifProblems(t, buf.Bytes()))
		assert.Contains(t, buf.String(), `"results": []`)
	})
}

// TestSARIFRulesLinkToTheirSection: every rule check can report links to a heading of
// docs/policy.md, as GitHub anchors them.
func TestSARIFRulesLinkToTheirSection(t *testing.T) {
	doc, err := os.ReadFile("../docs/policy.md")
	require.NoError(t, err)
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") {
			anchors[githubAnchor(h)] = true
		}
	}
	ids := []string{SARIFWarningRule, RuleCRDSchema, policy.RuleUnknown}
	for _, r := range policy.Rules() {
		ids = append(ids, r.Name)
	}
	for _, id := range ids {
		r := sarifRuleOf(id)
		_, anchor, ok := strings.Cut(r.HelpURI, "#")
		require.True(t, ok, r.HelpURI)
		assert.True(t, anchors[anchor], "rule %s links to #%s, which docs/policy.md does not have", id, anchor)
		assert.NotEmpty(t, r.ShortDescription.Text, id)
	}
}

// githubAnchor is the anchor GitHub gives a heading: lower case, punctuation but hyphens
// dropped, blanks as hyphens.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestWriteJUnit(t *testing.T) {
	c := newChecker(t)
	res := c.Run(context.Background(), append(load(t, "testdata/deployment-mode.yaml"), load(t, "testdata/job-mode.yaml")...), load(t, "testdata/job-mode.yaml"))
	skipped := []Skipped{{Source: "testdata/job-mode.yaml", Index: 1, APIVersion: "v1", Kind: "ConfigMap", Position: Position{Line: 31, Column: 1}}}
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, "junit", res, skipped))

	var out junitSuites
	require.NoError(t, xml.Unmarshal(buf.Bytes(), &out), "%s", buf.String())
	assert.Equal(t, 3, out.Tests)
	assert.Equal(t, 1, out.Failures)
	assert.Equal(t, 1, out.Skipped)
	require.Len(t, out.Suites, 2, "one suite per file")
	dep := out.Suites[0]
	assert.Equal(t, "testdata/deployment-mode.yaml", dep.Name)
	require.Len(t, dep.Cases, 1)
	f := dep.Cases[0].Failure
	require.NotNil(t, f)
	assert.Equal(t, "FieldValueForbidden", f.Type)
	assert.Contains(t, f.Text, "testdata/deployment-mode.yaml:12:5: spec.jobManager.deploymentType: Forbidden:")
	assert.Equal(t, 2, dep.Cases[0].Line)
	job := out.Suites[1]
	assert.Equal(t, 2, job.Tests)
	assert.Equal(t, 0, job.Failures)
	assert.Nil(t, job.Cases[0].Failure, "the unchanged cluster is allowed")
	require.NotNil(t, job.Cases[1].Skipped)
	assert.Equal(t, 31, job.Cases[1].Line)
}
