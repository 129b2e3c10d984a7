package check

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/policy"
)

func newChecker(t *testing.T) *Checker {
	t.Helper()
	c, err := New("")
	require.NoError(t, err)
	return c
}

func load(t *testing.T, paths ...string) []Document {
	t.Helper()
	docs, _, err := Load(paths, strings.NewReader(""))
	require.NoError(t, err)
	return docs
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	job, err := os.ReadFile("testdata/job-mode.yaml")
	require.NoError(t, err)
	writeFile(t, dir, "a/cluster.yaml", string(job))
	writeFile(t, dir, "b/c/cluster.yml", strings.ReplaceAll(string(job), "wordcount\n  namespace", "other\n  namespace"))
	writeFile(t, dir, "notes.txt", "not a manifest")
	list := `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"flinkoperator.k8s.io/v1beta1","kind":"FlinkCluster","metadata":{"name":"from-list"},"spec":{}}]}`
	writeFile(t, dir, "list.json", list)

	t.Run("a directory is walked recursively for yaml, yml and json", func(t *testing.T) {
		docs, skipped, err := Load([]string{dir}, nil)
		require.NoError(t, err)
		var names []string
		for _, d := range docs {
			names = append(names, d.Object["metadata"].(map[string]any)["name"].(string))
		}
		assert.Equal(t, []string{"wordcount", "other", "from-list"}, names)
		require.Len(t, skipped, 2, "the ConfigMap in each cluster file is skipped")
		assert.Equal(t, "ConfigMap", skipped[0].Kind)
		assert.Equal(t, 1, skipped[0].Index)
	})
	t.Run("stdin is read for -", func(t *testing.T) {
		docs, _, err := Load([]string{"-"}, bytes.NewReader(job))
		require.NoError(t, err)
		require.Len(t, docs, 1)
		assert.Equal(t, "-", docs[0].Source)
	})
	t.Run("a parse error names the file and the document", func(t *testing.T) {
		bad := writeFile(t, t.TempDir(), "bad.yaml", string(job)+"\n---\nspec: [unclosed\n")
		_, _, err := Load([]string{bad}, nil)
		var perr *ParseError
		require.True(t, errors.As(err, &perr), "got %v", err)
		assert.Equal(t, bad, perr.Source)
		assert.Equal(t, 2, perr.Index)
		assert.Contains(t, err.Error(), "bad.yaml: document 2")
	})
	t.Run("a missing file is an error", func(t *testing.T) {
		_, _, err := Load([]string{filepath.Join(dir, "missing.yaml")}, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "missing.yaml")
	})
}

func fieldsOf(r Result) []string {
	var out []string
	for _, e := range r.Errors {
		out = append(out, e.Field)
	}
	return out
}

func patchPaths(r Result) map[string]any {
	out := map[string]any{}
	for _, op := range r.Patch {
		out[op.Operation+" "+op.Path] = op.Value
	}
	return out
}

func TestRun(t *testing.T) {
	c := newChecker(t)
	ctx := context.Background()
	jobMode := load(t, "testdata/job-mode.yaml")
	deployment := load(t, "testdata/deployment-mode.yaml")

	t.Run("allow: create of a Deployment-mode cluster, with the shutdown defaults injected", func(t *testing.T) {
		res := c.Run(ctx, deployment, nil)
		require.Len(t, res, 1)
		r := res[0]
		assert.True(t, r.Allowed, "errors: %v", r.Errors)
		assert.Equal(t, "CREATE", r.Operation)
		assert.Equal(t, "streaming", r.Namespace)
		patch := patchPaths(r)
		assert.Equal(t, "false", patch["add /spec/flinkProperties/execution.shutdown-on-application-finish"])
		assert.Equal(t, "true", patch["add /spec/flinkProperties/execution.submit-failed-job-on-application-error"])
		props := r.Object["spec"].(map[string]any)["flinkProperties"].(map[string]any)
		assert.Equal(t, "false", props["execution.shutdown-on-application-finish"], "the object is the mutated one")
	})
	t.Run("deny: update that changes deploymentType from unset to Deployment", func(t *testing.T) {
		res := c.Run(ctx, deployment, jobMode)
		require.Len(t, res, 1)
		r := res[0]
		assert.False(t, r.Allowed)
		assert.Equal(t, "UPDATE", r.Operation)
		assert.Contains(t, fieldsOf(r), "spec.jobManager.deploymentType")
	})
	t.Run("allow: update that keeps deploymentType", func(t *testing.T) {
		res := c.Run(ctx, deployment, deployment)
		require.Len(t, res, 1)
		assert.True(t, res[0].Allowed, "errors: %v", res[0].Errors)
		assert.Equal(t, "UPDATE", res[0].Operation)
	})
	t.Run("deny: create of a Deployment-mode cluster without HA names both HA fields", func(t *testing.T) {
		obj := deployment[0].Object
		noHA := Document{Source: "x.yaml", Object: mustCopy(t, obj, func(spec map[string]any) {
			spec["flinkProperties"] = map[string]any{"taskmanager.numberOfTaskSlots": "1"}
		})}
		res := c.Run(ctx, []Document{noHA}, nil)
		require.Len(t, res, 1)
		assert.False(t, res[0].Allowed)
		assert.Contains(t, fieldsOf(res[0]), "spec.flinkProperties[high-availability.type]")
		assert.Contains(t, fieldsOf(res[0]), "spec.flinkProperties[high-availability.storageDir]")
		for _, e := range res[0].Errors {
			assert.NotEmpty(t, e.Type)
			assert.NotEmpty(t, e.Message)
		}
	})
	t.Run("deny: a spec of the wrong shape is a denial, not a crash", func(t *testing.T) {
		bad := Document{Source: "x.yaml", Object: mustCopy(t, deployment[0].Object, func(spec map[string]any) {
			spec["jobManager"] = "not an object"
		})}
		res := c.Run(ctx, []Document{bad}, nil)
		require.Len(t, res, 1)
		assert.False(t, res[0].Allowed)
		assert.NotEmpty(t, res[0].Errors)
	})
	t.Run("the input documents are not modified", func(t *testing.T) {
		before, err := json.Marshal(deployment[0].Object)
		require.NoError(t, err)
		c.Run(ctx, deployment, jobMode)
		after, err := json.Marshal(deployment[0].Object)
		require.NoError(t, err)
		assert.JSONEq(t, string(before), string(after))
	})
}

