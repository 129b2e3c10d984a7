package main

import (
	"bytes"
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestPrintFlags: two dashes for names, one for letters, the aliases of one variable on one
// line with the shortest name's usage, defaults only when not the zero value.
func TestPrintFlags(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var files repeatable
	fs.Var(&files, "f", "a `file`; repeatable")
	fs.Var(&files, "filename", "same as -f")
	out := fs.String("o", "text", "output format")
	fs.StringVar(out, "output", "text", "same as -o")
	fs.Bool("dry", false, "change nothing")
	fs.Bool("secure", true, "use TLS")
	fs.Duration("wait", 5*time.Second, "how long")
	fs.Int("workers", 0, "how many")
	var b bytes.Buffer
	printFlags(&b, fs)
	assert.Equal(t, `  --dry
    	change nothing
  -f, --filename file
    	a file; repeatable
  -o, --output string
    	output format (default "text")
  --secure
    	use TLS (default true)
  --wait duration
    	how long (default 5s)
  --workers int
    	how many
`, b.String())
}

// repeatable is a list flag of the test's own.
type repeatable []string

func (l *repeatable) String() string     { return "" }
func (l *repeatable) Set(s string) error { *l = append(*l, s); return nil }
