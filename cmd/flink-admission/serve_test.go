package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestServeUsageErrors: bad flags stop serve before anything starts, with exit code 2 and a
// message that names the flag.
func TestServeUsageErrors(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "deny: serve with an unknown cert mode", args: []string{"serve", "--cert-mode=vault", "--namespace=ns"}, want: `--cert-mode "vault" is not supported`},
		{name: "deny: serve with a body budget below the largest request", args: []string{"serve", "--namespace=ns", "--max-body-bytes-in-flight=1Mi"},
			want: "--max-body-bytes-in-flight 1Mi is below the largest request body (7Mi)"},
		{name: "deny: serve with a body budget of a fraction of a byte", args: []string{"serve", "--namespace=ns", "--max-body-bytes-in-flight=1.5"},
			want: "1.5 is not a whole number of bytes"},
		{name: "deny: serve with leader election but no namespace", args: []string{"serve"}, want: "leader election needs --namespace"},
		{name: "deny: serve self-signed without a namespace", args: []string{"serve", "--cert-mode=self-signed", "--enable-controller=false"}, want: "self-signed mode needs --namespace"},
		{name: "deny: serve with an unknown flag", args: []string{"serve", "--port=1"}, want: "unknown flag: --port"},
		{name: "deny: serve with arguments", args: []string{"serve", "--namespace=ns", "extra"}, want: `unexpected arguments ["extra"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := run(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, stderr.String(), tt.want)
		})
	}
}

func TestServeHelp(t *testing.T) {
	for _, cmd := range []string{"serve"} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), []string{cmd, "-h"}, strings.NewReader(""), &stdout, &stderr)
		assert.Equal(t, 0, code, cmd)
		assert.Contains(t, stderr.String(), "usage: flink-admission "+cmd, cmd)
		assert.Contains(t, stderr.String(), "  --enable-controller\n", cmd)
	}
}
