package docs

import (
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/flink-admission/flink-admission/server"
)

// TestFlagTables compares the flag tables of docs/configuration.md with the flags the
// program defines: the same flags, with the same defaults, for serve, dev, check and audit.
//
// serve's flags come from server.Options.AddFlags, the function `flink-admission serve`
// registers them with, so the defaults are exact; dev, check and audit build their flag sets inside
// package main, so theirs are read from `-h`. serve's `-h` is compared with AddFlags too, so
// the binary cannot drift from it.
func TestFlagTables(t *testing.T) {
	doc := readDoc(t, "docs/configuration.md")

	// --namespace defaults to $POD_NAMESPACE; with the variable set to its own name, the
	// default reads as the docs write it.
	t.Setenv("POD_NAMESPACE", "$POD_NAMESPACE")
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	var o server.Options
	o.AddFlags(fs)
	serveFlags := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) { serveFlags[f.Name] = f.DefValue })

	serveHelp := helpFlags(t, "serve")
	serveHelp["namespace"] = serveFlags["namespace"] // -h runs without POD_NAMESPACE
	if diff := cmp.Diff(serveFlags, serveHelp); diff != "" {
		t.Errorf("`flink-admission serve -h` differs from server.Options.AddFlags (-AddFlags +help):\n%s", diff)
	}

	for _, tc := range []struct {
		command string
		flags   map[string]string
	}{
		{"serve", serveFlags},
		{"dev", helpFlags(t, "dev")},
		{"check", helpFlags(t, "check")},
		{"audit", helpFlags(t, "audit")},
	} {
		t.Run(tc.command, func(t *testing.T) {
			documented := documentedFlags(t, doc, "flink-admission "+tc.command)
			if diff := cmp.Diff(tc.flags, documented); diff != "" {
				t.Errorf("docs/configuration.md, flink-admission %s: flags and defaults differ from the program (-program +docs):\n%s",
					tc.command, diff)
			}
		})
	}
}

// documentedFlags reads the flag table of the section whose heading names command: every
// flag of the first column (`--name` or `-n`, several per row for aliases) with the default
// of the second column (a code span; `""` for the empty string).
func documentedFlags(t *testing.T, doc *mdFile, command string) map[string]string {
	t.Helper()
	secs := doc.sectionsUnder("`" + command + "`")
	if len(secs) == 0 {
		t.Fatalf("%s: no section titled `%s`", doc.path, command)
	}
	var text []string
	for _, s := range secs {
		text = append(text, s.text...)
	}
	tabs := tables(text)
	if len(tabs) == 0 {
		t.Fatalf("%s: the section of `%s` has no flag table", doc.path, command)
	}
	flags := map[string]string{}
	for _, tab := range tabs {
		if len(tab.header) < 2 || tab.header[0] != "Flag" || tab.header[1] != "Default" {
			continue
		}
		for _, row := range tab.rows {
			names := codeSpans(row[0])
			defaults := codeSpans(row[1])
			if len(names) == 0 || len(defaults) != 1 {
				t.Errorf("%s: row %q: want `--flag` cells and one `default`", doc.path, strings.Join(row, " | "))
				continue
			}
			def := defaults[0]
			if def == `""` {
				def = ""
			}
			for _, n := range names {
				if !strings.HasPrefix(n, "-") {
					t.Errorf("%s: row %q: %q is not a flag", doc.path, strings.Join(row, " | "), n)
					continue
				}
				name := strings.TrimLeft(n, "-")
				if _, dup := flags[name]; dup {
					t.Errorf("%s: flag %s is documented twice for %s", doc.path, n, command)
				}
				flags[name] = def
			}
		}
	}
	if len(flags) == 0 {
		t.Fatalf("%s: no table with the columns Flag | Default for `%s`", doc.path, command)
	}
	return flags
}

