package fakeflink_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// TestContractShapes checks every answer of the fake against the Flink answers the client's
// contract tests decode (controller/flinkclient/testdata/<version>): same fields, same JSON types.
func TestContractShapes(t *testing.T) {
	ctx := context.Background()
	for _, v := range []fakeflink.Version{fakeflink.Version1_20, fakeflink.Version2_2, fakeflink.Version2_3} {
		t.Run(string(v), func(t *testing.T) {
			prog := fakeflink.Program{}
			if v == fakeflink.Version2_3 {
				prog = fakeflink.Program{Throw: "java.lang.IllegalStateException: sink misconfigured", ThrowAfterSubmit: true}
			}
			c := newCluster(t, fakeflink.Options{Version: v})
			jm := c.Start(fakeflink.Config{Properties: haProps(), FromSavepoint: "s3://bucket/savepoints/savepoint-initial"})
			jm.CompleteCheckpoint(jobID)
			jm.SetExceptions(jobID,
				flinkclient.Exception{Name: "java.lang.RuntimeException", StackTrace: "java.lang.RuntimeException: boom", Timestamp: 2},
				flinkclient.Exception{Name: "java.lang.RuntimeException", StackTrace: "java.lang.RuntimeException: boom", Timestamp: 1})
			fc := restClient(t, jm.URL())
			get := func(path string) any { return getJSON(t, http.MethodGet, jm.URL()+path) }

			check(t, v, "jobs-overview.json", get("/jobs/overview"))
			check(t, v, "job-details.json", get("/jobs/"+jobID))
			check(t, v, "job-exceptions.json", get("/jobs/"+jobID+"/exceptions"))

			jm.SetSavepointMode(fakeflink.SavepointHold)
			check(t, v, "savepoint-trigger.json", getJSON(t, http.MethodPost, jm.URL()+"/jobs/"+jobID+"/savepoints"))
			_, err := fc.TriggerSavepoint(ctx, jobID, flinkclient.SavepointRequest{TriggerID: triggerID})
			require.NoError(t, err)
			check(t, v, "savepoint-in-progress.json", get("/jobs/"+jobID+"/savepoints/"+triggerID))
			jm.CompleteSavepoints()
			check(t, v, "savepoint-completed.json", get("/jobs/"+jobID+"/savepoints/"+triggerID))
			check(t, v, "checkpoints.json", get("/jobs/"+jobID+"/checkpoints"))
			const failing = "fedcba9876543210fedcba9876543210"
			_, err = fc.TriggerSavepoint(ctx, jobID, flinkclient.SavepointRequest{TriggerID: failing})
			require.NoError(t, err)
			jm.FailSavepoints("")
			check(t, v, "savepoint-failed.json", get("/jobs/"+jobID+"/savepoints/"+failing))

			// Savepoint disposal: of the savepoint just taken, then of it again (gone).
			taken, err := fc.SavepointStatus(ctx, jobID, triggerID)
			require.NoError(t, err)
			dispose := func() string {
				resp, err := http.Post(jm.URL()+"/savepoint-disposal", "application/json",
					strings.NewReader(fmt.Sprintf(`{"savepoint-path":%q}`, taken.Location)))
				require.NoError(t, err)
				defer resp.Body.Close()
				require.Equal(t, http.StatusAccepted, resp.StatusCode)
				var out any
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
				check(t, v, "savepoint-trigger.json", out)
				return out.(map[string]any)["request-id"].(string)
			}
			require.True(t, c.SavepointExists(taken.Location))
			check(t, v, "disposal-completed.json", get("/savepoint-disposal/"+dispose()))
			assert.False(t, c.SavepointExists(taken.Location), "disposed of")
			check(t, v, "disposal-failed.json", get("/savepoint-disposal/"+dispose()))

			if v != fakeflink.Version2_3 {
				return
			}
			c.SetProgram(prog)
			jm.Kill()
			c.Advance(15 * 60 * 1e9)
			jm = c.Start(fakeflink.Config{Properties: haProps(fakeflink.PropJobID, "ffffffffffffffffffffffffffffffff")})
			get = func(path string) any { return getJSON(t, http.MethodGet, jm.URL()+path) }
			check(t, v, "applications-overview.json", get("/applications/overview"))
			check(t, v, "application-details.json", get("/applications/"+jm.ApplicationID()))
			check(t, v, "application-exceptions.json", get("/applications/"+jm.ApplicationID()+"/exceptions"))
		})
	}
}

