package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flink-admission/flink-admission/internal/version"
)

func TestVersionCommand(t *testing.T) {
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"version"}, strings.NewReader(""), &stdout, &stderr)
	assert.Equal(t, 0, code, stderr.String())
	assert.Equal(t, version.Get().String()+"\n", stdout.String())

	stdout.Reset()
	assert.Equal(t, exitUsage, run(context.Background(), []string{"version", "extra"}, strings.NewReader(""), &stdout, &stderr))
}

// TestDevCommandInThisBuild: without -tags dev the binary has no dev command, and says how
// to get one; with it, dev parses its flags.
func TestDevCommandInThisBuild(t *testing.T) {
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"dev", "-h"}, strings.NewReader(""), &stdout, &stderr)
	if devBuilt {
		assert.Equal(t, 0, code)
		return
	}
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr.String(), "go build -tags dev ./cmd/flink-admission")
}
