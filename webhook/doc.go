// Package webhook is the admission transport for FlinkCluster: a mutating and a validating
// webhook for CREATE and UPDATE, served by controller-runtime's webhook server.
//
// The handlers only decode, call pipeline.Admit (the policy's defaulting or validation),
// and encode. Each review body is read once, with its objects decoded straight into the Go
// type by a decoder that keeps the API server's JSON semantics (package clusterjson). The
// CRD's CEL rules are not evaluated here: the API server runs them before it calls any
// validating webhook, and the policy mirrors each of them (the parity table proves it).
//
// Every review the handlers cannot judge with certainty — another kind or resource, an
// object that does not decode, an UPDATE without its old object, an unknown operation — is
// denied, never allowed: the webhook fails closed. A request that is no admission review
// at all (wrong method, content type, size, or body) gets a 4xx status.
package webhook
