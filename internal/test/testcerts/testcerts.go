// Package testcerts makes a throwaway CA and serving certificates for 127.0.0.1, for tests
// that serve the webhooks over real TLS.
package testcerts

import (
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cert-manager/cert-manager/pkg/util/pki"
	"github.com/stretchr/testify/require"
)

// CA signs serving certificates; it is valid for an hour around now.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
}

// NewCA returns a new CA.
func NewCA(t testing.TB) *CA {
	t.Helper()
	key, err := pki.GenerateECPrivateKey(256)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		Subject: pkix.Name{CommonName: "test-ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:  x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	_, cert, err := pki.SignCertificate(tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	certPEM, err := pki.EncodeX509(cert)
	require.NoError(t, err)
	return &CA{Cert: cert, Key: key, CertPEM: certPEM}
}

// Issue signs a new key for 127.0.0.1 and returns the PEM pair and the serial number.
func (ca *CA) Issue(t testing.TB) (certPEM, keyPEM []byte, serial *big.Int) {
	t.Helper()
	return ca.sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "127.0.0.1"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
}

// sign signs a new key for tmpl, valid for an hour around now, and returns the PEM pair and
// the serial number.
func (ca *CA) sign(t testing.TB, tmpl *x509.Certificate) (certPEM, keyPEM []byte, serial *big.Int) {
	t.Helper()
	key, err := pki.GenerateECPrivateKey(256)
	require.NoError(t, err)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	_, cert, err := pki.SignCertificate(tmpl, ca.Cert, key.Public(), ca.Key)
	require.NoError(t, err)
	certPEM, err = pki.EncodeX509(cert)
	require.NoError(t, err)
	keyPEM, err = pki.EncodePKCS8PrivateKey(key)
	require.NoError(t, err)
	return certPEM, keyPEM, cert.SerialNumber
}

// WriteServing writes a new serving certificate and key for 127.0.0.1 into dir as tls.crt
// and tls.key.
func (ca *CA) WriteServing(t testing.TB, dir string) {
	t.Helper()
	certPEM, keyPEM, _ := ca.Issue(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600))
}

// IssueClient signs a new client certificate (for TLS client authentication) for
// commonName and returns the PEM pair.
func (ca *CA) IssueClient(t testing.TB, commonName string) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, _ = ca.sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: commonName}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	return certPEM, keyPEM
}

// IssueServing signs a new serving certificate for the DNS names and returns the PEM pair.
func (ca *CA) IssueServing(t testing.TB, dnsNames ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, _ = ca.sign(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: dnsNames[0]}, DNSNames: dnsNames,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return certPEM, keyPEM
}
