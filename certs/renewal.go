package certs

import (
	"crypto/x509"
	"time"
)

// RenewAt returns the moment a certificate should be replaced: when a third of its lifetime is
// left. A third leaves room for several failed attempts (API server down, webhook configuration
// not yet created) before the certificate actually expires, as cert-manager does for its own
// webhook. A certificate whose lifetime is empty or negative is due at once (its NotBefore).
func RenewAt(cert *x509.Certificate) time.Time {
	lifetime := cert.NotAfter.Sub(cert.NotBefore)
	if lifetime <= 0 {
		return cert.NotBefore
	}
	return cert.NotAfter.Add(-lifetime / 3)
}

// NeedsRenewal reports whether cert should be replaced at now: when there is none, when it is
// not yet valid (it was issued by a clock ahead of ours, or our clock jumped back, and a peer
// checking it now would reject it), when less than a third of its lifetime is left, or when it
// has expired.
//
// It is a pure function of its arguments on purpose: callers evaluate it on every tick against
// the wall clock instead of sleeping until RenewAt. A sleeping timer runs on the monotonic
// clock, which stops while a machine is suspended (a laptop running `flink-admission dev`, a VM
// being live-migrated), so it would wake up late, after the certificate expired; comparing wall
// time each tick notices the missed moment at the first tick after resume.
func NeedsRenewal(cert *x509.Certificate, now time.Time) bool {
	if cert == nil {
		return true
	}
	if now.Before(cert.NotBefore) {
		return true
	}
	return !now.Before(RenewAt(cert))
}

// validAt reports whether cert is inside its validity period at now.
func validAt(cert *x509.Certificate, now time.Time) bool {
	return cert != nil && !now.Before(cert.NotBefore) && !now.After(cert.NotAfter)
}
