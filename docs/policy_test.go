package docs

import (
	"context"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/celrules"
	"github.com/flink-admission/flink-admission/check"
	"github.com/flink-admission/flink-admission/policy"
)

const policyDoc = "docs/policy.md"

// stringConsts returns the string constants of a Go package directory whose names start
// with prefix, by name, read from the source so that a constant added later is checked too.
func stringConsts(t *testing.T, dir, prefix string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(filepath.Join(repoRoot, dir))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(repoRoot, dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range fileStringConsts(f) {
			if strings.HasPrefix(name, prefix) {
				out[name] = v
			}
		}
	}
	return out
}

// ruleDoc is what policy.md says about one rule.
type ruleDoc struct {
	name       string
	line       int
	enforcedBy string // "webhook" or "both"
	bySchema   bool   // "both — the webhook and the CRD's schema": the OpenAPI schema, not a CEL rule
	field      string
	errType    string // "Invalid value", "Forbidden", ...
	message    string
	crdField   string // "" when it is the same as field
	crdMessage string // "" when it is the same as message
	create     []string
	old, new   []string
}

var (
	enforcedRE   = regexp.MustCompile(`^- \*\*Enforced by:\*\* (webhook|both)\b(.*)$`)
	crdFieldRE   = regexp.MustCompile("^- \\*\\*CRD field:\\*\\* `([^`]+)`")
	fieldLineRE  = regexp.MustCompile("^- \\*\\*Field:\\*\\* `([^`]+)` \\(([^;)]+)")
	messageRE    = regexp.MustCompile("^- \\*\\*Message:\\*\\* `([^`]+)`$")
	crdMessageRE = regexp.MustCompile("^- \\*\\*CRD message:\\*\\* `([^`]+)`$")
	ruleTitleRE  = regexp.MustCompile("^`([a-z0-9-]+)`$")
)

// parseRuleDocs reads the rule sections of policy.md: level-3 headings that are a rule name
// in a code span.
func parseRuleDocs(t *testing.T, doc *mdFile) (map[string]*ruleDoc, []fence) {
	t.Helper()
	rules := map[string]*ruleDoc{}
	var otherYAML []fence
	for _, s := range doc.sections {
		m := ruleTitleRE.FindStringSubmatch(s.title)
		if s.level != 3 || m == nil {
			for _, b := range s.blocks {
				if b.lang() == "yaml" {
					otherYAML = append(otherYAML, b)
				}
			}
			continue
		}
		r := &ruleDoc{name: m[1], line: s.line}
		if _, dup := rules[r.name]; dup {
			t.Errorf("%s:%d: rule %s is documented twice", doc.path, s.line, r.name)
		}
		rules[r.name] = r
		for _, line := range s.text {
			line = strings.TrimSpace(line)
			if m := enforcedRE.FindStringSubmatch(line); m != nil {
				r.enforcedBy = m[1]
				r.bySchema = m[1] == "both" && strings.HasPrefix(strings.TrimSpace(m[2]), "— the webhook and the CRD's schema")
			}
			if m := crdFieldRE.FindStringSubmatch(line); m != nil {
				r.crdField = m[1]
			}
			if m := fieldLineRE.FindStringSubmatch(line); m != nil {
				r.field, r.errType = m[1], strings.TrimSpace(m[2])
			}
			if m := messageRE.FindStringSubmatch(line); m != nil {
				r.message = m[1]
			}
			if m := crdMessageRE.FindStringSubmatch(line); m != nil {
				r.crdMessage = m[1]
			}
		}
		for _, b := range s.blocks {
			if b.lang() != "yaml" {
				continue
			}
			switch b.attr() {
			case "":
				r.create = b.body
			case "old":
				r.old = b.body
			case "new":
				r.new = b.body
			default:
				t.Errorf("%s:%d: yaml block %q: use yaml, yaml old or yaml new", doc.path, b.line, b.info)
			}
		}
	}
	return rules, otherYAML
}

