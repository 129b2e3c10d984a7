package differential_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// observation is one thing the script saw at one of its steps, normalized.
type observation struct {
	Step  string `json:"step"`
	What  string `json:"what"`
	Value string `json:"value"`
	// Info marks what depends on timing: printed, not compared.
	Info bool `json:"info,omitempty"`
}

func (o observation) key() string { return o.Step + " / " + o.What }

// normalizer replaces what differs between two runs of the same script (the side's
// directory and namespace, the job ID, other IDs, pod addresses, checkpoint IDs in keys) by
// placeholders, keeping what the controller relies on: the path's form (file:/x, never
// file:///x), a savepoint directory's name (savepoint-<first 6 hex of the job ID>-<12 hex>).
type normalizer struct {
	dir, ns, jobID string
}

func newNormalizer(dir, ns, jobID string) *normalizer {
	return &normalizer{dir: dir, ns: ns, jobID: jobID}
}

var (
	savepointName = regexp.MustCompile(`savepoint-([0-9a-f]{6})-([0-9a-f]{12})`)
	hexID         = regexp.MustCompile(`\b[0-9a-f]{32}\b`)
	checkpointKey = regexp.MustCompile(`checkpointID-\d{19}`)
	checkpointDir = regexp.MustCompile(`/chk-\d+`)
	ipAddress     = regexp.MustCompile(`\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b`)
	lockID        = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
)

// value normalizes a string, a list of strings (one a line, sorted once normalized: a list
// of names sorts by the IDs in them) or any JSON value.
func (n *normalizer) value(v any) string {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case []string:
		lines := make([]string, len(v))
		for i, l := range v {
			lines[i] = n.value(l)
		}
		sort.Strings(lines)
		return strings.Join(lines, "\n")
	default:
		b, _ := json.Marshal(v)
		s = string(b)
	}
	if n == nil {
		return s
	}
	if n.dir != "" {
		s = strings.ReplaceAll(s, n.dir, "<dir>")
	}
	if n.ns != "" {
		s = strings.ReplaceAll(s, n.ns, "<ns>")
	}
	s = savepointName.ReplaceAllStringFunc(s, func(m string) string {
		sub := savepointName.FindStringSubmatch(m)
		if n.jobID != "" && strings.HasPrefix(n.jobID, sub[1]) {
			return "savepoint-<job:6>-<hex:12>"
		}
		return "savepoint-<hex:6>-<hex:12>"
	})
	if n.jobID != "" {
		s = strings.ReplaceAll(s, n.jobID, "<job>")
	}
	s = hexID.ReplaceAllString(s, "<id>")
	s = lockID.ReplaceAllString(s, "<uuid>")
	s = checkpointKey.ReplaceAllString(s, "checkpointID-<n>")
	s = checkpointDir.ReplaceAllString(s, "/chk-<n>")
	s = ipAddress.ReplaceAllString(s, "<ip>")
	return s
}

// JSON helpers over a decoded answer.

func field(v any, k string) any {
	m, _ := v.(map[string]any)
	return m[k]
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// leaf marks a field of a schema that is a value.
const leaf = "value"

// shape describes v as far as schema names its fields, the fields of the controller's
// flinkclient types: each one's JSON type ("absent" when missing), objects field by field
// and arrays by the set of their elements' shapes. Values are left out: the script notes the
// ones it compares.
func shape(v any, schema any) any {
	switch sc := schema.(type) {
	case map[string]any:
		m, ok := v.(map[string]any)
		if !ok {
			return jsonType(v)
		}
		out := map[string]any{}
		for k, sub := range sc {
			f, present := m[k]
			if !present {
				out[k] = "absent"
				continue
			}
			out[k] = shape(f, sub)
		}
		return out
	case []any:
		l, ok := v.([]any)
		if !ok {
			return jsonType(v)
		}
		var shapes []string
		for _, e := range l {
			b, _ := json.Marshal(shape(e, sc[0]))
			if !slices.Contains(shapes, string(b)) {
				shapes = append(shapes, string(b))
			}
		}
		sort.Strings(shapes)
		return shapes
	default:
		return jsonType(v)
	}
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	default:
		return "object"
	}
}

// The schemas of the answers the controller decodes (controller/flinkclient).
var (
	jobSchema      = map[string]any{"jid": leaf, "name": leaf, "state": leaf, "start-time": leaf, "end-time": leaf}
	overviewSchema = map[string]any{"jobs": []any{jobSchema}}
	cpSchema       = map[string]any{
		"id": leaf, "status": leaf, "is_savepoint": leaf, "trigger_timestamp": leaf, "latest_ack_timestamp": leaf,
		"external_path": leaf, "discarded": leaf,
	}
	restoredSchema    = map[string]any{"id": leaf, "is_savepoint": leaf, "restore_timestamp": leaf, "external_path": leaf}
	checkpointsSchema = map[string]any{
		"counts":  map[string]any{"restored": leaf, "total": leaf, "in_progress": leaf, "completed": leaf, "failed": leaf},
		"latest":  map[string]any{"completed": cpSchema, "savepoint": cpSchema, "restored": restoredSchema},
		"history": []any{cpSchema},
	}
	triggerSchema   = map[string]any{"request-id": leaf}
	operationSchema = map[string]any{
		"status":    map[string]any{"id": leaf},
		"operation": map[string]any{"location": leaf, "failure-cause": map[string]any{"class": leaf, "stack-trace": leaf}},
	}
	exceptionsSchema = map[string]any{"exceptionHistory": map[string]any{"entries": []any{
		map[string]any{"exceptionName": leaf, "stacktrace": leaf, "timestamp": leaf},
	}}}
)

