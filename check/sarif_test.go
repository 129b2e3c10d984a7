package check

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sarifObject describes one object of the SARIF 2.1.0 schema as far as check writes it: its
// required properties and every property the schema allows (additionalProperties false),
// so that a misspelt property fails as it would against the schema.
type sarifObject struct {
	required, allowed []string
}

var sarifObjects = map[string]sarifObject{
	"log":                {[]string{"version", "runs"}, []string{"$schema", "version", "runs", "inlineExternalProperties", "properties"}},
	"run":                {[]string{"tool"}, []string{"tool", "results", "columnKind", "artifacts", "invocations", "originalUriBaseIds", "properties", "automationDetails"}},
	"tool":               {[]string{"driver"}, []string{"driver", "extensions", "properties"}},
	"driver":             {[]string{"name"}, []string{"name", "informationUri", "version", "semanticVersion", "rules", "fullName", "properties"}},
	"rule":               {[]string{"id"}, []string{"id", "name", "shortDescription", "fullDescription", "defaultConfiguration", "helpUri", "help", "properties"}},
	"message":            {[]string{"text"}, []string{"text", "markdown", "id", "arguments", "properties"}},
	"configuration":      {nil, []string{"enabled", "level", "rank", "parameters", "properties"}},
	"result":             {[]string{"message"}, []string{"ruleId", "ruleIndex", "rule", "kind", "level", "message", "locations", "properties", "partialFingerprints", "fingerprints"}},
	"location":           {nil, []string{"id", "physicalLocation", "logicalLocations", "message", "annotations", "relationships", "properties"}},
	"physicalLocation":   {nil, []string{"address", "artifactLocation", "region", "contextRegion", "properties"}},
	"artifactLocation":   {nil, []string{"uri", "uriBaseId", "index", "description", "properties"}},
	"region":             {nil, []string{"startLine", "startColumn", "endLine", "endColumn", "charOffset", "charLength", "byteOffset", "byteLength", "snippet", "message", "sourceLanguage", "properties"}},
	"logicalLocation":    {nil, []string{"name", "index", "fullyQualifiedName", "decoratedName", "parentIndex", "kind", "properties"}},
	"defaultLevelValues": {nil, []string{"none", "note", "warning", "error"}},
}

// sarifProblems lists where data breaks the SARIF 2.1.0 schema's rules for what check
// writes: required properties, allowed properties, enums, minimums and rule references.
func sarifProblems(data []byte) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	var log map[string]any
	if err := json.Unmarshal(data, &log); err != nil {
		return []string{"not JSON: " + err.Error()}
	}
	object := func(path, kind string, v any) map[string]any {
		m, ok := v.(map[string]any)
		if !ok {
			bad("%s: not an object", path)
			return nil
		}
		def := sarifObjects[kind]
		for _, k := range def.required {
			if _, ok := m[k]; !ok {
				bad("%s: required property %q missing", path, k)
			}
		}
		for k := range m {
			if !slices.Contains(def.allowed, k) {
				bad("%s: property %q is not in the schema", path, k)
			}
		}
		return m
	}
	array := func(path string, v any) []any {
		a, ok := v.([]any)
		if !ok && v != nil {
			bad("%s: not an array", path)
		}
		return a
	}
	positive := func(path string, v any) {
		if n, ok := v.(float64); !ok || n < 1 || n != float64(int(n)) {
			bad("%s: %v is not an integer >= 1", path, v)
		}
	}
	enum := func(path string, v any, values ...string) {
		if s, ok := v.(string); !ok || !slices.Contains(values, s) {
			bad("%s: %v is not one of %v", path, v, values)
		}
	}
	message := func(path string, v any) {
		if m := object(path, "message", v); m != nil {
			if s, _ := m["text"].(string); s == "" {
				bad("%s.text: empty", path)
			}
		}
	}
	top := object("$", "log", log)
	if top == nil {
		return problems
	}
	if top["version"] != "2.1.0" {
		bad("$.version: %v, want 2.1.0", top["version"])
	}
	runs := array("$.runs", top["runs"])
	if len(runs) == 0 {
		bad("$.runs: empty")
	}
	for i, r := range runs {
		p := fmt.Sprintf("$.runs[%d]", i)
		run := object(p, "run", r)
		if run == nil {
			continue
		}
		if ck, ok := run["columnKind"]; ok {
			enum(p+".columnKind", ck, "utf16CodeUnits", "unicodeCodePoints")
		}
		var ruleIDs []string
		if tool := object(p+".tool", "tool", run["tool"]); tool != nil {
			if driver := object(p+".tool.driver", "driver", tool["driver"]); driver != nil {
				if name, _ := driver["name"].(string); name == "" {
					bad("%s.tool.driver.name: empty", p)
				}
				for j, rl := range array(p+".tool.driver.rules", driver["rules"]) {
					rp := fmt.Sprintf("%s.tool.driver.rules[%d]", p, j)
					rule := object(rp, "rule", rl)
					if rule == nil {
						continue
					}
					id, _ := rule["id"].(string)
					ruleIDs = append(ruleIDs, id)
					if d, ok := rule["shortDescription"]; ok {
						message(rp+".shortDescription", d)
					}
					if c, ok := rule["defaultConfiguration"]; ok {
						if cfg := object(rp+".defaultConfiguration", "configuration", c); cfg != nil {
							enum(rp+".defaultConfiguration.level", cfg["level"], sarifObjects["defaultLevelValues"].allowed...)
						}
					}
				}
			}
		}
		for j, rs := range array(p+".results", run["results"]) {
			rp := fmt.Sprintf("%s.results[%d]", p, j)
			res := object(rp, "result", rs)
			if res == nil {
				continue
			}
			message(rp+".message", res["message"])
			if l, ok := res["level"]; ok {
				enum(rp+".level", l, sarifObjects["defaultLevelValues"].allowed...)
			}
			if ix, ok := res["ruleIndex"].(float64); ok {
				if int(ix) < 0 || int(ix) >= len(ruleIDs) || ruleIDs[int(ix)] != res["ruleId"] {
					bad("%s.ruleIndex: %v does not name rule %v", rp, ix, res["ruleId"])
				}
			}
			for k, l := range array(rp+".locations", res["locations"]) {
				lp := fmt.Sprintf("%s.locations[%d]", rp, k)
				loc := object(lp, "location", l)
				if loc == nil {
					continue
				}
				for m, ll := range array(lp+".logicalLocations", loc["logicalLocations"]) {
					object(fmt.Sprintf("%s.logicalLocations[%d]", lp, m), "logicalLocation", ll)
				}
				phys := object(lp+".physicalLocation", "physicalLocation", loc["physicalLocation"])
				if phys == nil {
					continue
				}
				if al := object(lp+".physicalLocation.artifactLocation", "artifactLocation", phys["artifactLocation"]); al != nil {
					if u, _ := al["uri"].(string); u == "" || strings.ContainsAny(u, " \\") {
						bad("%s.physicalLocation.artifactLocation.uri: %q is not a URI reference", lp, u)
					}
				}
				if rg, ok := phys["region"]; ok {
					if region := object(lp+".physicalLocation.region", "region", rg); region != nil {
						positive(lp+".physicalLocation.region.startLine", region["startLine"])
						if c, ok := region["startColumn"]; ok {
							positive(lp+".physicalLocation.region.startColumn", c)
						}
					}
				}
			}
		}
	}
	return problems
}

