// Package webhook is the admission transport for FlinkCluster: a mutating and a validating
// webhook for CREATE and UPDATE, served by controller-runtime's webhook server.
//
// The transport is controller-runtime's admission package: each webhook is an
// admission.Handler run by an admission.Webhook, behind a thin http.Handler of its own
// that keeps what controller-runtime lacks (the 4xx answers, the fail-closed checks, the
// metrics). The review and its objects are decoded with sigs.k8s.io/json, the API
// server's own decoder, the objects strictly (the validating webhook's in one pass with
// the review, see decodeReviewObjects); the handlers call pipeline.Admit (the
// policy's defaulting or validation), and the mutating one answers with the JSON patch
// from the object as sent to its defaulted deep copy (pipeline.DefaultingPatch). The
// CRD's CEL rules are not evaluated here: the API server runs them before it calls any
// validating webhook, and the policy mirrors each of them (the parity table proves it).
//
// Every review the handlers cannot judge with certainty — another kind or resource, an
// object that does not decode, an UPDATE without its old object, an unknown operation — is
// denied, never allowed: the webhook fails closed. A request that is no admission review
// at all (wrong method, content type, size, or body) gets a 4xx status.
//
// A body is read as it arrives, within a memory budget that the requests of every
// connection share (bodyBudget): a client that announces a large body and sends it
// slowly, or never, holds only what it has sent, and a request that finds no room in
// time gets a 503 status.
package webhook