func getJSON(t *testing.T, method, url string) any {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{}`)
	}
	req, err := http.NewRequest(method, url, body)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Less(t, resp.StatusCode, 300, "%s %s", method, url)
	var v any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return v
}

func check(t *testing.T, v fakeflink.Version, file string, got any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "controller", "flinkclient", "testdata", string(v), file))
	require.NoError(t, err)
	var want any
	require.NoError(t, json.Unmarshal(data, &want))
	var diffs []string
	sameShape("", want, got, &diffs)
	assert.Empty(t, diffs, "%s: the fake's answer differs from Flink %s's shape", file, v)
}

// optional reports the fields Flink leaves out when null (@JsonInclude(NON_NULL)): an
// exception's task and location, a job's stream graph.
func optional(path, key string) bool {
	if path == "exceptionHistory.entries[]" {
		return slices.Contains([]string{"taskName", "location", "endpoint", "taskManagerId"}, key)
	}
	return path == "" && key == "stream-graph"
}

// dataKeyed are maps whose keys are data (vertex IDs, labels, job states), not field names.
func dataKeyed(path string) bool {
	return strings.HasSuffix(path, ".failureLabels") || path == "applications[].jobs" ||
		(strings.HasSuffix(path, ".tasks") && (strings.HasPrefix(path, "latest.") || strings.HasPrefix(path, "history[]")))
}

// sameShape compares two decoded JSON values: the same keys in objects (recursively) and the
// same JSON types; null matches anything, and arrays compare their first elements.
func sameShape(path string, want, got any, diffs *[]string) {
	if want == nil || got == nil {
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: want an object, got %T", path, got))
			return
		}
		if dataKeyed(path) {
			return
		}
		for k := range w {
			if _, ok := g[k]; !ok && !optional(path, k) {
				*diffs = append(*diffs, fmt.Sprintf("%s.%s: missing", path, k))
			}
		}
		for k, gv := range g {
			wv, ok := w[k]
			if !ok {
				if !optional(path, k) {
					*diffs = append(*diffs, fmt.Sprintf("%s.%s: not in Flink's answer", path, k))
				}
				continue
			}
			sameShape(strings.TrimPrefix(path+"."+k, "."), wv, gv, diffs)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s: want an array, got %T", path, got))
			return
		}
		if len(w) > 0 && len(g) > 0 {
			sameShape(path+"[]", w[0], g[0], diffs)
		}
	default:
		if fmt.Sprintf("%T", want) != fmt.Sprintf("%T", got) {
			*diffs = append(*diffs, fmt.Sprintf("%s: want %T, got %T", path, want, got))
		}
	}
}

func TestSameShapeFindsDrift(t *testing.T) {
	var flinkAnswer any
	require.NoError(t, json.Unmarshal([]byte(`{"status":{"id":"COMPLETED"},"operation":{"location":"s3://x"},"jobs":[{"jid":"a","end-time":-1}]}`), &flinkAnswer))
	for _, tc := range []struct {
		name, got string
		want      []string
	}{
		{name: "same", got: `{"status":{"id":"IN_PROGRESS"},"operation":null,"jobs":[]}`},
		{name: "renamed field", got: `{"status":{"id":"COMPLETED"},"operation":{"path":"s3://x"},"jobs":[]}`,
			want: []string{"operation.location: missing", "operation.path: not in Flink's answer"}},
		{name: "wrong type in an array element", got: `{"status":{"id":"COMPLETED"},"operation":null,"jobs":[{"jid":"a","end-time":"-1"}]}`,
			want: []string{"jobs[].end-time: want float64, got string"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got any
			require.NoError(t, json.Unmarshal([]byte(tc.got), &got))
			var diffs []string
			sameShape("", flinkAnswer, got, &diffs)
			slices.Sort(diffs)
			assert.Equal(t, tc.want, diffs)
		})
	}
}
