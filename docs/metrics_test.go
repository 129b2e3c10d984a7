package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

const operationsDoc = "docs/operations.md"

// metricDef is a metric the program defines: its full name and its labels.
type metricDef struct {
	name   string
	labels []string
	where  string
}

// prometheusPackages are the import paths whose New* constructors define metrics.
var prometheusPackages = map[string]bool{
	"github.com/prometheus/client_golang/prometheus":          true,
	"github.com/prometheus/client_golang/prometheus/promauto": true,
}

// definedMetrics finds the metrics the Go packages under dirs define, by reading their
// source: every call of a prometheus (or promauto) New* constructor, with the Name (and
// Namespace, Subsystem) of its options and the label names of a *Vec. Reading the source
// finds every metric, also those that no request or reconcile has touched yet (a *Vec
// without children does not show up in a registry's Gather).
func definedMetrics(t *testing.T, dirs ...string) []metricDef {
	t.Helper()
	var defs []metricDef
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			found, err := metricsInFile(p)
			if err != nil {
				t.Errorf("%v", err)
			}
			defs = append(defs, found...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return defs
}

func metricsInFile(path string) ([]metricDef, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		return nil, err
	}
	// The local names of the prometheus packages in this file.
	local := map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if !prometheusPackages[p] {
			continue
		}
		name := filepath.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		local[name] = true
	}
	if len(local) == 0 {
		return nil, nil
	}
	consts := fileStringConsts(f)
	var defs []metricDef
	var errs []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		if !ok || !local[pkg.Name] || !isMetricConstructor(sel.Sel.Name) {
			return true
		}
		where := fset.Position(call.Pos()).String()
		if len(call.Args) == 0 {
			errs = append(errs, where+": a metric constructor without options")
			return true
		}
		opts, ok := call.Args[0].(*ast.CompositeLit)
		if !ok {
			errs = append(errs, where+": the metric's options are not a literal; the docs test cannot read its name")
			return true
		}
		var name, namespace, subsystem string
		for _, elt := range opts.Elts {
			kv, ok := elt.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			key, _ := kv.Key.(*ast.Ident)
			if key == nil {
				continue
			}
			v, ok := stringValue(kv.Value, consts)
			switch key.Name {
			case "Name", "Namespace", "Subsystem":
				if !ok {
					errs = append(errs, where+": the metric's "+key.Name+" is not a string constant")
				}
			}
			switch key.Name {
			case "Name":
				name = v
			case "Namespace":
				namespace = v
			case "Subsystem":
				subsystem = v
			}
		}
		def := metricDef{name: prometheus.BuildFQName(namespace, subsystem, name), where: where}
		if strings.HasSuffix(sel.Sel.Name, "Vec") {
			if len(call.Args) < 2 {
				errs = append(errs, where+": a *Vec without label names")
				return true
			}
			labels, ok := call.Args[1].(*ast.CompositeLit)
			if !ok {
				errs = append(errs, where+": the label names are not a literal")
				return true
			}
			for _, l := range labels.Elts {
				v, ok := stringValue(l, consts)
				if !ok {
					errs = append(errs, where+": a label name is not a string constant")
					continue
				}
				def.labels = append(def.labels, v)
			}
		}
		defs = append(defs, def)
		return true
	})
	if len(errs) > 0 {
		return defs, &parseErrors{errs}
	}
	return defs, nil
}

type parseErrors struct{ msgs []string }

func (e *parseErrors) Error() string { return strings.Join(e.msgs, "\n") }

func isMetricConstructor(name string) bool {
	switch name {
	case "NewCounter", "NewCounterVec", "NewGauge", "NewGaugeVec", "NewHistogram", "NewHistogramVec",
		"NewSummary", "NewSummaryVec", "NewCounterFunc", "NewGaugeFunc", "NewUntypedFunc":
		return true
	}
	return false
}

// fileStringConsts returns the string constants declared in a file.
func fileStringConsts(f *ast.File) map[string]string {
	out := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						out[n.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
	}
	return out
}

func stringValue(e ast.Expr, consts map[string]string) (string, bool) {
	switch v := e.(type) {
	case *ast.BasicLit:
		if v.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(v.Value)
		return s, err == nil
	case *ast.Ident:
		s, ok := consts[v.Name]
		return s, ok
	}
	return "", false
}

// TestMetricsDocumented checks that operations.md lists every metric the webhook and the
// controller define, each in a table row that names its labels, and no metric of ours that
// does not exist.
func TestMetricsDocumented(t *testing.T) {
	doc := readDoc(t, operationsDoc)
	defs := definedMetrics(t, "webhook", "controller", "certs", "cmd", "server", "internal/version")
	byName := map[string]metricDef{}
	for _, d := range defs {
		byName[d.name] = d
	}
	for _, want := range []string{"webhook", "controller"} {
		n := 0
		for _, d := range defs {
			if strings.Contains(d.where, string(filepath.Separator)+want+string(filepath.Separator)) {
				n++
			}
		}
		if n == 0 {
			t.Fatalf("found no metric defined under %s/: the source scan broke", want)
		}
	}

	// Every row of a metrics table whose first cell is a metric name.
	rows := map[string]string{}
	for _, tab := range tables(doc.lines) {
		if len(tab.header) == 0 || tab.header[0] != "Metric" {
			continue
		}
		for _, cells := range tab.rows {
			for _, name := range codeSpans(cells[0]) {
				rows[name] = strings.Join(cells, " | ")
			}
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		d := byName[name]
		row, ok := rows[name]
		if !ok {
			t.Errorf("%s: metric %s (%s) is not in a metrics table (first column `Metric`)", operationsDoc, name, d.where)
			continue
		}
		for _, l := range d.labels {
			if !strings.Contains(row, "`"+l+"`") {
				t.Errorf("%s: the row of %s does not name its label `%s`: %s", operationsDoc, name, l, row)
			}
		}
	}
	// Every other metric in the tables must be one controller-runtime defines: the docs
	// list no metric that does not exist.
	var crSource string
	for name := range rows {
		if byName[name].name != "" {
			continue
		}
		if crSource == "" {
			crSource = moduleSource(t, "sigs.k8s.io/controller-runtime")
		}
		if !strings.Contains(crSource, strconv.Quote(name)) {
			t.Errorf("%s lists %s, which neither flink-admission nor controller-runtime defines", operationsDoc, name)
		}
	}
}

// moduleSource returns the non-test Go source of a module the program depends on, at the
// version go.mod selects, as one string.
func moduleSource(t *testing.T, module string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", module, err)
	}
	dir := strings.TrimSpace(string(out))
	var b strings.Builder
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b.Write(src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
