package server

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// ParseLogLevel reads --log-level: a zap level name (error, info, debug) or a number N that
// enables logr's V(N) messages (zap level -N), as controller-runtime's --zap-log-level does.
func ParseLogLevel(s string) (zapcore.Level, error) {
	switch strings.ToLower(s) {
	case "error":
		return zapcore.ErrorLevel, nil
	case "info", "":
		return zapcore.InfoLevel, nil
	case "debug":
		return zapcore.DebugLevel, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 127 {
		return 0, fmt.Errorf("--log-level %q is not supported: use error, info, debug or a verbosity from 0 to 127", s)
	}
	return zapcore.Level(-n), nil
}

// NewLogger returns controller-runtime's zap logger at level, writing JSON lines to w (the
// format log pipelines in a cluster expect).
func NewLogger(level zapcore.Level, w io.Writer) logr.Logger {
	return crzap.New(crzap.Level(level), crzap.WriteTo(w))
}

// NewConsoleLogger is NewLogger with human-readable lines, for `flink-admission dev` in a
// terminal.
func NewConsoleLogger(level zapcore.Level, w io.Writer) logr.Logger {
	// ISO 8601 rather than a short clock time: the encoder formats time values in fields
	// (a certificate's notAfter) the same way, and those need their date.
	return crzap.New(crzap.Level(level), crzap.WriteTo(w), crzap.ConsoleEncoder(func(c *zapcore.EncoderConfig) {
		c.EncodeTime = zapcore.ISO8601TimeEncoder
	}))
}

// SetGlobalLogger makes log the logger of everything that logs through a package-level
// logger: controller-runtime (log.Log) and client-go (klog: leader election, reflectors).
func SetGlobalLogger(log logr.Logger) {
	ctrl.SetLogger(log)
	klog.SetLoggerWithOptions(log, klog.ContextualLogger(true))
}
