package docs

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller/state"
)

const stateMachineDoc = "docs/troubleshooting.md"

// TestJobStateMachineTable: the job state machine in the troubleshooting guide is the
// controller's table (state.Transitions), row for row and in its order — the table the
// controller checks every transition against and the simulation holds it to.
func TestJobStateMachineTable(t *testing.T) {
	secs := readDoc(t, stateMachineDoc).sectionsUnder("The job state machine")
	require.NotEmpty(t, secs, "%s has a section \"The job state machine\"", stateMachineDoc)
	var lines []string
	for _, s := range secs {
		lines = append(lines, s.text...)
	}
	var got table
	for _, tb := range tables(lines) {
		if len(tb.header) == 4 && tb.header[0] == "From" {
			got = tb
		}
	}
	require.Equal(t, []string{"From", "Event", "To", "Step"}, got.header, "the section's table")
	want := stateMachineRows()
	assert.Equal(t, want, got.rows, "the table in %s is state.Transitions; its rows, as they should read:\n%s", stateMachineDoc, renderRows(want))
}

func stateMachineRows() [][]string {
	var rows [][]string
	for _, tr := range state.Transitions {
		rows = append(rows, []string{strings.Join(tr.From, ", "), "`" + string(tr.Event) + "`: " + tr.Means, tr.To, "`" + string(tr.Step) + "`"})
	}
	return rows
}

func renderRows(rows [][]string) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(r, " | "))
	}
	return b.String()
}