// TestPolicyReference checks policy.md against the program: every rule of package policy
// has a section that says where it is enforced, its field, error type and message, and a
// minimal manifest that `check` denies with exactly that error; the rule named by the
// section is the one that fires (package policy's rule name); "both" means the CRD's CEL
// rules deny the example too, with the documented CRD message, and "webhook" means they do
// not. Every CEL rule's message and every warning text appears.
func TestPolicyReference(t *testing.T) {
	doc := readDoc(t, policyDoc)
	content := strings.Join(doc.lines, "\n")
	ruleList := policy.Rules()
	if len(ruleList) < 40 {
		t.Fatalf("policy.Rules() lists only %d rules", len(ruleList))
	}
	rules, otherYAML := parseRuleDocs(t, doc)

	cel, err := celrules.New()
	if err != nil {
		t.Fatal(err)
	}
	checker, err := check.New("default")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	known := map[string]policy.RuleInfo{}
	for _, r := range ruleList {
		known[r.Name] = r
		if rules[r.Name] == nil {
			t.Errorf("%s has no section for rule %s", policyDoc, r.Name)
		}
	}

	names := make([]string, 0, len(rules))
	for name := range rules {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		r := rules[name]
		t.Run(name, func(t *testing.T) {
			info, ok := known[name]
			if !ok {
				t.Fatalf("%s:%d: %s is not in policy.Rules()", policyDoc, r.line, name)
			}
			checkRuleListed(t, r, info)
			checkRuleDoc(ctx, t, checker, cel, r)
		})
	}

	celRules, err := cel.Rules()
	if err != nil {
		t.Fatal(err)
	}
	for _, rule := range celRules {
		if !strings.Contains(content, rule.Message) {
			t.Errorf("%s does not quote the message of the CRD rule at %q: %s", policyDoc, rule.Path, rule.Message)
		}
	}

	// Manifests outside the rule sections are examples of valid clusters.
	for _, b := range otherYAML {
		results := runCheck(ctx, t, checker, b.body, nil)
		if len(results) != 1 || !results[0].Allowed {
			t.Errorf("%s:%d: this example is shown as a valid cluster, but check says %+v", policyDoc, b.line, results)
		}
	}
}

// checkRuleListed checks that a rule's section says what policy.Rules() says of it.
func checkRuleListed(t *testing.T, r *ruleDoc, info policy.RuleInfo) {
	t.Helper()
	where := fmt.Sprintf("%s:%d", policyDoc, r.line)
	wantBy := map[policy.Enforcement]string{policy.EnforcedByWebhook: "webhook", policy.EnforcedByCRDRule: "both", policy.EnforcedByCRDSchema: "both"}[info.EnforcedBy]
	if r.enforcedBy != wantBy || r.bySchema != (info.EnforcedBy == policy.EnforcedByCRDSchema) {
		t.Errorf("%s: enforced by %q (schema %v), policy.Rules() says %q", where, r.enforcedBy, r.bySchema, info.EnforcedBy)
	}
	for _, c := range []struct{ what, doc, list string }{
		{"field", r.field, info.Field},
		{"error type", r.errType, info.Type.String()},
		{"message", r.message, info.Message},
		{"CRD field", r.crdField, info.CRDField},
		{"CRD message", r.crdMessage, info.CRDMessage},
		{"example", joinBlock(r.create) + joinBlock(r.new), info.Example},
		{"old example", joinBlock(r.old), info.ExampleOld},
	} {
		if c.doc != c.list {
			t.Errorf("%s: the %s is %q, policy.Rules() says %q", where, c.what, c.doc, c.list)
		}
	}
}

