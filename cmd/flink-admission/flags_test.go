package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFlagErrorsAreDoubleDashed: every command names a flag as it is written, --name, in its
// errors, and says where its help is.
func TestFlagErrorsAreDoubleDashed(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "a bad value of a controller flag", args: []string{"serve", "--watch-namespaces=Bad_NS"},
			want: []string{`serve: invalid argument "Bad_NS" for "--watch-namespaces" flag`, "Run 'flink-admission serve --help' for its flags."}},
		{name: "a bad value of a serve flag", args: []string{"serve", "--webhook-port=x"},
			want: []string{`invalid argument "x" for "--webhook-port" flag`}},
		{name: "an unknown flag", args: []string{"serve", "--port=1"}, want: []string{"serve: unknown flag: --port"}},
		{name: "a name with one dash is not a flag name", args: []string{"serve", "-watch-namespaces=a"},
			want: []string{"serve: unknown shorthand flag: 'w' in -watch-namespaces=a"}},
		{name: "check: a bad value of a shorthand's flag", args: []string{"check", "-f"},
			want: []string{`check: flag needs an argument: 'f' in -f`}},
		{name: "check: an unknown flag", args: []string{"check", "--olds", "x"}, want: []string{"check: unknown flag: --olds"}},
		{name: "audit: an unknown flag", args: []string{"audit", "--all"}, want: []string{"audit: unknown flag: --all"}},
		{name: "version takes no flags", args: []string{"version", "--short"}, want: []string{"version: unknown flag: --short"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, "", tc.args...)
			assert.Equal(t, exitUsage, code)
			for _, w := range tc.want {
				assert.Contains(t, stderr, w)
			}
			assert.NotContains(t, stderr, "flag provided but not defined", "the standard library's message")
		})
	}
}

// TestHelpFlags: -h and --help print a command's help on standard error and exit 0.
func TestHelpFlags(t *testing.T) {
	for _, cmd := range []string{"serve", "check", "audit", "version"} {
		for _, h := range []string{"-h", "--help"} {
			code, _, stderr := runCmd(t, "", cmd, h)
			assert.Equal(t, 0, code, "%s %s", cmd, h)
			assert.Contains(t, stderr, "usage: flink-admission "+cmd, "%s %s", cmd, h)
		}
	}
	_, _, stderr := runCmd(t, "", "check", "--help")
	assert.Contains(t, stderr, "  -f, --filename value\n")
	assert.Contains(t, stderr, "  -n, --namespace string\n")
	_, _, stderr = runCmd(t, "", "serve", "--help")
	assert.Contains(t, stderr, "  --watch-namespaces value\n", "the controller's flags, double-dashed")
}
