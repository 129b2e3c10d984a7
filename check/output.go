package check

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"
)

// Formats are the output formats of Write.
var Formats = []string{"text", "json", "yaml", "sarif", "junit"}

// report is what a command reports on: check on manifests, audit on stored clusters.
type report struct {
	// tool names the command in JUnit's test suites.
	tool string
	// stored says the results are about clusters stored in the API server.
	stored bool
}

var (
	manifestReport = report{tool: "flink-admission check"}
	storedReport   = report{tool: "flink-admission audit", stored: true}
)

// Write prints results in format "text", "json", "yaml", "sarif" (SARIF 2.1.0, for code
// scanning) or "junit" (JUnit XML, for test reports). JSON and YAML print one array, one
// element per object; skipped documents are noted only in text output (on w) — the
// machine-readable formats stay a plain array.
func Write(w io.Writer, format string, results []Result, skipped []Skipped) error {
	return manifestReport.write(w, format, results, skipped)
}

// WriteStored prints the verdicts on clusters stored in the API server (flink-admission
// audit) in the formats of Write: each located by its namespace and name instead of a file,
// each refusal saying whether ratcheting keeps the cluster editable (FieldError.Ratcheted).
func WriteStored(w io.Writer, format string, results []Result) error {
	return storedReport.write(w, format, results, nil)
}

func (rep report) write(w io.Writer, format string, results []Result, skipped []Skipped) error {
	switch format {
	case "sarif":
		return writeSARIF(w, results)
	case "junit":
		return writeJUnit(w, rep, results, skipped)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	case "yaml":
		out, err := yaml.Marshal(results)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	case "text", "":
		return writeText(w, rep, results, skipped)
	default:
		return fmt.Errorf("unknown output format %q: use one of %s", format, strings.Join(Formats, ", "))
	}
}

// ratchetNote says what a refusal of a stored cluster means for its next edit; "" for a
// manifest's.
func ratchetNote(e FieldError) string {
	switch {
	case e.Ratcheted == nil:
		return ""
	case *e.Ratcheted:
		return " (ratcheted: an edit that keeps it is admitted with a warning)"
	default:
		return " (not ratcheted: every edit of the spec is refused until it is fixed)"
	}
}

func writeText(w io.Writer, rep report, results []Result, skipped []Skipped) error {
	var b strings.Builder
	denied := 0
	for _, r := range results {
		verdict := "ALLOWED"
		if !r.Allowed {
			verdict = "DENIED"
			denied++
		}
		if r.Source == "" {
			fmt.Fprintf(&b, "%s %s/%s (stored, judged as a %s)\n", verdict, r.Namespace, r.Name, strings.ToLower(r.Operation))
		} else {
			fmt.Fprintf(&b, "%s %s/%s (%s, %s document %d)\n", verdict, r.Namespace, r.Name,
				strings.ToLower(r.Operation), r.Source, r.Index)
		}
		for _, e := range r.Errors {
			if e.Line > 0 {
				// file:line:column: the form editors and CI log matchers jump to.
				fmt.Fprintf(&b, "  error:    %s:%d:%d: %s: %s\n", r.Source, e.Line, e.Column, e.Field, e.Message)
				continue
			}
			fmt.Fprintf(&b, "  error:    %s: %s%s\n", e.Field, e.Message, ratchetNote(e))
		}
		for _, wn := range r.Warnings {
			fmt.Fprintf(&b, "  warning:  %s\n", wn)
		}
		for _, op := range r.Patch {
			if op.Operation == "remove" {
				fmt.Fprintf(&b, "  mutation: remove %s\n", op.Path)
				continue
			}
			v, err := json.Marshal(op.Value)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "  mutation: %s %s = %s\n", op.Operation, op.Path, v)
		}
	}
	for _, s := range skipped {
		fmt.Fprintf(&b, "skipped %s document %d: %s %s is not a FlinkCluster\n", s.Source, s.Index, s.APIVersion, s.Kind)
	}
	if rep.stored {
		fmt.Fprintf(&b, "%d audited: %d allowed, %d would be denied\n", len(results), len(results)-denied, denied)
	} else {
		fmt.Fprintf(&b, "%d checked: %d allowed, %d denied, %d skipped\n", len(results), len(results)-denied, denied, len(skipped))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// AllAllowed reports whether every result is allowed.
func AllAllowed(results []Result) bool {
	for _, r := range results {
		if !r.Allowed {
			return false
		}
	}
	return true
}
