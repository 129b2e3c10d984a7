package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// newFlagSet is the flag set of a subcommand: pflag's, so that flags are written, listed and
// named in errors as the Kubernetes tools write them (--name, -n for a letter), and parse
// errors are returned for the command to report.
func newFlagSet(name string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses the flags of a subcommand that takes no arguments. done says the
// command must stop with code: 0 after -h or --help, a usage error otherwise.
func parseFlags(fs *pflag.FlagSet, args []string, stderr io.Writer) (code int, done bool) {
	if code, done := parseArgs(fs, args, stderr); done {
		return code, done
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q\n", fs.Name(), fs.Args())
		return exitUsage, true
	}
	return 0, false
}

// parseArgs parses a subcommand's flags; a parse error is printed with the way to the
// command's help.
func parseArgs(fs *pflag.FlagSet, args []string, stderr io.Writer) (code int, done bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, pflag.ErrHelp):
		return 0, true
	default:
		fmt.Fprintf(stderr, "%s: %v\nRun 'flink-admission %s --help' for its flags.\n", fs.Name(), err, fs.Name())
		return exitUsage, true
	}
}

// printFlags writes a command's flags as its users type them, sorted by name: "--name",
// with its one-letter shorthand first ("-f, --filename"), its type and its usage on the next
// line, and the default unless it is the type's zero value.
func printFlags(w io.Writer, fs *pflag.FlagSet) {
	var flags []*pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			flags = append(flags, f)
		}
	})
	sort.SliceStable(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	for _, f := range flags {
		line := "  --" + f.Name
		if f.Shorthand != "" {
			line = "  -" + f.Shorthand + ", --" + f.Name
		}
		typ, usage := pflag.UnquoteUsage(f)
		if typ != "" {
			line += " " + typ
		}
		fmt.Fprintln(w, line)
		usage = strings.ReplaceAll(usage, "\n", "\n    \t")
		if !isZeroDefault(f) {
			if typ == "string" {
				usage += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				usage += fmt.Sprintf(" (default %v)", f.DefValue)
			}
		}
		fmt.Fprintf(w, "    \t%s\n", usage)
	}
}

// zeroDefaults are the zero values of the flag types the commands use, as a flag's DefValue
// writes them; the help leaves such a default out.
var zeroDefaults = map[string]string{
	"bool": "false", "string": "", "int": "0", "int64": "0", "uint": "0", "uint64": "0",
	"float64": "0", "duration": "0s", "func": "", "stringArray": "[]", "stringSlice": "[]",
}

// isZeroDefault reports whether a flag's default is its type's zero value (or empty, for a
// type of its own).
func isZeroDefault(f *pflag.Flag) bool {
	zero, ok := zeroDefaults[f.Value.Type()]
	if !ok {
		return f.DefValue == ""
	}
	return f.DefValue == zero
}
