package simulation_test

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	// A step allocates many short-lived object copies and little that lives: collecting
	// garbage less often saves about a sixth of the CPU for a few more megabytes.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	os.Exit(m.Run())
}