func mustCopy(t *testing.T, obj map[string]any, edit func(spec map[string]any)) map[string]any {
	t.Helper()
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	out := map[string]any{}
	require.NoError(t, json.Unmarshal(raw, &out))
	edit(out["spec"].(map[string]any))
	return out
}

// TestErrorsNameTheirRule: the example of every rule of the policy is denied with an error
// that names the rule, whether the webhook or the CRD (checked first) denies it.
func TestErrorsNameTheirRule(t *testing.T) {
	c := newChecker(t)
	docOf := func(t *testing.T, manifest string) []Document {
		t.Helper()
		if manifest == "" {
			return nil
		}
		docs, _, err := Load([]string{"-"}, strings.NewReader(manifest))
		require.NoError(t, err)
		return docs
	}
	for _, info := range policy.Rules() {
		t.Run(info.Name, func(t *testing.T) {
			res := c.Run(t.Context(), docOf(t, info.Example), docOf(t, info.ExampleOld))
			require.Len(t, res, 1)
			require.False(t, res[0].Allowed)
			var rules []string
			for _, e := range res[0].Errors {
				rules = append(rules, e.Rule)
			}
			assert.Contains(t, rules, info.Name, "%+v", res[0].Errors)
		})
	}
	t.Run("a schema constraint no rule mirrors", func(t *testing.T) {
		res := c.Run(t.Context(), docOf(t, `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/job.jar
    savepointFormatType: YAML
`), nil)
		require.Len(t, res, 1)
		require.NotEmpty(t, res[0].Errors)
		for _, e := range res[0].Errors {
			assert.Equal(t, RuleCRDSchema, e.Rule, "%+v", e)
		}
	})
}

