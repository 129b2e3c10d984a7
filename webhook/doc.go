// Package webhook is the admission transport for FlinkCluster: a mutating and a validating
// webhook for CREATE and UPDATE, served by controller-runtime's webhook server.
//
// The handlers only decode, call package policy (defaulting and validation) and package
// celrules (the CRD's CEL rules, compiled once), and encode. Everything else belongs to
// controller-runtime's admission.Webhook: the request size limit, the Content-Type check,
// AdmissionReview decoding and encoding, warnings. A thin guard in front of it turns the
// reviews it cannot decode into HTTP 4xx answers, and records the metrics.
//
// Every review the handlers cannot judge with certainty — another kind or resource, an
// object that does not decode, an UPDATE without its old object, an unknown operation — is
// denied, never allowed: the webhook fails closed.
package webhook