// comparison is the outcome of comparing the two sides' observations.
type comparison struct {
	// diffs are the divergences: they fail the test.
	diffs []string
	// deliberate are the divergences fakeflink documents as deliberate.
	deliberate []string
	// info are the timing-dependent observations of both sides.
	info []string
}

// compare compares the real and the fake side's observations, step by step; a divergence
// whose key is in allowed is deliberate (the value says why).
func compare(realObs, fakeObs []observation, allowed map[string]string) comparison {
	var c comparison
	index := func(obs []observation) (map[string]string, []string) {
		m := map[string]string{}
		var order []string
		for _, o := range obs {
			k := o.key()
			if o.Info {
				k = "info: " + k
			}
			if _, dup := m[k]; !dup {
				order = append(order, k)
			}
			m[k] = o.Value
		}
		return m, order
	}
	r, order := index(realObs)
	f, fakeOrder := index(fakeObs)
	for _, k := range fakeOrder {
		if _, ok := r[k]; !ok {
			order = append(order, k)
		}
	}
	for _, k := range order {
		rv, rok := r[k]
		fv, fok := f[k]
		if !rok {
			rv = "(not observed)"
		}
		if !fok {
			fv = "(not observed)"
		}
		line := fmt.Sprintf("%s\n    real: %s\n    fake: %s", k, indent(rv), indent(fv))
		switch {
		case strings.HasPrefix(k, "info: "):
			c.info = append(c.info, line)
		case rok && fok && rv == fv:
		case allowed[k] != "":
			c.deliberate = append(c.deliberate, line+"\n    deliberate: "+allowed[k])
		default:
			c.diffs = append(c.diffs, line)
		}
	}
	return c
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n          ") }

// readObservations reads a recorded run: the real side's observations by scenario.
func readObservations(path string) (map[string][]observation, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the recorded real side: %w", err)
	}
	out := map[string][]observation{}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	return out, nil
}

func TestCompareReportsEveryDivergenceButTheDeliberateOnes(t *testing.T) {
	realObs := []observation{
		{Step: "start", What: "state", Value: "RUNNING"},
		{Step: "savepoint", What: "location", Value: "file:<dir>/savepoints/savepoint-<job:6>-<hex:12>"},
		{Step: "shutdown", What: "exit", Value: "still running"},
		{Step: "start", What: "states seen", Value: "INITIALIZING,RUNNING", Info: true},
	}
	fakeObs := []observation{
		{Step: "start", What: "state", Value: "RUNNING"},
		{Step: "savepoint", What: "location", Value: "file://<dir>/savepoints/savepoint-<hex:6>-<hex:12>"},
		{Step: "shutdown", What: "exit", Value: "0"},
		{Step: "start", What: "states seen", Value: "RUNNING", Info: true},
		{Step: "stop", What: "state", Value: "FINISHED"},
	}
	c := compare(realObs, fakeObs, map[string]string{"shutdown / exit": "the fake always exits"})
	if len(c.diffs) != 2 || !strings.HasPrefix(c.diffs[0], "savepoint / location") || !strings.HasPrefix(c.diffs[1], "stop / state") {
		t.Errorf("diffs = %q, want the savepoint location and the stop's state only", c.diffs)
	}
	if len(c.deliberate) != 1 || len(c.info) != 1 {
		t.Errorf("deliberate = %q, info = %q, want one each", c.deliberate, c.info)
	}
}

func TestNormalizeKeepsThePathsFormAndTheSavepointsJobPrefix(t *testing.T) {
	job := "a1b2c3d4e5f60718293a4b5c6d7e8f90"
	n := newNormalizer("/tmp/differential-d-a-real-1", "d-a-real", job)
	for in, want := range map[string]string{
		"file:/tmp/differential-d-a-real-1/savepoints/savepoint-a1b2c3-0123456789ab":   "file:<dir>/savepoints/savepoint-<job:6>-<hex:12>",
		"file:///tmp/differential-d-a-real-1/savepoints/savepoint-ffffff-0123456789ab": "file://<dir>/savepoints/savepoint-<hex:6>-<hex:12>",
		"job-" + job + "-config-map":              "job-<job>-config-map",
		"checkpointID-0000000000000000012":        "checkpointID-<n>",
		"http://10.0.0.12:8081 in d-a-real":       "http://<ip>:8081 in <ns>",
		"ffffffffffffffffffffffffffffffff is new": "<id> is new",
	} {
		if got := n.value(in); got != want {
			t.Errorf("value(%q) = %q, want %q", in, got, want)
		}
	}
}