// helpFlags runs `flink-admission <command> -h` and returns its flags with their defaults, as
// the flag package prints them.
func helpFlags(t *testing.T, command string) map[string]string {
	t.Helper()
	cmd := exec.Command(binary, command, "-h")
	cmd.Dir = repoRoot
	cmd.Env = commandEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flink-admission %s -h: %v\n%s", command, err, out)
	}
	flags, err := parseHelp(string(out))
	if err != nil {
		t.Fatalf("flink-admission %s -h: %v\n%s", command, err, out)
	}
	if len(flags) == 0 {
		t.Fatalf("flink-admission %s -h lists no flags:\n%s", command, out)
	}
	return flags
}

var (
	// helpFlagRE matches the first line of a setting in the help (cmd/flink-admission's
	// printFlags): "  -f, --filename type", names with one dash (one letter) or two.
	helpFlagRE = regexp.MustCompile(`^  (-{1,2}[^\s=,-][^\s=,]*(?:, -{1,2}[^\s=,-][^\s=,]*)*)(?: (\S+))?$`)
	// helpDefaultRE matches the default at the end of a flag's usage.
	helpDefaultRE = regexp.MustCompile(`\(default ("(?:[^"\\]|\\.)*"|[^()]*)\)$`)
)

// zeroDefaults are the defaults the help leaves out, by the type word it prints (none for a
// boolean flag; "value" for a flag.Value of its own, here a repeatable list).
var zeroDefaults = map[string]string{"": "false", "string": "", "int": "0", "uint": "0", "int64": "0",
	"uint64": "0", "float": "0", "duration": "0s", "value": ""}

// parseHelp reads the help's flag list: names, type word and usage (whose last words may be
// the default). Every name of a setting gets its default.
func parseHelp(out string) (map[string]string, error) {
	flags := map[string]string{}
	var names []string
	var typ string
	var usage []string
	flush := func() error {
		if len(names) == 0 {
			return nil
		}
		text := strings.Join(usage, " ")
		var def string
		// The help quotes the default of a string flag, and only that one: an unquoted
		// "(default ...)" at the end of a string flag's usage is prose.
		if m := helpDefaultRE.FindStringSubmatch(text); m != nil && (typ == "string") == strings.HasPrefix(m[1], `"`) {
			def = m[1]
			if strings.HasPrefix(def, `"`) {
				unquoted, err := strconv.Unquote(def)
				if err != nil {
					return err
				}
				def = unquoted
			}
		} else {
			zero, ok := zeroDefaults[typ]
			if !ok {
				return &helpError{name: names[0], typ: typ}
			}
			def = zero
		}
		for _, n := range names {
			flags[n] = def
		}
		names, typ, usage = nil, "", nil
		return nil
	}
	for _, line := range strings.Split(out, "\n") {
		if m := helpFlagRE.FindStringSubmatch(line); m != nil {
			if err := flush(); err != nil {
				return nil, err
			}
			for _, n := range strings.Split(m[1], ", ") {
				if len(strings.TrimLeft(n, "-")) == 1 != (n[1] != '-') {
					return nil, fmt.Errorf("flag %s: one dash for one letter, two for a name", n)
				}
				names = append(names, strings.TrimLeft(n, "-"))
			}
			typ = m[2]
			continue
		}
		if len(names) > 0 && strings.HasPrefix(line, "    \t") {
			usage = append(usage, strings.TrimSpace(line))
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return flags, nil
}

type helpError struct{ name, typ string }

func (e *helpError) Error() string {
	return "flag " + e.name + ": unknown type " + strconv.Quote(e.typ) + " without a printed default"
}

func TestParseHelp(t *testing.T) {
	got, err := parseHelp("usage: x\n  -a, --all string\n    \tan a (default \"q\\\"x\")\n  --path string\n    \tprose (default $HOME)\n  -b\n    \tbool\n  --cc duration\n    \tc\n    \tmore (default 5m0s)\n  --dd\n    \td (default true)\n  -e, --each value\n    \trepeatable\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": `q"x`, "all": `q"x`, "b": "false", "cc": "5m0s", "dd": "true", "e": "", "each": "", "path": ""}
	keys := make([]string, 0, len(got))
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("parseHelp (-want +got):\n%s\nkeys %v", diff, keys)
	}
}
