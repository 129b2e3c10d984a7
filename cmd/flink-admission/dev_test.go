//go:build dev

package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestDevUsageErrors: bad flags stop dev before anything starts, with exit code 2 and a
// message that names the flag.
func TestDevUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{name: "deny: dev with an unknown log level", args: []string{"dev", "--log-level=chatty"}, want: `--log-level "chatty"`},
		{name: "deny: dev with arguments", args: []string{"dev", "extra"}, want: `unexpected arguments ["extra"]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := run(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, stderr.String(), tt.want)
		})
	}
}

func TestDevHelp(t *testing.T) {
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"dev", "-h"}, strings.NewReader(""), &stdout, &stderr)
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr.String(), "usage: flink-admission dev")
	assert.Contains(t, stderr.String(), "-enable-controller")
}

func TestShellQuote(t *testing.T) {
	assert.Equal(t, ".dev/kubeconfig", shellQuote(".dev/kubeconfig"))
	assert.Equal(t, "'/tmp/my dir/kubeconfig'", shellQuote("/tmp/my dir/kubeconfig"))
	assert.Equal(t, `'it'\''s'`, shellQuote("it's"))
	assert.Equal(t, "''", shellQuote(""))
}
