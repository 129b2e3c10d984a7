package main

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
)

// printFlags writes a command's flags as its users type them: "--name" (a one-letter name
// "-n"), with the names of one setting on one line ("-f, --filename"), its type and its
// usage, and the default unless it is the type's zero value. flag.PrintDefaults would print
// every name with one dash and each alias as a flag of its own.
//
// Names are aliases when they were bound to the same variable: their flag.Values are then the
// same pointer. The usage shown is the shortest name's (the aliases say "same as -f").
func printFlags(w io.Writer, fs *flag.FlagSet) {
	type setting struct {
		flags []*flag.Flag
	}
	var settings []*setting
	byValue := map[any]*setting{}
	fs.VisitAll(func(f *flag.Flag) {
		key := valueKey(f.Value)
		if s, ok := byValue[key]; ok && key != nil {
			s.flags = append(s.flags, f)
			return
		}
		s := &setting{flags: []*flag.Flag{f}}
		settings = append(settings, s)
		if key != nil {
			byValue[key] = s
		}
	})
	for _, s := range settings {
		sort.SliceStable(s.flags, func(i, j int) bool { return len(s.flags[i].Name) < len(s.flags[j].Name) })
	}
	sort.SliceStable(settings, func(i, j int) bool {
		return strings.TrimLeft(longest(settings[i].flags), "-") < strings.TrimLeft(longest(settings[j].flags), "-")
	})
	for _, s := range settings {
		names := make([]string, len(s.flags))
		for i, f := range s.flags {
			names[i] = dashed(f.Name)
		}
		f := s.flags[0]
		typ, usage := flag.UnquoteUsage(f)
		line := "  " + strings.Join(names, ", ")
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

// dashed is how a flag is written: one dash for a one-letter name, two otherwise.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// longest returns the longest name of a setting, which orders the help.
func longest(flags []*flag.Flag) string { return flags[len(flags)-1].Name }

// valueKey identifies the variable behind a flag.Value: the pointer it is, or nil for a
// value that is not a pointer (never an alias of another).
func valueKey(v flag.Value) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer {
		return nil
	}
	return [2]any{rv.Type(), rv.Pointer()}
}

// isZeroDefault reports whether a flag's default is its type's zero value, which the help
// leaves out, as flag.PrintDefaults does.
func isZeroDefault(f *flag.Flag) bool {
	t := reflect.TypeOf(f.Value)
	var z reflect.Value
	if t.Kind() == reflect.Pointer {
		z = reflect.New(t.Elem())
	} else {
		z = reflect.Zero(t)
	}
	zv, ok := z.Interface().(flag.Value)
	if !ok {
		return f.DefValue == ""
	}
	return f.DefValue == zv.String()
}
