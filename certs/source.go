package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"
)

// ErrNoCertificate is returned by GetCertificate and Healthy while no valid certificate has
// been loaded yet. A TLS handshake then fails (the server has nothing to present) rather than
// falling back to some other certificate.
var ErrNoCertificate = errors.New("no serving certificate loaded yet")

// Source provides the serving certificate.
type Source interface {
	// GetCertificate returns the current certificate, for tls.Config.GetCertificate. It returns
	// an error while none is loaded yet. It is called on every handshake, so it must be cheap
	// and never block on I/O.
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// Start keeps the certificate current until ctx is done (a controller-runtime
	// manager.Runnable). It returns nil when ctx is cancelled.
	Start(ctx context.Context) error
	// Healthy returns nil once a valid certificate is loaded (for /readyz).
	Healthy() error
}

// TLSConfig returns a *tls.Config with MinVersion TLS 1.2 and GetCertificate from the source.
// The certificate is looked up on every handshake, so a renewed certificate is used by the next
// connection without restarting the server, while connections already open finish with the
// one they negotiated. NextProtos is left to the caller (whether to offer HTTP/2).
func TLSConfig(src Source) *tls.Config {
	cfg := &tls.Config{} //nolint:gosec // MinVersion is set by TLSOption
	TLSOption(src)(cfg)
	return cfg
}

// TLSOption applies the same settings as TLSConfig to an existing config; it fits
// controller-runtime's webhook.Options.TLSOpts, whose server then uses the source instead of
// its own certificate watcher.
func TLSOption(src Source) func(*tls.Config) {
	return func(cfg *tls.Config) {
		// TLS 1.0 and 1.1 are deprecated (RFC 8996); every supported kube-apiserver speaks 1.2+.
		cfg.MinVersion = tls.VersionTLS12
		cfg.GetCertificate = src.GetCertificate
	}
}

// checkServing explains why cert cannot serve at now, or returns nil. It is the shared body of
// the sources' Healthy methods: an expired certificate is reported, because the API server
// rejects it and every admission call would fail.
func checkServing(cert *tls.Certificate, now time.Time) error {
	if cert == nil || len(cert.Certificate) == 0 {
		return ErrNoCertificate
	}
	leaf := cert.Leaf
	if leaf == nil {
		// tls.X509KeyPair fills Leaf since Go 1.23 unless GODEBUG x509keypairleaf=0 turns it off.
		parsed, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			return fmt.Errorf("parsing the serving certificate: %w", err)
		}
		leaf = parsed
	}
	if now.After(leaf.NotAfter) {
		return fmt.Errorf("serving certificate (serial %s) expired at %s", leaf.SerialNumber, leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}
