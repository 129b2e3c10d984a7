package docs

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// The monitoring files of deploy/components/observability.
const (
	prometheusRuleFile = "deploy/components/observability/prometheusrule.yaml"
	dashboardFile      = "deploy/components/observability/dashboard.json"
)

// prometheusRule is the part of a monitoring.coreos.com/v1 PrometheusRule the test reads.
type prometheusRule struct {
	Kind string `json:"kind"`
	Spec struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert string `json:"alert"`
				Expr  string `json:"expr"`
				For   string `json:"for"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// alertForRE reads the "for 15m" that follows an alert's expression in docs/operations.md.
var alertForRE = regexp.MustCompile(`^\s*for (\S+)`)

// TestPrometheusRuleHoldsTheDocumentedAlerts: every PromQL alert of docs/operations.md ("What
// to alert on") is a rule of the PrometheusRule with the same expression (compared parsed, so
// spacing does not matter) and the same `for`, and the PrometheusRule has no other rule.
func TestPrometheusRuleHoldsTheDocumentedAlerts(t *testing.T) {
	doc := readDoc(t, operationsDoc)
	secs := doc.sectionsUnder("What to alert on")
	if len(secs) == 0 {
		t.Fatalf("%s: no section What to alert on", operationsDoc)
	}
	type alert struct{ expr, forDuration string }
	documented := map[string]alert{} // canonical expression -> alert
	for _, tab := range tables(secs[0].text) {
		if len(tab.header) < 2 || tab.header[1] != "Expression" {
			continue
		}
		for _, row := range tab.rows {
			// Rows that open with a code span are PromQL; the others are Event alerts.
			cell := row[1]
			if !strings.HasPrefix(cell, "`") {
				continue
			}
			spans := codeSpans(cell)
			rest := strings.TrimPrefix(cell, "`"+spans[0]+"`")
			expr := canonical(t, operationsDoc+" row "+row[0], spans[0])
			a := alert{expr: spans[0]}
			if m := alertForRE.FindStringSubmatch(rest); m != nil {
				a.forDuration = m[1]
			}
			documented[expr] = a
		}
	}
	if len(documented) == 0 {
		t.Fatalf("%s: no PromQL alert found in What to alert on", operationsDoc)
	}

	rule := readPrometheusRule(t)
	seen := map[string]bool{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("%s: group %s has a rule without an alert name", prometheusRuleFile, g.Name)
			}
			expr := canonical(t, prometheusRuleFile+" alert "+r.Alert, r.Expr)
			a, ok := documented[expr]
			if !ok {
				t.Errorf("%s: alert %s is not in %s: %s", prometheusRuleFile, r.Alert, operationsDoc, r.Expr)
				continue
			}
			seen[expr] = true
			if a.forDuration != r.For {
				t.Errorf("%s: alert %s has for %q, %s says %q", prometheusRuleFile, r.Alert, r.For, operationsDoc, a.forDuration)
			}
		}
	}
	for expr, a := range documented {
		if !seen[expr] {
			t.Errorf("%s documents an alert that %s does not hold: %s", operationsDoc, prometheusRuleFile, a.expr)
		}
	}
}

// TestMonitoringQueriesUseServedMetrics: the alerts and the dashboard's queries parse as
// PromQL and name only metrics that exist: flink-admission's own (from the Go source, as
// TestMetricsDocumented finds them), controller-runtime's, or kube-state-metrics' (kube_*).
// A renamed metric fails here, not as an alert that never fires.
func TestMonitoringQueriesUseServedMetrics(t *testing.T) {
	served := map[string]bool{}
	for _, d := range definedMetrics(t, "webhook", "controller", "certs", "cmd", "server", "internal/version") {
		served[d.name] = true
	}
	crSource := moduleSource(t, "sigs.k8s.io/controller-runtime")
	exists := func(name string) bool {
		if strings.HasPrefix(name, "kube_") {
			return true // kube-state-metrics, which the docs name as the source
		}
		// A histogram's series: its _bucket, _sum and _count.
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			base, ok := strings.CutSuffix(name, suffix)
			if ok && (served[base] || strings.Contains(crSource, strconv.Quote(base))) {
				return true
			}
		}
		return false
	}

	queries := map[string]string{} // where -> PromQL
	for _, g := range readPrometheusRule(t).Spec.Groups {
		for _, r := range g.Rules {
			queries[prometheusRuleFile+" alert "+r.Alert] = r.Expr
		}
	}
	for where, q := range dashboardQueries(t) {
		queries[where] = q
	}
	wheres := make([]string, 0, len(queries))
	for w := range queries {
		wheres = append(wheres, w)
	}
	sort.Strings(wheres)
	for _, where := range wheres {
		names := metricNames(t, where, queries[where])
		if len(names) == 0 {
			t.Errorf("%s: the query names no metric: %s", where, queries[where])
		}
		for _, n := range names {
			if !exists(n) {
				t.Errorf("%s: metric %s is not one the binary serves", where, n)
			}
		}
	}
}

// readPrometheusRule decodes the PrometheusRule of the observability component.
func readPrometheusRule(t *testing.T) prometheusRule {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, prometheusRuleFile))
	if err != nil {
		t.Fatal(err)
	}
	var r prometheusRule
	if err := yaml.UnmarshalStrict(raw, &r, yaml.DisallowUnknownFields); err != nil {
		// Strict about the fields the test reads only: the rest is the operator's schema.
		if err := yaml.Unmarshal(raw, &r); err != nil {
			t.Fatalf("%s: %v", prometheusRuleFile, err)
		}
	}
	if r.Kind != "PrometheusRule" || len(r.Spec.Groups) == 0 {
		t.Fatalf("%s: not a PrometheusRule with groups", prometheusRuleFile)
	}
	return r
}

// dashboardQueries returns the PromQL of every panel target of the Grafana dashboard, with
// its template variables replaced by a value, as Grafana does before it sends a query.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, dashboardFile))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: panel %q has no query", dashboardFile, p.Title)
		}
		for i, tg := range p.Targets {
			out[dashboardFile+" panel "+strconv.Quote(p.Title)+" query "+strconv.Itoa(i)] = strings.ReplaceAll(tg.Expr, "$namespace", "flink-admission-system")
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no panel queries", dashboardFile)
	}
	return out
}

// promql parses as Prometheus does by default.
var promql = parser.NewParser(parser.Options{})

// canonical parses a PromQL expression and prints it back, so that two spellings of one
// expression compare equal.
func canonical(t *testing.T, where, expr string) string {
	t.Helper()
	e, err := promql.ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %v: %s", where, err, expr)
		return expr
	}
	return e.String()
}

// metricNames returns the metric names of a query's vector selectors.
func metricNames(t *testing.T, where, expr string) []string {
	t.Helper()
	e, err := promql.ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %v: %s", where, err, expr)
		return nil
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names
}
