package certs

import (
	"context"
	"crypto/tls"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cert-manager/cert-manager/pkg/util/pki"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher/metrics"
)

// pemPair returns the PEM certificate and key of a pair signed by signServing.
func pemPair(t *testing.T, pair *tls.Certificate) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, err := pki.EncodeX509(pair.Leaf)
	require.NoError(t, err)
	keyPEM, err = pki.EncodePKCS8PrivateKey(pair.PrivateKey)
	require.NoError(t, err)
	return certPEM, keyPEM
}

// localServing signs a serving certificate for 127.0.0.1.
func localServing(t *testing.T, ca *authority, lifetime time.Duration) *tls.Certificate {
	t.Helper()
	pair, err := ca.signServing([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Now(), lifetime)
	require.NoError(t, err)
	return pair
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, data, 0o600))
}

// serveTLS serves HTTPS on 127.0.0.1 with TLSConfig(src) and returns its URL.
func serveTLS(t *testing.T, src Source) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }),
		TLSConfig:         TLSConfig(src),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return "https://" + ln.Addr().String()
}

// httpsClient trusts bundle and opens a new connection (a new handshake, so a new
// GetCertificate call) for every request.
func httpsClient(t *testing.T, bundle []byte, serverName string) *http.Client {
	t.Helper()
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			TLSClientConfig:   &tls.Config{RootCAs: certPool(t, bundle), ServerName: serverName, MinVersion: tls.VersionTLS12},
		},
	}
}

// servedSerial makes one request and returns the serial of the certificate the server presented.
func servedSerial(client *http.Client, url string) (*big.Int, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New(resp.Status)
	}
	return resp.TLS.PeerCertificates[0].SerialNumber, nil
}

func TestFileSourceReloadsWithoutFailingRequests(t *testing.T) {
	ca := mustCA(t, time.Now(), 24*time.Hour)
	first, second, third := localServing(t, ca, time.Hour), localServing(t, ca, time.Hour), localServing(t, ca, time.Hour)
	require.NotEqual(t, first.Leaf.SerialNumber, second.Leaf.SerialNumber)

	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	certPEM, keyPEM := pemPair(t, first)
	writeFile(t, certFile, certPEM)
	writeFile(t, keyFile, keyPEM)

	src, err := NewFileSource(certFile, keyFile, WithPollInterval(100*time.Millisecond))
	require.NoError(t, err)
	require.NoError(t, src.Healthy())
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan error, 1)
	go func() { started <- src.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-started)
	})

	url := serveTLS(t, src)
	client := httpsClient(t, ca.bundle, "")

	// A client loop sends requests, each on a new connection, during everything below.
	var (
		mu       sync.Mutex
		failures []error
		last     *big.Int
		requests atomic.Int64
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			serial, err := servedSerial(client, url)
			mu.Lock()
			if err != nil {
				failures = append(failures, err)
			} else {
				last = serial
			}
			mu.Unlock()
			requests.Add(1)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	lastServed := func() *big.Int {
		mu.Lock()
		defer mu.Unlock()
		return last
	}

	require.Eventually(t, func() bool { return first.Leaf.SerialNumber.Cmp(nonNil(lastServed())) == 0 }, eventually, 10*time.Millisecond)

	// Replace the pair the clumsy way, one file after the other with plain writes: for a moment
	// the files hold the new certificate with the old key (and each may be empty or half
	// written). That state must be rejected while the old pair keeps serving.
	certPEM, keyPEM = pemPair(t, second)
	errorsBefore := testutil.ToFloat64(metrics.ReadCertificateErrors)
	writeFile(t, certFile, certPEM)
	// Two failed reads: at least one of them started after the certificate was written, so
	// the watcher has seen (and rejected) the mismatched pair; then requests made after that.
	require.Eventually(t, func() bool { return testutil.ToFloat64(metrics.ReadCertificateErrors) >= errorsBefore+2 }, eventually, 10*time.Millisecond,
		"the watcher read the mismatched pair")
	before := requests.Load()
	require.Eventually(t, func() bool { return requests.Load() >= before+5 }, eventually, 10*time.Millisecond)
	assert.Equal(t, first.Leaf.SerialNumber, lastServed(), "a certificate with the wrong key must not be served")
	writeFile(t, keyFile, keyPEM)
	require.Eventually(t, func() bool { return second.Leaf.SerialNumber.Cmp(nonNil(lastServed())) == 0 }, eventually, 10*time.Millisecond,
		"the new certificate is served after reload")

	// An invalid pair (a new certificate with a key that does not match, and then garbage) is
	// rejected; the current pair keeps serving.
	thirdCert, _ := pemPair(t, third)
	_, firstKey := pemPair(t, first)
	for _, bad := range []struct {
		name      string
		cert, key []byte
	}{
		{"new certificate, empty key", thirdCert, []byte{}},
		{"garbage", []byte("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"), []byte("garbage")},
		{"new certificate, key of another", thirdCert, firstKey},
	} {
		writeFile(t, certFile, bad.cert)
		writeFile(t, keyFile, bad.key)
		// Two more failed reads: at least one of them started after both files were written.
		errorsBefore := testutil.ToFloat64(metrics.ReadCertificateErrors)
		require.Eventually(t, func() bool { return testutil.ToFloat64(metrics.ReadCertificateErrors) >= errorsBefore+2 }, eventually, 10*time.Millisecond,
			"the watcher read (and rejected) the pair: %s", bad.name)
		before := requests.Load()
		require.Eventually(t, func() bool { return requests.Load() >= before+5 }, eventually, 10*time.Millisecond)
		assert.Equal(t, second.Leaf.SerialNumber, lastServed(), "an invalid pair must not replace the served one")
		served, err := src.GetCertificate(nil)
		require.NoError(t, err)
		assert.Equal(t, second.Leaf.SerialNumber, served.Leaf.SerialNumber)
		assert.NoError(t, src.Healthy())
	}

	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, failures, "no request may fail while the files change")
	// Every phase above waited for 5 requests of its own: 4 phases.
	assert.GreaterOrEqual(t, requests.Load(), int64(20), "the client loop ran throughout")
	t.Logf("%d requests, %d failed", requests.Load(), len(failures))
}