func TestSARIFProblemsFindsBrokenLogs(t *testing.T) {
	tests := []struct {
		name, log, want string
	}{
		{"wrong version", `{"version":"2.0.0","runs":[{"tool":{"driver":{"name":"x"}}}]}`, "$.version"},
		{"no driver name", `{"version":"2.1.0","runs":[{"tool":{"driver":{}}}]}`, `required property "name"`},
		{"misspelt property", `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x","informationURI":"u"}}}]}`, `"informationURI" is not in the schema`},
		{"line 0", `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"message":{"text":"m"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"a"},"region":{"startLine":0}}}]}]}]}`, "startLine: 0"},
		{"bad level", `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"message":{"text":"m"},"level":"fatal"}]}]}`, "level: fatal"},
		{"rule index off", `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x","rules":[{"id":"A"}]}},"results":[{"ruleId":"B","ruleIndex":0,"message":{"text":"m"}}]}]}`, "does not name rule B"},
		{"no message", `{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{}]}]}`, `required property "message"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			problems := sarifProblems([]byte(tc.log))
			require.NotEmpty(t, problems)
			assert.Contains(t, strings.Join(problems, "\n"), tc.want)
		})
	}
}

func TestWriteSARIF(t *testing.T) {
	c := newChecker(t)
	denied := c.Run(context.Background(), load(t, "testdata/deployment-mode.yaml"), load(t, "testdata/job-mode.yaml"))
	warned := Result{Name: "w", Namespace: "ns", Source: "dir/with space.yaml", Position: Position{Line: 4, Column: 1},
		Allowed: true, Warnings: []string{"savepointsDir is not set"}}
	fromStdin := Result{Name: "s", Namespace: "ns", Source: "-", Errors: []FieldError{{Field: "spec", Type: "FieldValueRequired", Message: "Required value"}}}

	var buf bytes.Buffer
	require.NoError(t, Write(&buf, "sarif", append(denied, warned, fromStdin), nil))
	assert.Empty(t, sarifProblems(buf.Bytes()), "%s", buf.String())

	var log sarifLog
	require.NoError(t, json.Unmarshal(buf.Bytes(), &log))
	require.Len(t, log.Runs, 1)
	results := log.Runs[0].Results
	require.Len(t, results, 4, "two errors, one warning, one error from stdin")
	assert.Equal(t, "FieldValueForbidden", results[0].RuleID)
	assert.Equal(t, "error", results[0].Level)
	loc := results[0].Locations[0].PhysicalLocation
	assert.Equal(t, "testdata/deployment-mode.yaml", loc.ArtifactLocation.URI)
	assert.Equal(t, &sarifRegion{StartLine: 12, StartColumn: 5}, loc.Region, "the deploymentType field")
	assert.Contains(t, results[0].Message.Text, "spec.jobManager.deploymentType: Forbidden:")
	assert.Equal(t, "warning", results[2].Level)
	assert.Equal(t, SARIFWarningRule, results[2].RuleID)
	assert.Equal(t, "dir/with%20space.yaml", results[2].Locations[0].PhysicalLocation.ArtifactLocation.URI)
	assert.Equal(t, 4, results[2].Locations[0].PhysicalLocation.Region.StartLine, "a warning points at its document")
	assert.Equal(t, stdinURI, results[3].Locations[0].PhysicalLocation.ArtifactLocation.URI)
	assert.Nil(t, results[3].Locations[0].PhysicalLocation.Region, "no region when the position is unknown")
	ids := []string{}
	for _, r := range log.Runs[0].Tool.Driver.Rules {
		ids = append(ids, r.ID)
	}
	assert.Equal(t, []string{"FieldValueForbidden", SARIFWarningRule, "FieldValueRequired"}, ids, "one rule per error type, listed once")

	t.Run("no results is a valid, empty run", func(t *testing.T) {
		var buf bytes.Buffer
		require.NoError(t, Write(&buf, "sarif", nil, nil))
		assert.Empty(t, sarifProblems(buf.Bytes()))
		assert.Contains(t, buf.String(), `"results": []`)
	})
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
