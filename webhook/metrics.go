package webhook

import (
	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metric label values. Labels never carry raw request data (an operation name, a map key
// in a field path) so that a caller cannot grow the number of series without bound.
const (
	webhookMutate   = "mutate"
	webhookValidate = "validate"

	// operationNone labels HTTP requests that carried no decodable admission review.
	operationNone = "none"
	// operationOther labels reviews with an operation admission does not define.
	operationOther = "other"
)

// The denial rules of the transport itself; policy and CEL denials are labelled by rule.
const (
	ruleMalformedRequest  = "malformed-request"
	ruleWrongResource     = "wrong-resource"
	ruleWrongKind         = "wrong-kind"
	ruleUnsupportedOp     = "unsupported-operation"
	ruleMissingObject     = "missing-object"
	ruleMissingOldObject  = "missing-old-object"
	ruleUndecodableObject = "undecodable-object"
)

var (
	requestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flink_admission_webhook_requests_total",
		Help: "Admission requests served, by webhook (mutate, validate), operation and verdict.",
	}, []string{"webhook", "operation", "allowed"})

	requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "flink_admission_webhook_request_duration_seconds",
		Help: "Time to serve one admission request, from the HTTP request to the encoded answer.",
		// From tens of microseconds (the in-process target) to the API server's 10 s timeout.
		Buckets: []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1, 2.5, 10},
	}, []string{"webhook"})

	denialsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flink_admission_webhook_denials_total",
		Help: "Reasons of denied admission requests, by webhook and rule; a request denied for several reasons counts once per rule.",
	}, []string{"webhook", "rule"})

	warningsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flink_admission_webhook_warnings_total",
		Help: "Warnings returned to clients, by webhook.",
	}, []string{"webhook"})
)

func init() {
	// controller-runtime's registry is the one its manager serves on the metrics endpoint.
	metrics.Registry.MustRegister(requestsTotal, requestDuration, denialsTotal, warningsTotal)
}

// operationLabel maps an admission operation to a bounded label value.
func operationLabel(op admissionv1.Operation) string {
	switch op {
	case admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect:
		return string(op)
	case "":
		return operationNone
	default:
		return operationOther
	}
}