func TestWrite(t *testing.T) {
	c := newChecker(t)
	res := c.Run(context.Background(), load(t, "testdata/deployment-mode.yaml"), load(t, "testdata/job-mode.yaml"))
	skipped := []Skipped{{Source: "s.yaml", Index: 1, APIVersion: "v1", Kind: "ConfigMap"}}

	t.Run("json is one array with the documented keys", func(t *testing.T) {
		var buf bytes.Buffer
		require.NoError(t, Write(&buf, "json", res, skipped))
		var out []map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &out))
		require.Len(t, out, 1)
		for _, k := range []string{"name", "namespace", "allowed", "errors", "warnings", "patch", "object"} {
			assert.Contains(t, out[0], k)
		}
		assert.Equal(t, false, out[0]["allowed"])
		e := out[0]["errors"].([]any)[0].(map[string]any)
		assert.ElementsMatch(t, []string{"field", "type", "rule", "message", "line", "column"}, keys(e))
		assert.Equal(t, policy.RuleDeploymentTypeImmutable, e["rule"])
		assert.Equal(t, map[string]any{"line": float64(2), "column": float64(1)}, out[0]["position"], "where the document starts")
	})
	t.Run("yaml is the same array", func(t *testing.T) {
		var buf bytes.Buffer
		require.NoError(t, Write(&buf, "yaml", res, skipped))
		var out []map[string]any
		require.NoError(t, yaml.Unmarshal(buf.Bytes(), &out))
		require.Len(t, out, 1)
		assert.Equal(t, "wordcount", out[0]["name"])
	})
	t.Run("text says DENIED with each field error and notes skipped documents", func(t *testing.T) {
		var buf bytes.Buffer
		require.NoError(t, Write(&buf, "text", res, skipped))
		out := buf.String()
		assert.Contains(t, out, "DENIED streaming/wordcount (update, testdata/deployment-mode.yaml document 0)")
		assert.Contains(t, out, "error:    testdata/deployment-mode.yaml:12:5: spec.jobManager.deploymentType: Forbidden:", "file:line:column of the field")
		assert.Contains(t, out, "skipped s.yaml document 1: v1 ConfigMap is not a FlinkCluster")
		assert.Contains(t, out, "1 checked: 0 allowed, 1 denied, 1 skipped")
	})
	t.Run("an unknown format is an error", func(t *testing.T) {
		assert.Error(t, Write(&bytes.Buffer{}, "xml", res, nil))
	})
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestUpdatesJudgedAsTheAPIServerSendsThem: an update the webhook configurations' match
// conditions send to no webhook (labels, annotations other than user-control) gets no
// mutation and no webhook verdict, as on a cluster; one they send to the validating webhook
// alone (user-control) is judged without a mutation; a spec change goes through both.
func TestUpdatesJudgedAsTheAPIServerSendsThem(t *testing.T) {
	c := newChecker(t)
	ctx := context.Background()
	old := load(t, "testdata/job-mode.yaml")
	withMetadata := func(edit func(meta map[string]any)) []Document {
		obj := mustCopy(t, old[0].Object, func(map[string]any) {})
		edit(obj["metadata"].(map[string]any))
		return []Document{{Source: "new.yaml", Object: obj}}
	}
	annotate := func(k, v string) func(map[string]any) {
		return func(meta map[string]any) { meta["annotations"] = map[string]any{k: v} }
	}

	withoutKind := func(docs []Document) []Document {
		obj := mustCopy(t, docs[0].Object, func(map[string]any) {})
		delete(obj, "apiVersion")
		delete(obj, "kind")
		return []Document{{Source: docs[0].Source, Object: obj}}
	}

	t.Run("an object given without its kind, as a Go client's typed one, is matched as a FlinkCluster", func(t *testing.T) {
		res := c.Run(ctx, withoutKind(withMetadata(annotate("example.com/owner", "team-b"))), withoutKind(old))
		require.Len(t, res, 1)
		assert.True(t, res[0].Allowed, "errors: %v", res[0].Errors)
		assert.Empty(t, res[0].Patch)
	})
	for _, tc := range []struct {
		name           string
		docs           []Document
		allowed        bool
		mutated        bool
		wantRule       string
		wantNoWarnings bool
	}{
		{name: "allow: labels only, sent to no webhook", docs: withMetadata(func(meta map[string]any) {
			meta["labels"] = map[string]any{"argocd.argoproj.io/instance": "flink", "team": "b"}
		}), allowed: true, wantNoWarnings: true},
		{name: "allow: another annotation only, sent to no webhook", docs: withMetadata(annotate("example.com/owner", "team-b")),
			allowed: true, wantNoWarnings: true},
		{name: "deny: user-control set, sent to the validating webhook alone",
			docs: withMetadata(annotate("flinkclusters.flinkoperator.k8s.io/user-control", "savepoint")), wantRule: policy.RuleUserControlNotApplicable},
		{name: "allow: a spec change goes through both webhooks", docs: []Document{{Source: "new.yaml", Object: mustCopy(t, old[0].Object, func(spec map[string]any) {
			spec["image"] = map[string]any{"name": "flink:2.2.2"}
		})}}, allowed: true, mutated: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := c.Run(ctx, tc.docs, old)
			require.Len(t, res, 1)
			r := res[0]
			assert.Equal(t, "UPDATE", r.Operation)
			assert.Equal(t, tc.allowed, r.Allowed, "errors: %v", r.Errors)
			if tc.wantRule != "" {
				require.NotEmpty(t, r.Errors)
				assert.Equal(t, tc.wantRule, r.Errors[0].Rule)
			}
			if tc.mutated {
				assert.NotEmpty(t, r.Patch, "the mutating webhook is sent a spec change")
			} else {
				assert.Empty(t, r.Patch, "the mutating webhook is sent no metadata change")
				assert.NotEmpty(t, r.Object, "the object as stored")
			}
			if tc.wantNoWarnings {
				assert.Empty(t, r.Warnings)
			}
		})
	}
}
