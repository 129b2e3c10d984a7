package policy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/policy"
)

// errorsOpts compares field.ErrorLists by type, field, bad value and rule (Origin), in any
// order; Detail is prose and may be reworded freely.
var errorsOpts = cmp.Options{
	cmpopts.IgnoreFields(field.Error{}, "Detail"),
	cmpopts.EquateEmpty(),
	cmpopts.SortSlices(func(a, b *field.Error) bool { return sortKey(a) < sortKey(b) }),
}

func sortKey(e *field.Error) string {
	return fmt.Sprintf("%s|%s|%s|%v", e.Field, e.Type, e.Origin, e.BadValue)
}

// checkErrors fails t when got differs from want, and when an error carries no rule name
// (RuleOf would label it "unknown") or has an empty detail (the user would not learn why).
func checkErrors(t *testing.T, want, got field.ErrorList) {
	t.Helper()
	if diff := cmp.Diff(want, got, errorsOpts); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	for _, e := range got {
		if policy.RuleOf(e) == policy.RuleUnknown {
			t.Errorf("error without a rule name: %v", e)
		}
		if e.Type != field.ErrorTypeNotSupported && e.Type != field.ErrorTypeDuplicate && e.Type != field.ErrorTypeTooLong && e.Detail == "" {
			t.Errorf("error without a detail: %v", e)
		}
		if d := e.Detail; d != "" && (strings.HasSuffix(d, ".") || d[0] >= 'A' && d[0] <= 'Z' && !strings.HasPrefix(d, "Flink")) {
			t.Errorf("detail must be lowercase without a trailing period: %q", d)
		}
	}
}

// checkWarnings fails t when got differs from want (both in order). A want made by
// existing matches the warning of that ratcheted error whatever its detail.
func checkWarnings(t *testing.T, want, got []string) {
	t.Helper()
	matches := func(w, g string) bool {
		if prefix, ok := strings.CutPrefix(w, existingMarker); ok {
			return strings.HasPrefix(g, prefix) && strings.HasSuffix(g, existingSuffix)
		}
		return w == g
	}
	ok := len(want) == len(got)
	for i := 0; ok && i < len(want); i++ {
		ok = matches(want[i], got[i])
	}
	if !ok {
		t.Errorf("warnings:\n got  %q\n want %q", got, want)
	}
}

const existingMarker = "\x00existing violation of: "

var existingSuffix = strings.TrimPrefix(policy.WarningExistingViolationFormat, "%s")

// existing returns a pattern for checkWarnings that matches the warning the ratcheted
// error e becomes: its field, type and bad value, then the existing-violation suffix.
func existing(e *field.Error) string {
	return existingMarker + e.Error()
}

// Expected-error shorthands: the rule name is part of the expectation.

func invalid(p *field.Path, v any, rule string) *field.Error {
	return field.Invalid(p, v, "").WithOrigin(rule)
}

func required(p *field.Path, rule string) *field.Error {
	return field.Required(p, "").WithOrigin(rule)
}

func forbidden(p *field.Path, rule string) *field.Error {
	return field.Forbidden(p, "").WithOrigin(rule)
}

func duplicate(p *field.Path, v any) *field.Error {
	return field.Duplicate(p, v).WithOrigin(policy.RuleDuplicatePort)
}

func notSupported[T ~string](p *field.Path, v T, rule string) *field.Error {
	return field.NotSupported[T](p, v, nil).WithOrigin(rule)
}

func path(elems ...string) *field.Path {
	return field.NewPath(elems[0], elems[1:]...)
}

var (
	pathFlinkProps   = path("spec", "flinkProperties")
	pathHAType       = pathFlinkProps.Key(policy.PropertyHAType)
	pathHAStorageDir = pathFlinkProps.Key(policy.PropertyHAStorageDir)
	pathShutdown     = pathFlinkProps.Key(policy.PropertyShutdownOnApplicationFinish)
	pathUserControl  = path("metadata", "annotations").Key(v1beta1.ControlAnnotation)
)

// Shorthands for the builder.
const (
	deployment = v1beta1.JobManagerDeploymentTypeDeployment
	jobType    = v1beta1.JobManagerDeploymentTypeJob
	ns         = "default"
)

func makeFC(name string) *builder.FlinkClusterWrapper { return builder.MakeFlinkCluster(name, ns) }

// deploymentFC is a valid application cluster with a Deployment JobManager.
func deploymentFC() *builder.FlinkClusterWrapper {
	return makeFC("app").DeploymentType(deployment).HA()
}

// fixture is a named cluster from the builder or from testdata.
type fixture struct {
	name string
	obj  *v1beta1.FlinkCluster
}

// allFixtures returns the builder's fixtures and the YAML fixtures in testdata, which are
// written in the shape of the reference operator's samples.
func allFixtures(t testing.TB) []fixture {
	t.Helper()
	var out []fixture
	for _, f := range builder.Fixtures() {
		out = append(out, fixture{"builder/" + f.Name, f.Obj})
	}
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, benchTypical)
	if len(files) < 5 {
		t.Fatalf("found %d YAML fixtures in testdata, want at least 4", len(files))
	}
	for _, file := range files {
		out = append(out, fixture{file, readFixture(t, file)})
	}
	return out
}

// benchTypical is the shared benchmark object (a copy of /work/shared/bench/typical.json).
const benchTypical = "testdata/bench-typical.json"

// readFixture decodes a YAML or JSON FlinkCluster strictly: a misspelt field in a fixture
// must fail the test, not be dropped silently.
func readFixture(t testing.TB, file string) *v1beta1.FlinkCluster {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fc := &v1beta1.FlinkCluster{}
	if err := yaml.UnmarshalStrict(data, fc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if fc.Namespace == "" {
		fc.Namespace = ns // as kubectl apply -n would
	}
	return fc
}

// mustJSON encodes v, for fuzz seeds.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
