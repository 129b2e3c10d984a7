package certs

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/cert-manager/cert-manager/pkg/util/pki"
	corev1 "k8s.io/api/core/v1"
)

// SecretCAKey is the key of the CA Secret holding the trust bundle (PEM): the current CA
// followed by earlier CAs that are still valid. tls.crt and tls.key hold the current CA pair.
const SecretCAKey = "ca.crt"

// caBackdate is subtracted from a new CA's NotBefore. Replicas and the API server do not share
// a clock: without it, a replica whose clock is a little behind the one that created the CA
// would find it "not yet valid", regenerate it, and the replicas would take turns replacing
// each other's CA.
const caBackdate = time.Hour

// caKeySize and leafKeySize are ECDSA curve sizes: P-256 is what every TLS stack supports and is
// fast to generate, which matters because every replica generates a new leaf key at start.
const (
	caKeySize   = 256
	leafKeySize = 256
)

// authority is a CA read from (or written to) the CA Secret.
type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
	// certPEM and keyPEM are the encoded pair, as stored in tls.crt and tls.key.
	certPEM, keyPEM []byte
	// bundle is the PEM trust bundle: cert first, then earlier CAs still valid.
	bundle []byte
}

// parseAuthority reads the CA pair and trust bundle from a Secret's data. The error says why
// the Secret cannot be used as a CA, which is then regenerated.
func parseAuthority(data map[string][]byte, now time.Time) (*authority, error) {
	certPEM, keyPEM := data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey]
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return nil, fmt.Errorf("missing %s or %s", corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	}
	// X509KeyPair checks that the key belongs to the certificate.
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return nil, fmt.Errorf("invalid CA key pair: %w", err)
	}
	cert, err := pki.DecodeX509CertificateBytes(certPEM)
	if err != nil {
		return nil, fmt.Errorf("decoding the CA certificate: %w", err)
	}
	key, err := pki.DecodePrivateKeyBytes(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("decoding the CA private key: %w", err)
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, errors.New("the certificate is not a CA (basic constraints or certSign key usage missing)")
	}
	bundle, err := trustBundle(cert, data[SecretCAKey], now)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, certPEM: certPEM, keyPEM: keyPEM, bundle: bundle}, nil
}

// trustBundle returns the PEM bundle the API server should trust: current first, then the CAs
// of previous that are still valid at now. Keeping the previous CA trusted during a rotation
// lets replicas that have not noticed the rotation yet keep serving leaves it signed. An
// unreadable previous bundle is dropped rather than failing: the current CA alone is enough.
func trustBundle(current *x509.Certificate, previous []byte, now time.Time) ([]byte, error) {
	out, err := pki.EncodeX509(current)
	if err != nil {
		return nil, err
	}
	if len(previous) == 0 {
		return out, nil
	}
	olds, err := pki.DecodeX509CertificateSetBytes(previous)
	if err != nil {
		return out, nil //nolint:nilerr // see the doc comment
	}
	for _, old := range olds {
		if bytes.Equal(old.Raw, current.Raw) || !old.IsCA || !validAt(old, now) {
			continue
		}
		pemBytes, err := pki.EncodeX509(old)
		if err != nil {
			return nil, err
		}
		out = append(out, pemBytes...)
	}
	return out, nil
}

// newAuthority generates a self-signed CA valid for lifetime from now. previous, when not nil,
// is the CA being replaced: its still-valid CAs stay in the trust bundle.
func newAuthority(commonName string, now time.Time, lifetime time.Duration, previous *authority) (*authority, error) {
	key, err := pki.GenerateECPrivateKey(caKeySize)
	if err != nil {
		return nil, err
	}
	keyPEM, err := pki.EncodePKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	template := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		IsCA:                  true,
		BasicConstraintsValid: true,
		// MaxPathLenZero: this CA signs serving certificates only, never another CA.
		MaxPathLen:     0,
		MaxPathLenZero: true,
		KeyUsage:       x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		NotBefore:      now.Add(-caBackdate),
		NotAfter:       now.Add(lifetime),
	}
	_, cert, err := pki.SignCertificate(template, template, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("self-signing the CA: %w", err)
	}
	certPEM, err := pki.EncodeX509(cert)
	if err != nil {
		return nil, err
	}
	var previousBundle []byte
	if previous != nil {
		previousBundle = previous.bundle
	}
	bundle, err := trustBundle(cert, previousBundle, now)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, certPEM: certPEM, keyPEM: keyPEM, bundle: bundle}, nil
}

// secretData returns the CA Secret's data for a.
func (a *authority) secretData() map[string][]byte {
	return map[string][]byte{
		corev1.TLSCertKey:       a.certPEM,
		corev1.TLSPrivateKeyKey: a.keyPEM,
		SecretCAKey:             a.bundle,
	}
}

// leafBackdate is subtracted from a serving certificate's NotBefore, so that an API server
// whose clock is a little behind ours does not reject it as not yet valid.
const leafBackdate = 5 * time.Minute

// signServing generates a key and signs a serving certificate for dnsNames and ips, valid for
// lifetime from now but never beyond the CA's own expiry.
func (a *authority) signServing(dnsNames []string, ips []net.IP, now time.Time, lifetime time.Duration) (*tls.Certificate, error) {
	if !validAt(a.cert, now) {
		return nil, fmt.Errorf("the CA (serial %s) is not valid at %s", a.cert.SerialNumber, now.UTC().Format(time.RFC3339))
	}
	key, err := pki.GenerateECPrivateKey(leafKeySize)
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(lifetime)
	if notAfter.After(a.cert.NotAfter) {
		notAfter = a.cert.NotAfter
	}
	template := &x509.Certificate{
		Subject:               pkix.Name{CommonName: firstName(dnsNames, ips)},
		DNSNames:              dnsNames,
		IPAddresses:           ips,
		BasicConstraintsValid: true,
		// ECDSA keys sign the handshake; they do not encipher keys, so no KeyEncipherment.
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		NotBefore:   now.Add(-leafBackdate),
		NotAfter:    notAfter,
		// SerialNumber is left nil: crypto/x509 then draws a random 128-bit serial.
	}
	_, cert, err := pki.SignCertificate(template, a.cert, key.Public(), a.key)
	if err != nil {
		return nil, fmt.Errorf("signing the serving certificate: %w", err)
	}
	certPEM, err := pki.EncodeX509(cert)
	if err != nil {
		return nil, err
	}
	keyPEM, err := pki.EncodePKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	// Round-trip through X509KeyPair, which checks that key and certificate match and fills
	// Leaf, exactly as for a pair read from files.
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading the signed serving certificate: %w", err)
	}
	return &pair, nil
}

// firstName is the serving certificate's CommonName: informative only (clients check the SANs),
// but tools print it.
func firstName(dnsNames []string, ips []net.IP) string {
	if len(dnsNames) > 0 {
		return dnsNames[0]
	}
	if len(ips) > 0 {
		return ips[0].String()
	}
	return ""
}
