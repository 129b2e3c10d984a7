package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAuditUsageErrors: what audit cannot run with exits 2 and says why, before or without
// reading any cluster. (The audits of stored clusters run in e2e, on a real API server.)
func TestAuditUsageErrors(t *testing.T) {
	// An API server that is not there: nothing listens on port 1.
	unreachable := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(unreachable, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: team-a}}]
current-context: x
`), 0o600))
	cases := []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{name: "an unknown output format", args: []string{"-o", "xml"}, wantStderr: `unknown output format "xml"`},
		{name: "a namespace and all namespaces", args: []string{"-n", "a", "-A"}, wantStderr: "exclude each other"},
		{name: "a selector that does not parse", args: []string{"-l", "a in b"}, wantStderr: `--selector "a in b"`},
		{name: "an empty page", args: []string{"--chunk-size", "0"}, wantStderr: "--chunk-size 0"},
		{name: "a kubeconfig that is not there", args: []string{"--kubeconfig", filepath.Join(t.TempDir(), "none")}, wantStderr: "loading the kubeconfig"},
		{name: "an API server that does not answer", args: []string{"--kubeconfig", unreachable}, wantStderr: "audit: "},
		{name: "arguments", args: []string{"extra"}, wantStderr: "unexpected arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, "", append([]string{"audit"}, tc.args...)...)
			assert.Equal(t, exitUsage, code, "stdout: %s\nstderr: %s", stdout, stderr)
			assert.Contains(t, stderr, tc.wantStderr)
			assert.Empty(t, stdout, "no verdict is printed")
		})
	}
}
