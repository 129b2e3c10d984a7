package docs

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The console block convention of the docs:
//
//	```console
//	$ flink-admission check -f docs/examples/pr --old docs/examples/main
//	<its output, stdout and stderr as a terminal shows them>
//	$ echo $?
//	1
//	```
//
// A line starting with "$ " is a command; the lines up to the next command are its output.
// `$ echo $?` shows the exit status of the command before it. Every block with a
// `flink-admission check` command is run, command by command, with bash in the repository
// root and the freshly built binary first in PATH; each such command must be followed by
// `$ echo $?`, because CI pipelines act on the exit status. Blocks without one are left alone
// (kubectl and make transcripts are checked by the reference tests only).

const (
	promptPrefix = "$ "
	echoStatus   = "echo $?"
)

// consoleCommand is one command of a console block with the output the docs show for it.
type consoleCommand struct {
	line    int
	command string
	output  []string
}

func parseConsole(f fence) []consoleCommand {
	var cmds []consoleCommand
	for i, line := range f.body {
		if strings.HasPrefix(line, promptPrefix) {
			cmds = append(cmds, consoleCommand{line: f.line + 1 + i, command: strings.TrimSpace(strings.TrimPrefix(line, promptPrefix))})
			continue
		}
		if len(cmds) > 0 {
			cmds[len(cmds)-1].output = append(cmds[len(cmds)-1].output, line)
		}
	}
	return cmds
}

// isFlinkAdmission reports whether a command runs the flink-admission binary.
func isFlinkAdmission(command string) bool {
	return command == "flink-admission" || strings.HasPrefix(command, "flink-admission ")
}

// update rewrites the outputs the docs show with what the commands print:
// `go test ./docs/ -run TestConsoleBlocks -update`, then review the diff.
var update = flag.Bool("update", false, "rewrite the outputs of the docs' console blocks with what the commands print")

func TestConsoleBlocks(t *testing.T) {
	ran := 0
	for _, doc := range readDocs(t) {
		var edits []outputEdit
		for _, block := range doc.blocks {
			if block.lang() != "console" {
				continue
			}
			cmds := parseConsole(block)
			runnable := false
			for _, c := range cmds {
				if isFlinkAdmission(c.command) {
					runnable = true
				}
			}
			if !runnable {
				continue
			}
			name := fmt.Sprintf("%s:%d", doc.path, block.line)
			t.Run(name, func(t *testing.T) {
				edits = append(edits, runConsoleBlock(t, cmds)...)
			})
			ran++
		}
		if *update && len(edits) > 0 {
			rewriteOutputs(t, doc, edits)
		}
	}
	if ran == 0 {
		t.Fatal("no console block runs flink-admission: the docs lost their examples, or the parser broke")
	}
}

// outputEdit replaces the output lines the docs show for one command.
type outputEdit struct {
	// first is the 0-based index of the first output line; count how many there are.
	first, count int
	lines        []string
}

// rewriteOutputs writes doc back with the edits applied (-update).
func rewriteOutputs(t *testing.T, doc *mdFile, edits []outputEdit) {
	t.Helper()
	lines := append([]string(nil), doc.lines...)
	for i := len(edits) - 1; i >= 0; i-- {
		e := edits[i]
		lines = append(lines[:e.first], append(append([]string(nil), e.lines...), lines[e.first+e.count:]...)...)
	}
	path := filepath.Join(repoRoot, filepath.FromSlash(doc.path))
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runConsoleBlock runs the commands of a block, compares their outputs with the docs, and
// returns the edits that would make the docs match.
func runConsoleBlock(t *testing.T, cmds []consoleCommand) []outputEdit {
	var edits []outputEdit
	edit := func(c consoleCommand, out string) {
		edits = append(edits, outputEdit{first: c.line, count: len(c.output), lines: normalizeLines(strings.Split(out, "\n"))})
	}
	lastStatus := -1
	for i, c := range cmds {
		switch {
		case c.command == echoStatus:
			if lastStatus < 0 {
				t.Errorf("line %d: `$ echo $?` without a command before it", c.line)
				continue
			}
			compareOutput(t, c, strconv.Itoa(lastStatus)+"\n")
			edit(c, strconv.Itoa(lastStatus))
			lastStatus = -1
		case isFlinkAdmission(c.command):
			sub := strings.Fields(c.command)
			if len(sub) < 2 || sub[1] != "check" {
				t.Errorf("line %d: %q: only `flink-admission check` can be run by the docs tests; show serve and dev without a console block", c.line, c.command)
				continue
			}
			if i+1 >= len(cmds) || cmds[i+1].command != echoStatus {
				t.Errorf("line %d: %q must be followed by `$ echo $?` with its exit status", c.line, c.command)
			}
			out, status := runShell(t, c.command)
			compareOutput(t, c, out)
			edit(c, out)
			lastStatus = status
		default:
			t.Errorf("line %d: %q: a console block that runs flink-admission may only hold flink-admission check and `echo $?`", c.line, c.command)
		}
	}
	return edits
}

// compareOutput compares the output of a command with the lines the docs show, ignoring
// trailing white space on each line and trailing empty lines.
func compareOutput(t *testing.T, c consoleCommand, got string) {
	t.Helper()
	if *update {
		return
	}
	want := normalizeLines(c.output)
	have := normalizeLines(strings.Split(got, "\n"))
	if strings.Join(want, "\n") == strings.Join(have, "\n") {
		return
	}
	t.Errorf("line %d: `%s`: its output differs from the docs from output line %d on (-docs +program):\n%s",
		c.line, c.command, firstDifference(want, have)+1, cmp.Diff(want, have))
}

func normalizeLines(lines []string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, strings.TrimRight(l, " \t\r"))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestParseConsole(t *testing.T) {
	cmds := parseConsole(fence{line: 10, body: []string{"$ flink-admission check -f x", "ALLOWED", "", "$ echo $?", "0"}})
	if len(cmds) != 2 || cmds[0].line != 11 || cmds[0].command != "flink-admission check -f x" ||
		len(cmds[0].output) != 2 || cmds[1].command != echoStatus || cmds[1].output[0] != "0" {
		t.Fatalf("parseConsole: %+v", cmds)
	}
	if normalizeLines([]string{"a  ", "", ""})[0] != "a" || len(normalizeLines([]string{"a", "", ""})) != 1 {
		t.Fatal("normalizeLines keeps trailing space or empty lines")
	}
}