// joinBlock returns the lines of a fenced block as one text, "" for none.
func joinBlock(lines []string) string {
	if lines == nil {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

func checkRuleDoc(ctx context.Context, t *testing.T, checker *check.Checker, cel *celrules.Validator, r *ruleDoc) {
	where := fmt.Sprintf("%s:%d", policyDoc, r.line)
	switch {
	case r.enforcedBy == "":
		t.Errorf("%s: no `- **Enforced by:** webhook|both` line", where)
	case r.field == "" || r.errType == "":
		t.Errorf("%s: no `- **Field:** `path` (type)` line", where)
	case r.message == "":
		t.Errorf("%s: no `- **Message:** `text`` line", where)
	}
	if t.Failed() {
		return
	}
	update := r.old != nil || r.new != nil
	switch {
	case update && (r.old == nil || r.new == nil):
		t.Fatalf("%s: an update example needs a `yaml old` and a `yaml new` block", where)
	case update && r.create != nil:
		t.Fatalf("%s: a create example and an update example: show one", where)
	case !update && r.create == nil:
		t.Fatalf("%s: no example manifest (a `yaml` block, or `yaml old` and `yaml new`)", where)
	}

	newBody, oldBody := r.create, []string(nil)
	if update {
		newBody, oldBody = r.new, r.old
	}
	results := runCheck(ctx, t, checker, newBody, oldBody)
	if len(results) != 1 {
		t.Fatalf("%s: the example holds %d FlinkClusters, want 1", where, len(results))
	}
	res := results[0]
	if wantOp := map[bool]string{false: "CREATE", true: "UPDATE"}[update]; res.Operation != wantOp {
		t.Fatalf("%s: check ran the example as %s, want %s (old and new must have the same name)", where, res.Operation, wantOp)
	}
	if res.Allowed {
		t.Fatalf("%s: check allows the example; want it denied with %s", where, r.field)
	}
	// What kubectl and check show: the API server checks the CRD (schema and CEL rules) before
	// it calls the validating webhook, so a rule the CRD enforces too is reported as the CRD
	// reports it.
	wantField, wantMessage := r.field, r.message
	if r.enforcedBy == "both" {
		if r.crdField != "" {
			wantField = r.crdField
		}
		if r.crdMessage != "" {
			wantMessage = r.crdMessage
		}
	}
	found := false
	for _, e := range res.Errors {
		// check prints a cause as the API server does, "<type>: [<value>: ]<detail>"; the
		// reference documents the detail.
		if e.Field == wantField && field.ErrorType(e.Type).String() == r.errType && strings.HasSuffix(e.Message, wantMessage) {
			found = true
		}
	}
	if !found {
		t.Errorf("%s: check denies the example, but not with %s (%s): %q; its errors:\n%s",
			where, wantField, r.errType, wantMessage, formatErrors(res.Errors))
	}

	// The rule named by the section is the one that fires.
	newObj := res.Object
	var oldObj map[string]any
	if update {
		oldResults := runCheck(ctx, t, checker, oldBody, nil)
		oldObj = oldResults[0].Object
	}
	newTyped, oldTyped := typed(t, newObj), typed(t, oldObj)
	var policyErrs field.ErrorList
	if update {
		policyErrs, _ = policy.ValidateUpdate(oldTyped, newTyped)
	} else {
		policyErrs, _ = policy.ValidateCreate(newTyped)
	}
	fired := false
	for _, e := range policyErrs {
		if policy.RuleOf(e) == r.name && e.Field == r.field {
			fired = true
		}
	}
	if !fired {
		t.Errorf("%s: rule %s does not fire on %s for the example; package policy reports:\n%s", where, r.name, r.field, formatFieldErrors(policyErrs))
	}

	// Where the rule is enforced: by the webhook alone, or also by a CEL rule or the OpenAPI
	// schema of the CRD.
	celErrs := cel.Validate(ctx, newObj, oldObj)
	schemaErrs := cel.ValidateSchema(newObj, oldObj)
	switch {
	case r.enforcedBy == "webhook":
		if r.crdMessage != "" || r.crdField != "" {
			t.Errorf("%s: a CRD message or field for a rule enforced by the webhook only", where)
		}
		if len(celErrs)+len(schemaErrs) > 0 {
			t.Errorf("%s: documented as enforced by the webhook only, but the CRD denies the example too:\n%s",
				where, formatFieldErrors(append(celErrs, schemaErrs...)))
		}
	case r.bySchema:
		if len(celErrs) > 0 {
			t.Errorf("%s: documented as enforced by the CRD's schema, but a CEL rule denies the example:\n%s", where, formatFieldErrors(celErrs))
		}
		hit := false
		for _, e := range schemaErrs {
			if e.Field == r.field {
				hit = true
			}
		}
		if !hit {
			t.Errorf("%s: documented as enforced by the CRD's schema, but the schema does not deny %s; it reports:\n%s",
				where, r.field, formatFieldErrors(schemaErrs))
		}
	default:
		hit := false
		for _, e := range celErrs {
			if e.Detail == wantMessage {
				hit = true
			}
		}
		if !hit {
			t.Errorf("%s: documented as enforced by a CRD rule, but the CRD's CEL rules do not deny the example with %q; they report:\n%s",
				where, wantMessage, formatFieldErrors(celErrs))
		}
	}
}

// runCheck runs check on a manifest (and its stored version), as `flink-admission check -f
// new --old old` would.
func runCheck(ctx context.Context, t *testing.T, checker *check.Checker, newBody, oldBody []string) []check.Result {
	t.Helper()
	docs, _, err := check.Load([]string{"-"}, strings.NewReader(strings.Join(newBody, "\n")))
	if err != nil {
		t.Fatalf("the example does not parse: %v", err)
	}
	var olds []check.Document
	if oldBody != nil {
		if olds, _, err = check.Load([]string{"-"}, strings.NewReader(strings.Join(oldBody, "\n"))); err != nil {
			t.Fatalf("the stored example does not parse: %v", err)
		}
	}
	return checker.Run(ctx, docs, olds)
}

func typed(t *testing.T, obj map[string]any) *v1beta1.FlinkCluster {
	t.Helper()
	if obj == nil {
		return nil
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	fc := &v1beta1.FlinkCluster{}
	if err := json.Unmarshal(raw, fc); err != nil {
		t.Fatal(err)
	}
	return fc
}

func formatErrors(errs []check.FieldError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s (%s): %s\n", e.Field, field.ErrorType(e.Type).String(), e.Message)
	}
	return b.String()
}

func formatFieldErrors(errs field.ErrorList) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s (%s) [%s]: %s\n", e.Field, e.Type.String(), e.Origin, e.Detail)
	}
	if len(errs) == 0 {
		return "  (none)\n"
	}
	return b.String()
}

