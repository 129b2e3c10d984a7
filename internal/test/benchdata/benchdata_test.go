package benchdata

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the large reviews from the typical ones")

// largeSize is the size the large objects aim at.
const largeSize = 100_000

// TestLargeReviews makes each large review from the typical one of the same webhook and
// operation: more flinkProperties, sidecars and volumes, until the object is about
// largeSize bytes of JSON. With -update it writes them; without, it checks that the files
// are what it would write.
func TestLargeReviews(t *testing.T) {
	for _, kind := range []string{"mutate-create", "validate-create", "validate-update"} {
		t.Run(kind, func(t *testing.T) {
			typical, err := os.ReadFile(filepath.Join("reviews", "typical-"+kind+".json"))
			if err != nil {
				t.Fatal(err)
			}
			want := enlarge(t, typical)
			file := filepath.Join("reviews", "large-"+kind+".json")
			if *update {
				if err := os.WriteFile(file, want, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/test/benchdata -run TestLargeReviews -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s is stale: run go test ./internal/test/benchdata -run TestLargeReviews -update", file)
			}
		})
	}
}

// enlarge grows the objects of a review body.
func enlarge(t *testing.T, body []byte) []byte {
	t.Helper()
	var rv map[string]any
	if err := json.Unmarshal(body, &rv); err != nil {
		t.Fatal(err)
	}
	req := rv["request"].(map[string]any)
	req["uid"] = strings.Replace(req["uid"].(string), req["uid"].(string)[:8], "1a26e000", 1)
	for _, key := range []string{"object", "oldObject"} {
		o, ok := req[key].(map[string]any)
		if !ok {
			continue
		}
		grow(t, o)
	}
	out, err := json.Marshal(rv)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// grow adds realistic bulk to one object until its JSON is about largeSize bytes: the
// same additions in the same order for old and new, so that an update stays an update of
// one value.
func grow(t *testing.T, o map[string]any) {
	t.Helper()
	spec := o["spec"].(map[string]any)
	props := spec["flinkProperties"].(map[string]any)
	tm := spec["taskManager"].(map[string]any)
	for i := 0; size(t, o) < largeSize; i++ {
		props[fmt.Sprintf("metrics.reporter.custom%03d.interval", i)] = fmt.Sprintf("%ds", 10+i%50)
		props[fmt.Sprintf("state.backend.rocksdb.custom%03d.option", i)] = fmt.Sprintf("value-%03d", i)
		if i%4 == 0 {
			env := []any{}
			for j := range 8 {
				env = append(env, map[string]any{"name": fmt.Sprintf("SIDECAR_%d_VAR_%d", i, j), "value": fmt.Sprintf("value-%d-%d", i, j)})
			}
			sidecars, _ := tm["sidecars"].([]any)
			tm["sidecars"] = append(sidecars, map[string]any{
				"name":  fmt.Sprintf("agent-%03d", i),
				"image": "registry.acme.internal/observability/agent:4.2.1",
				"args":  []any{"--config", fmt.Sprintf("/etc/agent/%03d.yaml", i)},
				"env":   env,
				"resources": map[string]any{
					"requests": map[string]any{"cpu": "50m", "memory": "64Mi"},
					"limits":   map[string]any{"cpu": "200m", "memory": "128Mi"},
				},
				"volumeMounts": []any{map[string]any{"name": fmt.Sprintf("agent-config-%03d", i), "mountPath": fmt.Sprintf("/etc/agent/%03d", i)}},
			})
			volumes, _ := tm["volumes"].([]any)
			tm["volumes"] = append(volumes, map[string]any{
				"name":      fmt.Sprintf("agent-config-%03d", i),
				"configMap": map[string]any{"name": fmt.Sprintf("agent-config-%03d", i)},
			})
		}
	}
}

func size(t *testing.T, o map[string]any) int {
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestReviews checks that every review decodes and has its objects.
func TestReviews(t *testing.T) {
	reviews, err := Reviews()
	if err != nil {
		t.Fatal(err)
	}
	if len(reviews) != 9 {
		t.Errorf("%d reviews, want 9 (minimal, typical, large × 3)", len(reviews))
	}
	for _, r := range reviews {
		if r.Object == nil || strings.HasSuffix(r.Name, "-update") != (r.Old != nil) {
			t.Errorf("%s: object %v, old object %v", r.Name, r.Object != nil, r.Old != nil)
		}
	}
}
