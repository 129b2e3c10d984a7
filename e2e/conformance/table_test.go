//go:build conformance

package conformance_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// The results a cell records.
const (
	Pass = "Pass"
	Fail = "Fail"
	NA   = "N/A"
)

// row is one cell of the table, as .conformance/latest.json holds it.
type row struct {
	Scenario       string `json:"scenario"`
	Name           string `json:"name"`
	FlinkVersion   string `json:"flinkVersion"`
	DeploymentType string `json:"deploymentType"`
	Result         string `json:"result"`
	Detail         string `json:"detail,omitempty"`
	Seconds        int    `json:"seconds,omitempty"`
}

// results collects the cells of a run.
type results struct {
	mu   sync.Mutex
	rows []row
}

func (r *results) add(x row) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, x)
}

func (r *results) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.rows)
}

// sorted are the rows by scenario (numerically, then its letter), version, deployment type.
func (r *results) sorted() []row {
	r.mu.Lock()
	rows := slices.Clone(r.rows)
	r.mu.Unlock()
	slices.SortFunc(rows, func(a, b row) int {
		if c := compareScenario(a.Scenario, b.Scenario); c != 0 {
			return c
		}
		if c := strings.Compare(b.DeploymentType, a.DeploymentType); c != 0 {
			return c
		}
		return strings.Compare(a.FlinkVersion, b.FlinkVersion)
	})
	return rows
}

func compareScenario(a, b string) int {
	var na, nb int
	var ra, rb string
	fmt.Sscanf(a, "%d%s", &na, &ra)
	fmt.Sscanf(b, "%d%s", &nb, &rb)
	if na != nb {
		return na - nb
	}
	return strings.Compare(a, b)
}

// print writes the table in the pull request's form: a row per scenario, a column per
// deployment type and Flink version, then the details of every cell that is not Pass.
func (r *results) print(w io.Writer) {
	rows := r.sorted()
	type col struct{ mode, version string }
	var cols []col
	cells := map[string]map[col]row{}
	var order []string
	names := map[string]string{}
	for _, x := range rows {
		c := col{x.DeploymentType, x.FlinkVersion}
		if !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
		if cells[x.Scenario] == nil {
			cells[x.Scenario] = map[col]row{}
			order = append(order, x.Scenario)
		}
		cells[x.Scenario][c] = x
		names[x.Scenario] = x.Name
	}
	slices.SortFunc(cols, func(a, b col) int {
		if c := strings.Compare(b.mode, a.mode); c != 0 {
			return c
		}
		return strings.Compare(a.version, b.version)
	})
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "#\tScenario")
	for _, c := range cols {
		fmt.Fprintf(tw, "\t%s - Flink %s", c.mode, c.version)
	}
	fmt.Fprintln(tw)
	for _, s := range order {
		fmt.Fprintf(tw, "%s\t%s", s, names[s])
		for _, c := range cols {
			x, ok := cells[s][c]
			switch {
			case !ok:
				fmt.Fprint(tw, "\t—")
			default:
				fmt.Fprintf(tw, "\t%s", x.Result)
			}
		}
		fmt.Fprintln(tw)
	}
	_ = tw.Flush()
	for _, x := range rows {
		if x.Result != Pass {
			fmt.Fprintf(w, "%s %s (%s, Flink %s): %s: %s\n", x.Scenario, x.Name, x.DeploymentType, x.FlinkVersion, x.Result, x.Detail)
		}
	}
}

// write stores the rows as JSON at path, with the run's date.
func (r *results) write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	host, _ := os.Hostname()
	b, err := json.MarshalIndent(struct {
		Date    string `json:"date"`
		Machine string `json:"machine"`
		Rows    []row  `json:"rows"`
	}{time.Now().UTC().Format(time.RFC3339), host, r.sorted()}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