// TestPolicyWarnings checks that every warning text of package policy is in policy.md (a
// format's fixed parts, for the texts with verbs).
func TestPolicyWarnings(t *testing.T) {
	content := strings.Join(readDoc(t, policyDoc).lines, "\n")
	warnings := stringConsts(t, "policy", "Warning")
	if len(warnings) < 4 {
		t.Fatalf("found only %d warning constants in policy/: the parser broke", len(warnings))
	}
	verb := regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z]`)
	for name, text := range warnings {
		for _, part := range verb.Split(text, -1) {
			if strings.TrimSpace(part) != "" && !strings.Contains(content, part) {
				t.Errorf("%s does not show the warning %s: %q", policyDoc, name, text)
			}
		}
	}
}

// defaultsInputs are clusters that, together, make the mutating webhook set every default it
// has, with the values the defaults table shows.
var defaultsInputs = []string{`
apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata: {name: job, namespace: default}
spec:
  flinkVersion: "1.20"
  image: {name: flink}
  batchSchedulerName: volcano
  hadoopConfig: {configMapName: hadoop}
  jobManager:
    ingress: {hostFormat: "{{$clusterName}}.example.com"}
  job: {jarFile: /job.jar}
`, `
apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata: {name: old-flink, namespace: default}
spec:
  flinkVersion: "1.9"
  image: {name: flink}
`, `
apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata: {name: deployment, namespace: default}
spec:
  flinkVersion: "2.0"
  image: {name: flink}
  jobManager: {deploymentType: Deployment}
  job: {mode: Application, jarFile: /job.jar}
  flinkProperties: {high-availability.type: kubernetes, high-availability.storageDir: "s3://ha"}