func nonNil(n *big.Int) *big.Int {
	if n == nil {
		return new(big.Int)
	}
	return n
}

func TestNewFileSourceRejectsUnusableFiles(t *testing.T) {
	ca := mustCA(t, time.Now(), 24*time.Hour)
	certPEM, keyPEM := pemPair(t, localServing(t, ca, time.Hour))
	_, otherKey := pemPair(t, localServing(t, ca, time.Hour))
	tests := []struct {
		name      string
		cert, key []byte
	}{
		{"deny: missing files", nil, nil},
		{"deny: key of another certificate", certPEM, otherKey},
		{"deny: empty certificate", []byte{}, keyPEM},
		{"deny: garbage", []byte("garbage"), []byte("garbage")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
			if tc.cert != nil {
				writeFile(t, certFile, tc.cert)
				writeFile(t, keyFile, tc.key)
			}
			src, err := NewFileSource(certFile, keyFile)
			assert.Error(t, err)
			assert.Nil(t, src)
		})
	}
}

func TestFileSourceHealthyUntilExpiry(t *testing.T) {
	ca := mustCA(t, time.Now(), 24*time.Hour)
	pair := localServing(t, ca, time.Hour)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	certPEM, keyPEM := pemPair(t, pair)
	writeFile(t, certFile, certPEM)
	writeFile(t, keyFile, keyPEM)

	clk := clocktesting.NewFakeClock(time.Now())
	src, err := NewFileSource(certFile, keyFile, WithFileClock(clk))
	require.NoError(t, err)
	assert.NoError(t, src.Healthy())
	clk.SetTime(pair.Leaf.NotAfter.Add(time.Second))
	assert.ErrorContains(t, src.Healthy(), "expired")
}
