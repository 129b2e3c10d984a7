//go:build dev

package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/internal/devenv"
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
		{name: "deny: the simulated Flink asked for without the control plane", args: []string{"dev", "--control-plane=false", "--simulate-flink"},
			want: "--simulate-flink needs --control-plane"},
		{name: "deny: a control plane without nodes", args: []string{"dev", "--nodes=0"}, want: "--nodes 0"},
		{name: "deny: a negative audit interval", args: []string{"dev", "--audit-interval=-1m"}, want: "--audit-interval -1m0s is negative"},
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
	for _, flag := range []string{"--enable-controller\n", "--control-plane\n", "--nodes int\n", "--simulate-flink\n", "--watch-namespaces value\n"} {
		assert.Contains(t, stderr.String(), "  "+flag)
	}
}

// TestCheckDevFlagsTurnsTheSimulationOffWithoutNodes: the webhook-only setup
// (--control-plane=false) needs no --simulate-flink=false beside it.
func TestCheckDevFlagsTurnsTheSimulationOffWithoutNodes(t *testing.T) {
	fs := newFlagSet("dev", io.Discard)
	o := devenv.DevOptions{Nodes: 3, SimulateFlink: true}
	fs.BoolVar(&o.ControlPlane, "control-plane", true, "")
	require.NoError(t, fs.Parse([]string{"--control-plane=false"}))
	require.NoError(t, checkDevFlags(fs, &o))
	assert.False(t, o.SimulateFlink)
}

func TestShellQuote(t *testing.T) {
	assert.Equal(t, ".dev/kubeconfig", shellQuote(".dev/kubeconfig"))
	assert.Equal(t, "'/tmp/my dir/kubeconfig'", shellQuote("/tmp/my dir/kubeconfig"))
	assert.Equal(t, `'it'\''s'`, shellQuote("it's"))
	assert.Equal(t, "''", shellQuote(""))
}
