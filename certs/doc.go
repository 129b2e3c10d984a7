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
//
// Wiring into a controller-runtime manager:
//
//	src, err := certs.NewSelfSignedSource(opts) // or certs.NewFileSource(certFile, keyFile)
//	server := webhook.NewServer(webhook.Options{TLSOpts: []func(*tls.Config){certs.TLSOption(src)}})
//	err = mgr.Add(src) // Start runs on every replica: NeedLeaderElection is false
//	err = mgr.AddReadyzCheck("serving-certificate", func(*http.Request) error { return src.Healthy() })
//
// RBAC the self-signed source needs: on secrets in its namespace get, create, update, list and
// watch (all but create can be limited to the CA Secret with resourceNames: the watch uses a
// metadata.name field selector); on mutatingwebhookconfigurations and
// validatingwebhookconfigurations get, update, list and watch (limited to the two names).
// The file source needs no RBAC.
package certs
