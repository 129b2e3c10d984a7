package controller

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// metrics are the controller's Prometheus metrics, on controller-runtime's registry.
type metrics struct {
	reconciles *prometheus.CounterVec
	errors     prometheus.Counter
	jobs       *prometheus.GaugeVec

	mu     sync.Mutex
	states map[types.NamespacedName]string
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flinkcluster_controller_reconciles_total",
			Help: "FlinkCluster reconciles by result (success, error).",
		}, []string{"result"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flinkcluster_controller_reconcile_errors_total",
			Help: "FlinkCluster reconciles that returned an error.",
		}),
		jobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "flinkcluster_controller_jobs",
			Help: "Application-mode FlinkCluster jobs by job state.",
		}, []string{"state"}),
		states: map[types.NamespacedName]string{},
	}
	for _, c := range []prometheus.Collector{m.reconciles, m.errors, m.jobs} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the controller metrics: %w", err)
		}
	}
	return m, nil
}

// registryMetrics are the metrics on controller-runtime's registry, registered once per
// process however many managers Setup is called with (tests build several), as the webhook's.
var registryMetrics = sync.OnceValues(func() (*metrics, error) { return newMetrics(crmetrics.Registry) })

func (m *metrics) observe(err error) {
	if err != nil {
		m.reconciles.WithLabelValues("error").Inc()
		m.errors.Inc()
		return
	}
	m.reconciles.WithLabelValues("success").Inc()
}

// setJobState records a cluster's job state ("" forgets the cluster) and recounts the gauge.
func (m *metrics) setJobState(key types.NamespacedName, state string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if state == "" {
		if _, ok := m.states[key]; !ok {
			// Nothing to forget: a replica that shares the fleet drops every request for
			// the clusters of the others, and recounting for each would cost O(clusters).
			return
		}
		delete(m.states, key)
	} else {
		m.states[key] = state
	}
	counts := map[string]float64{}
	for _, s := range m.states {
		counts[s]++
	}
	m.jobs.Reset()
	for s, n := range counts {
		m.jobs.WithLabelValues(s).Set(n)
	}
}