`}

// defaultRow is one row of the defaults table.
type defaultRow struct {
	path, value, crd string
	covered          bool
	crdSeen          map[bool]bool
}

// TestPolicyDefaults checks the defaults table of policy.md against policy.Default and the
// CRD's structural defaults: every field the mutating webhook sets has a row with its value,
// every row is a field it sets, and the "CRD default too" column says whether the CRD's
// schema defaults the same field.
func TestPolicyDefaults(t *testing.T) {
	doc := readDoc(t, policyDoc)
	secs := doc.sectionsUnder("Defaults")
	var text []string
	for _, s := range secs {
		text = append(text, s.text...)
	}
	var rows []*defaultRow
	for _, tab := range tables(text) {
		if len(tab.header) != 4 || tab.header[0] != "Field" {
			continue
		}
		for _, cells := range tab.rows {
			paths := codeSpans(cells[0])
			if len(paths) != 1 {
				t.Errorf("%s: defaults row %q: want one `field` in the first column", policyDoc, cells[0])
				continue
			}
			rows = append(rows, &defaultRow{path: paths[0], value: cells[1], crd: cells[3], crdSeen: map[bool]bool{}})
		}
	}
	if len(rows) < 20 {
		t.Fatalf("%s: found %d rows in the defaults table, want the table with the columns Field | Default | When | CRD default too", policyDoc, len(rows))
	}

	cel, err := celrules.New()
	if err != nil {
		t.Fatal(err)
	}
	// Several inputs set the same field: report each problem once.
	reported := map[string]bool{}
	errorf := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if !reported[msg] {
			reported[msg] = true
			t.Error(msg)
		}
	}
	for i, input := range defaultsInputs {
		webhookLeaves := webhookDefaults(t, input)
		crdLeaves := crdDefaults(t, cel, input)
		for leaf, value := range webhookLeaves {
			row := coveringRow(rows, leaf)
			if row == nil {
				errorf("%s: the mutating webhook sets %s = %v (input %d), but the defaults table has no row for it", policyDoc, leaf, value, i)
				continue
			}
			row.covered = true
			_, byCRD := crdLeaves[leaf]
			row.crdSeen[byCRD] = true
			shown := formatValue(value)
			switch {
			case strings.HasPrefix(row.value, "the value of"):
				// Copied from another field of the input.
			case row.path == leaf:
				if !containsCodeSpan(row.value, shown) {
					errorf("%s: row %s shows %s, but the webhook sets `%s`", policyDoc, row.path, row.value, shown)
				}
			default:
				key := leaf[strings.LastIndex(leaf, ".")+1:]
				if !strings.Contains(row.value, key+": "+shown) {
					errorf("%s: row %s shows %s, but the webhook sets %s to %s (want %q in the row)", policyDoc, row.path, row.value, leaf, shown, key+": "+shown)
				}
			}
		}
	}
	for _, row := range rows {
		switch {
		case !row.covered:
			t.Errorf("%s: the defaults table lists %s, but the mutating webhook sets no such field", policyDoc, row.path)
		case len(row.crdSeen) > 1:
			t.Errorf("%s: row %s: the CRD defaults some of its fields and not others; split the row", policyDoc, row.path)
		case row.crdSeen[true] && row.crd != "yes":
			t.Errorf("%s: row %s says CRD default %q, but the CRD's schema defaults it too (want yes)", policyDoc, row.path, row.crd)
		case row.crdSeen[false] && row.crd != "no":
			t.Errorf("%s: row %s says CRD default %q, but the CRD's schema does not default it (want no)", policyDoc, row.path, row.crd)
		}
	}
}

func coveringRow(rows []*defaultRow, leaf string) *defaultRow {
	var best *defaultRow
	for _, r := range rows {
		if (r.path == leaf || strings.HasPrefix(leaf, r.path+".") || strings.HasPrefix(leaf, r.path+"[")) &&
			(best == nil || len(r.path) > len(best.path)) {
			best = r
		}
	}
	return best
}

func containsCodeSpan(s, want string) bool {
	for _, span := range codeSpans(s) {
		if span == want {
			return true
		}
	}
	return false
}

func formatValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}

// webhookDefaults returns the leaves policy.Default sets on input, by documentation path
// (spec.jobManager.replicas, spec.flinkProperties[key]).
func webhookDefaults(t *testing.T, input string) map[string]any {
	t.Helper()
	fc := &v1beta1.FlinkCluster{}
	if err := yaml.UnmarshalStrict([]byte(input), fc); err != nil {
		t.Fatal(err)
	}
	before, err := json.Marshal(fc)
	if err != nil {
		t.Fatal(err)
	}
	policy.Default(fc)
	after, err := json.Marshal(fc)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.CreatePatch(before, after)
	if err != nil {
		t.Fatal(err)
	}
	leaves := map[string]any{}
	for _, op := range patch {
		if op.Operation != "add" {
			t.Errorf("policy.Default changes a set field: %s %s", op.Operation, op.Path)
			continue
		}
		flatten(docPath(op.Path), op.Value, leaves)
	}
	return leaves
}

// crdDefaults returns the leaves the CRD's structural defaults set on input.
func crdDefaults(t *testing.T, cel *celrules.Validator, input string) map[string]any {
	t.Helper()
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(input), &obj); err != nil {
		t.Fatal(err)
	}
	before := map[string]any{}
	flatten("", obj, before)
	cel.Default(obj)
	after := map[string]any{}
	flatten("", obj, after)
	for k := range before {
		delete(after, k)
	}
	return after
}

// docPath turns a JSON pointer into the path notation of the docs: dots between fields,
// [key] for map keys with dots.
func docPath(pointer string) string {
	var b strings.Builder
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		b.WriteString(pathStep(b.Len() == 0, tok))
	}
	return b.String()
}

func pathStep(first bool, key string) string {
	switch {
	case strings.ContainsAny(key, "./"):
		return "[" + key + "]"
	case first:
		return key
	default:
		return "." + key
	}
}

// flatten adds the scalar leaves of v under prefix to out.
func flatten(prefix string, v any, out map[string]any) {
	m, ok := v.(map[string]any)
	if !ok {
		out[prefix] = v
		return
	}
	for k, child := range m {
		flatten(prefix+pathStep(prefix == "", k), child, out)
	}
}

func TestDocPath(t *testing.T) {
	for in, want := range map[string]string{
		"/spec/jobManager/replicas":                                      "spec.jobManager.replicas",
		"/spec/flinkProperties/execution.shutdown-on-application-finish": "spec.flinkProperties[execution.shutdown-on-application-finish]",
	} {
		if got := docPath(in); got != want {
			t.Errorf("docPath(%q) = %q, want %q", in, got, want)
		}
	}
	out := map[string]any{}
	flatten("spec.x", map[string]any{"a": map[string]any{"b": 1.0}, "c.d": "e"}, out)
	if out["spec.x.a.b"] != 1.0 || out["spec.x[c.d]"] != "e" || len(out) != 2 {
		t.Fatalf("flatten: %v", out)
	}
}
