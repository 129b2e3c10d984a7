package main

import (
	"bytes"
	"flag"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestPrintFlags: two dashes for names, one for letters, a shorthand on its flag's line,
// defaults only when not the zero value, the flags of a Go flag set (the controller's) alike.
func TestPrintFlags(t *testing.T) {
	fs := newFlagSet("x", io.Discard)
	var files repeatable
	fs.VarP(&files, "filename", "f", "a `file`; repeatable")
	fs.StringP("output", "o", "text", "output format")
	fs.Bool("dry", false, "change nothing")
	fs.Bool("secure", true, "use TLS")
	fs.Int("workers", 0, "how many")
	gofs := flag.NewFlagSet("x", flag.ContinueOnError)
	gofs.Duration("wait", 5*time.Second, "how long")
	gofs.Func("only", "a `list`", func(string) error { return nil })
	fs.AddGoFlagSet(gofs)
	var b bytes.Buffer
	printFlags(&b, fs)
	assert.Equal(t, `  --dry
    	change nothing
  -f, --filename file
    	a file; repeatable
  --only list
    	a list
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
func (l *repeatable) Type() string       { return "value" }
