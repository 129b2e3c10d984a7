// Package certs provides the serving certificate of the admission webhook server, behind one
// interface (Source) with two implementations:
//
//   - FileSource reads a certificate and key from files (a mounted Secret that cert-manager or
//     anyone else maintains) and reloads them when they change, without a restart. It is built
//     on controller-runtime's certwatcher.
//   - SelfSignedSource needs no cert-manager: it keeps a CA in a Secret (created when absent,
//     shared by every replica, rotated when a third of its life is left), signs the serving
//     certificate in memory, renews it when a third of its life is left or at once when the CA
//     changes, and injects the CA bundle into the webhook configurations, putting it back if
//     someone overwrites it.
//
// Both are controller-runtime manager.Runnables that must run on every replica (no leader
// election): each replica serves its own certificate. The design follows cert-manager's
// pkg/server/tls (CertificateSource, DynamicSource, DynamicAuthority), and the key, certificate
// and PEM plumbing is cert-manager's pkg/util/pki.
package certs
