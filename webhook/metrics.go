package webhook

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/flink-admission/flink-admission/policy"
)

// Metric label values. Labels never carry raw request data (an operation name, a map key
// in a field path) so that a caller cannot grow the number of series without bound.
const (
	webhookMutate   = "mutate"
	webhookValidate = "validate"
	// webhookValidateWarn is the staged validating webhook (ValidateWarnPath).
	webhookValidateWarn = "validate-warn"

	// operationNone labels HTTP requests that carried no decodable admission review.
	operationNone = "none"
	// operationOther labels reviews with an operation admission does not define.
	operationOther = "other"
)

// The denial rules of the transport itself; policy denials are labelled by their rule.
const (
	ruleMalformedRequest  = "malformed-request"
	ruleWrongResource     = "wrong-resource"
	ruleWrongKind         = "wrong-kind"
	ruleUnsupportedOp     = "unsupported-operation"
	ruleMissingObject     = "missing-object"
	ruleMissingOldObject  = "missing-old-object"
	ruleUndecodableObject = "undecodable-object"
)

// Metrics are the webhooks' Prometheus metrics. Build them with NewMetrics, which
// registers them on the registry it is given (as the controller's are), so that tests and
// benchmarks can use their own registry or none.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	denials  *prometheus.CounterVec
	warnings *prometheus.CounterVec
	// warnedWrites counts, by rule, the writes under staged enforcement that the rule would
	// have denied.
	warnedWrites *prometheus.CounterVec
	// bodyBytes and budgetRefusals record the body budget (bodyBudget).
	bodyBytes      prometheus.Gauge
	budgetRefusals *prometheus.CounterVec
}

// NewMetrics builds the webhooks' metrics and registers them on reg; a nil reg registers
// nothing.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flink_admission_webhook_requests_total",
			Help: "Admission requests served, by webhook (mutate, validate), operation and verdict.",
		}, []string{"webhook", "operation", "allowed"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "flink_admission_webhook_request_duration_seconds",
			Help: "Time to serve one admission request, from the HTTP request to the encoded answer.",
			// From tens of microseconds (the in-process target) to the API server's 10 s timeout.
			Buckets: []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1, 2.5, 10},
		}, []string{"webhook"}),
		denials: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flink_admission_webhook_denials_total",
			Help: "Reasons of denied admission requests, by webhook and rule; a request denied for several reasons counts once per rule.",
		}, []string{"webhook", "rule"}),
		warnings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flink_admission_webhook_warnings_total",
			Help: "Warnings returned to clients, by webhook.",
		}, []string{"webhook"}),
		warnedWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flink_admission_webhook_warned_writes_total",
			Help: "Writes to namespaces under staged enforcement (label " + policy.EnforcementLabel + "=" + policy.EnforcementWarn +
				") that a rule only the webhook enforces would have denied, warned instead, by rule; a write warned for several rules counts once per rule.",
		}, []string{"rule"}),
		bodyBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "flink_admission_webhook_body_bytes_in_flight",
			Help: "Bytes of request body buffers the webhooks hold, of the budget --max-body-bytes-in-flight.",
		}),
		budgetRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flink_admission_webhook_body_budget_refusals_total",
			Help: "Requests answered 503 because the body budget had no room for them in time, by webhook.",
		}, []string{"webhook"}),
	}
	// A series for every rule that can be warned, so that a dashboard sees 0, not nothing.
	for _, r := range policy.Rules() {
		if r.EnforcedBy == policy.EnforcedByWebhook {
			m.warnedWrites.WithLabelValues(r.Name)
		}
	}
	m.warnedWrites.WithLabelValues(policy.RuleDeploymentWithoutController)
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.denials, m.warnings, m.warnedWrites, m.bodyBytes, m.budgetRefusals} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// webhookMetrics are one webhook's children of Metrics, resolved once: looking a child up
// by label values on every request costs a hash and a lock.
type webhookMetrics struct {
	duration       prometheus.Observer
	warnings       prometheus.Counter
	budgetRefusals prometheus.Counter
	// requests[operation][allowed]
	requests map[string][2]prometheus.Counter
	// denials by rule: every rule of the policy and of the transport, so that each has a
	// series from the start (a dashboard sees 0, not nothing).
	denials map[string]prometheus.Counter
	m       *Metrics
	webhook string
}

func (m *Metrics) forWebhook(name string) *webhookMetrics {
	wm := &webhookMetrics{
		duration:       m.duration.WithLabelValues(name),
		warnings:       m.warnings.WithLabelValues(name),
		budgetRefusals: m.budgetRefusals.WithLabelValues(name),
		requests:       map[string][2]prometheus.Counter{},
		denials:        map[string]prometheus.Counter{},
		m:              m,
		webhook:        name,
	}
	rules := []string{ruleMalformedRequest, ruleWrongResource, ruleWrongKind, ruleUnsupportedOp, ruleMissingObject,
		ruleMissingOldObject, ruleUndecodableObject, policy.RuleNoObject}
	for _, r := range policy.Rules() {
		rules = append(rules, r.Name)
	}
	for _, r := range rules {
		wm.denials[r] = m.denials.WithLabelValues(name, r)
	}
	for _, op := range []string{string(admissionv1.Create), string(admissionv1.Update), string(admissionv1.Delete),
		string(admissionv1.Connect), operationNone, operationOther} {
		wm.requests[op] = [2]prometheus.Counter{
			m.requests.WithLabelValues(name, op, "false"),
			m.requests.WithLabelValues(name, op, "true"),
		}
	}
	return wm
}

// request counts one answered request.
func (wm *webhookMetrics) request(operation string, allowed bool) {
	i := 0
	if allowed {
		i = 1
	}
	wm.requests[operation][i].Inc()
}

// denial counts one reason of a denial.
func (wm *webhookMetrics) denial(rule string) {
	if c, ok := wm.denials[rule]; ok {
		c.Inc()
		return
	}
	wm.m.denials.WithLabelValues(wm.webhook, rule).Inc()
}

// warned counts one write under staged enforcement for each distinct rule of rules.
func (wm *webhookMetrics) warned(rules []string) {
	for i, r := range rules {
		if !slices.Contains(rules[:i], r) {
			wm.m.warnedWrites.WithLabelValues(r).Inc()
		}
	}
}

// operationLabel maps an admission operation to a bounded label value.
func operationLabel(op admissionv1.Operation) string {
	switch op {
	case admissionv1.Create:
		return string(admissionv1.Create)
	case admissionv1.Update:
		return string(admissionv1.Update)
	case admissionv1.Delete:
		return string(admissionv1.Delete)
	case admissionv1.Connect:
		return string(admissionv1.Connect)
	case "":
		return operationNone
	default:
		return operationOther
	}
}
