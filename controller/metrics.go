package controller

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
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
	var err error
	m.reconciles, err = register(reg, m.reconciles)
	if err != nil {
		return nil, err
	}
	m.errors, err = register(reg, m.errors)
	if err != nil {
		return nil, err
	}
	m.jobs, err = register(reg, m.jobs)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector already registered under its name (Setup
// running twice in one process, as in tests).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

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
