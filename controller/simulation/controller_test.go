package simulation_test

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
)

// newController is the controller under test, on the model's API server and clock, reaching
// Flink through hc (the model's JobManager Service). It is the only place that builds the
// controller, so that the simulation can be run against another version of it (see doc.go).
func newController(w *world, hc *http.Client) (*controller.Reconciler, error) {
	rest, err := flinkclient.New(w.fl.URL(), hc)
	if err != nil {
		return nil, err
	}
	return controller.NewReconciler(w.cl, w.cl, w.rec, controller.Options{
		Clock:           w.controllerClock(),
		HARecoveryGrace: 2 * time.Minute,
		LostTimeout:     10 * time.Minute,
		RequeueInterval: 10 * time.Second,
		WaitBound:       waitBound,
		FlinkClientFor:  func(*v1beta1.FlinkCluster) (flinkclient.Client, error) { return rest, nil },
		NewID:           func() string { return fmt.Sprintf("%016x%016x", w.rng.Uint64(), w.rng.Uint64()) },
	}, prometheus.NewRegistry())
}
