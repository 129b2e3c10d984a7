package controller_test

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// TestMain starts no API server: the package's tests are pure. The scenario table, the timer
// rows and every other test of the controller against a cluster run on the real control plane
// in controller/realplane.
func TestMain(m *testing.M) {
	if os.Getenv("CONTROLLER_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	os.Exit(m.Run())
}
