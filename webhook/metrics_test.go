package webhook

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/flink-admission/flink-admission/policy"
)

// TestMetrics checks that each kind of answer is counted with its labels.
func TestMetrics(t *testing.T) {
	deny := request(admissionv1.Create, set(deploymentCluster(), "spec.job.mode", "Detached"), nil)
	warn := request(admissionv1.Create, set(deploymentCluster(), "spec.flinkProperties.high-availability", "zookeeper"), nil)
	wrongKind := request(admissionv1.Create, jobCluster(), nil)
	wrongKind.Kind.Kind = "Pod"

	tests := []struct {
		name string
		send func()
		// deltas of counters after send
		counters map[string]float64
	}{
		{
			name: "an allowed create",
			send: func() { post(t, testHandlers.Validate, reviewBody(request(admissionv1.Create, jobCluster(), nil))) },
			counters: map[string]float64{
				"requests validate CREATE true": 1,
			},
		},
		{
			name: "a denial counts its rule",
			send: func() { post(t, testHandlers.Validate, reviewBody(deny)) },
			counters: map[string]float64{
				"requests validate CREATE false":                                   1,
				"denials validate " + policy.RuleDeploymentRequiresApplicationMode: 1,
			},
		},
		{
			name: "warnings",
			send: func() { post(t, testHandlers.Validate, reviewBody(warn)) },
			counters: map[string]float64{
				"requests validate CREATE true": 1,
				"warnings validate":             1,
			},
		},
		{
			name: "a review for another kind",
			send: func() { post(t, testHandlers.Mutate, reviewBody(wrongKind)) },
			counters: map[string]float64{
				"requests mutate CREATE false":    1,
				"denials mutate " + ruleWrongKind: 1,
			},
		},
		{
			name: "a malformed HTTP request",
			send: func() { do(t, testHandlers.Mutate, http.MethodGet, "application/json", nil) },
			counters: map[string]float64{
				"requests mutate none false":             1,
				"denials mutate " + ruleMalformedRequest: 1,
			},
		},
		{
			name: "an unknown operation gets a bounded label",
			send: func() {
				r := request(admissionv1.Create, jobCluster(), nil)
				r.Operation = "SOMETHING-ELSE"
				post(t, testHandlers.Validate, reviewBody(r))
			},
			counters: map[string]float64{
				"requests validate other false":         1,
				"denials validate " + ruleUnsupportedOp: 1,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := map[string]float64{}
			for k := range tt.counters {
				before[k] = counterValue(k)
			}
			latencyBefore := map[string]uint64{webhookMutate: latencyCount(webhookMutate), webhookValidate: latencyCount(webhookValidate)}
			tt.send()
			for k, want := range tt.counters {
				if got := counterValue(k) - before[k]; got != want {
					t.Errorf("%s: +%v, want +%v", k, got, want)
				}
			}
			// One request, one latency observation, on the webhook that served it.
			observed := latencyCount(webhookMutate) - latencyBefore[webhookMutate] +
				latencyCount(webhookValidate) - latencyBefore[webhookValidate]
			if observed != 1 {
				t.Errorf("%d latency observations, want 1", observed)
			}
		})
	}
}

// counterValue reads a counter named "<metric> <label values...>".
func counterValue(key string) float64 {
	f := strings.Fields(key)
	switch f[0] {
	case "requests":
		return testutil.ToFloat64(testMetrics.requests.WithLabelValues(f[1:]...))
	case "denials":
		return testutil.ToFloat64(testMetrics.denials.WithLabelValues(f[1:]...))
	case "warnings":
		return testutil.ToFloat64(testMetrics.warnings.WithLabelValues(f[1:]...))
	}
	panic("unknown counter " + key)
}

// latencyCount is the number of latency observations of a webhook.
func latencyCount(webhook string) uint64 {
	m := &dto.Metric{}
	if err := testMetrics.duration.WithLabelValues(webhook).(prometheus.Metric).Write(m); err != nil {
		panic(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestMetricsRegistered checks that Setup puts the metrics on controller-runtime's
// registry, the one the manager's metrics endpoint serves.
func TestMetricsRegistered(t *testing.T) {
	mgr := newTestManager(t)
	if err := Setup(mgr, Options{CertHealthy: func() error { return nil }}); err != nil {
		t.Fatal(err)
	}
	serve(mgr.GetWebhookServer().WebhookMux(), ValidatePath, reviewBody(request(admissionv1.Create, jobCluster(), nil)))
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	for _, want := range []string{
		"flink_admission_webhook_requests_total",
		"flink_admission_webhook_request_duration_seconds",
		"flink_admission_webhook_warned_writes_total",
		"flink_admission_webhook_body_bytes_in_flight",
		"flink_admission_webhook_body_budget_refusals_total",
	} {
		if !names[want] {
			t.Errorf("%s is not on metrics.Registry", want)
		}
	}
}
