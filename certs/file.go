package certs

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
)

// DefaultFilePollInterval is how often FileSource re-reads the files even without a file
// system event. Events are the fast path; the poll is the safety net for the ways events get
// lost (kubelet swaps a Secret volume's ..data symlink, which some file systems report only on
// the directory; overlay and network file systems may report nothing at all).
const DefaultFilePollInterval = 10 * time.Second

// FileOption tunes NewFileSource.
type FileOption func(*fileOptions)

type fileOptions struct {
	pollInterval time.Duration
	clock        clock.PassiveClock
}

// WithPollInterval sets how often the files are re-read without an event
// (DefaultFilePollInterval when not set or not positive).
func WithPollInterval(d time.Duration) FileOption {
	return func(o *fileOptions) { o.pollInterval = d }
}

// WithFileClock sets the clock Healthy compares the certificate's expiry against (the real
// clock when not set).
func WithFileClock(c clock.PassiveClock) FileOption {
	return func(o *fileOptions) { o.clock = c }
}

// FileSource serves a certificate and key read from files, typically a Secret that cert-manager
// maintains, mounted into the pod. It reloads them when they change.
//
// The reloading is controller-runtime's certwatcher, which already does what a webhook needs:
// it watches the files (re-adding the watch when kubelet replaces them) and polls as a backstop;
// it parses the pair with tls.X509KeyPair and swaps the cached certificate only when that
// succeeds, so a half-written file or a certificate that does not match its key is rejected
// and the previous pair keeps serving; and each handshake reads the cache under a read lock,
// so requests in flight never see a missing certificate.
type FileSource struct {
	watcher *certwatcher.CertWatcher
	clock   clock.PassiveClock
}

var _ Source = (*FileSource)(nil)

// NewFileSource reads certFile and keyFile once and returns a source serving them. It fails
// when the pair cannot be read or parsed now: a webhook started with a missing or broken mount
// is misconfigured, and saying so at start is clearer than failing every handshake.
func NewFileSource(certFile, keyFile string, opts ...FileOption) (*FileSource, error) {
	o := fileOptions{pollInterval: DefaultFilePollInterval, clock: clock.RealClock{}}
	for _, opt := range opts {
		opt(&o)
	}
	if o.pollInterval <= 0 {
		o.pollInterval = DefaultFilePollInterval
	}
	if o.clock == nil {
		o.clock = clock.RealClock{}
	}
	w, err := certwatcher.New(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the serving certificate from %s and %s: %w", certFile, keyFile, err)
	}
	return &FileSource{watcher: w.WithWatchInterval(o.pollInterval), clock: o.clock}, nil
}

// GetCertificate returns the pair most recently loaded, for tls.Config.GetCertificate.
func (s *FileSource) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	cert, err := s.watcher.GetCertificate(hello)
	if err != nil {
		return nil, err
	}
	if cert == nil {
		return nil, ErrNoCertificate
	}
	return cert, nil
}

// Start watches the files until ctx is done.
func (s *FileSource) Start(ctx context.Context) error {
	return s.watcher.Start(ctx)
}

// Healthy returns nil while the loaded certificate has not expired.
func (s *FileSource) Healthy() error {
	cert, _ := s.watcher.GetCertificate(nil)
	return checkServing(cert, s.clock.Now())
}

// NeedLeaderElection returns false: every replica serves, so every replica needs its
// certificate.
func (s *FileSource) NeedLeaderElection() bool { return false }
