package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runCmd(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestCheckExitCodes(t *testing.T) {
	jobMode := filepath.Join("..", "..", "check", "testdata", "job-mode.yaml")
	deployment := filepath.Join("..", "..", "check", "testdata", "deployment-mode.yaml")
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.yaml")
	require.NoError(t, os.WriteFile(broken, []byte("apiVersion: v1\n---\n: : :\n"), 0o644))
	stdinDoc, err := os.ReadFile(deployment)
	require.NoError(t, err)

	cases := []struct {
		name       string
		stdin      string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "allowed create exits 0", args: []string{"check", "-f", jobMode}, wantCode: 0, wantStdout: "ALLOWED streaming/wordcount (create"},
		{name: "denied update exits 1", args: []string{"check", "-f", deployment, "--old", jobMode}, wantCode: 1, wantStdout: "DENIED streaming/wordcount (update"},
		{name: "stdin is read for -", stdin: string(stdinDoc), args: []string{"check", "-f", "-"}, wantCode: 0, wantStdout: "ALLOWED"},
		{name: "positional paths are accepted like -f", args: []string{"check", jobMode}, wantCode: 0, wantStdout: "ALLOWED"},
		{name: "no manifests is a usage error", args: []string{"check"}, wantCode: 2, wantStderr: "no manifests given"},
		{name: "unknown output format is a usage error", args: []string{"check", "-f", jobMode, "-o", "xml"}, wantCode: 2, wantStderr: "unknown output format"},
		{name: "a parse error exits 2 naming file and document", args: []string{"check", "-f", broken}, wantCode: 2, wantStderr: "broken.yaml: document 1"},
		{name: "a missing file exits 2", args: []string{"check", "-f", filepath.Join(dir, "nope.yaml")}, wantCode: 2, wantStderr: "nope.yaml"},
		{name: "stdin twice is a usage error", args: []string{"check", "-f", "-", "--old", "-"}, wantCode: 2, wantStderr: "only once"},
		{name: "an unknown command exits 2", args: []string{"frobnicate"}, wantCode: 2, wantStderr: "unknown command"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, tc.stdin, tc.args...)
			assert.Equal(t, tc.wantCode, code, "stdout: %s\nstderr: %s", stdout, stderr)
			assert.Contains(t, stdout, tc.wantStdout)
			assert.Contains(t, stderr, tc.wantStderr)
		})
	}
}

func TestCheckJSONOutputOnDeniedUpdate(t *testing.T) {
	code, stdout, stderr := runCmd(t, "", "check", "-o", "json",
		"-f", filepath.Join("..", "..", "check", "testdata", "deployment-mode.yaml"),
		"--old", filepath.Join("..", "..", "check", "testdata", "job-mode.yaml"))
	require.Equal(t, 1, code, stderr)
	var out []struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Allowed   bool   `json:"allowed"`
		Errors    []struct {
			Field, Type, Message string
		} `json:"errors"`
		Warnings []string          `json:"warnings"`
		Patch    []json.RawMessage `json:"patch"`
		Object   map[string]any    `json:"object"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &out), stdout)
	require.Len(t, out, 1)
	assert.Equal(t, "wordcount", out[0].Name)
	assert.False(t, out[0].Allowed)
	require.NotEmpty(t, out[0].Errors)
	assert.Equal(t, "spec.jobManager.deploymentType", out[0].Errors[0].Field)
	assert.Equal(t, "FieldValueForbidden", out[0].Errors[0].Type)
	assert.NotEmpty(t, out[0].Patch, "the mutations of a Deployment-mode cluster are shown")
	assert.NotNil(t, out[0].Object)
}
