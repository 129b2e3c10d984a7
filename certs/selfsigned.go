package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// Defaults of SelfSignedOptions.
const (
	// DefaultCADuration is one year: the CA is stored and its rotation changes the caBundle of
	// the webhook configurations, so it should be rare; renewed with a third left (about four
	// months), a failing rotation has months to be noticed before anything breaks.
	DefaultCADuration = 365 * 24 * time.Hour
	// DefaultLeafDuration is seven days, as cert-manager's own webhook: the serving key never
	// leaves memory and renewal needs no API call, so it can be short-lived (a leaked key is
	// useless within days), while renewal after two thirds (about 4.7 days) still leaves more
	// than two days of margin, e.g. for a laptop running `flink-admission dev` that sleeps over
	// a weekend (renewal happens at the first tick after it wakes up).
	DefaultLeafDuration = 7 * 24 * time.Hour
	// DefaultResyncInterval is how often the source re-reads the CA Secret and the webhook
	// configurations and checks whether the serving certificate is due, even without watch
	// events. It bounds how late a renewal can be after a suspend, and how long a lost watch
	// event can leave a wrong caBundle in place.
	DefaultResyncInterval = time.Minute
	// DefaultCACommonName is the CommonName of a generated CA.
	DefaultCACommonName = "flink-admission-webhook-ca"
)

// SelfSignedOptions configure a SelfSignedSource.
type SelfSignedOptions struct {
	// Client reaches the API server. It is a client-go clientset rather than a controller-runtime
	// client on purpose: the manager's client reads through a cache that would list and watch
	// every Secret in the cluster (RBAC and memory for nothing), and create-if-absent must read
	// the API server, not a cache that may not have seen the winning replica's Secret yet.
	// NewClient makes one.
	Client Client
	// Namespace and SecretName locate the Secret holding the CA (created when absent).
	Namespace, SecretName string
	// ServiceName is the webhook Service. The serving certificate is valid for <svc>,
	// <svc>.<ns>, <svc>.<ns>.svc and <svc>.<ns>.svc.cluster.local, plus ExtraDNSNames. It may be
	// empty when ExtraDNSNames or IPAddresses name the server (`flink-admission dev`).
	ServiceName string
	// ExtraDNSNames are added to the serving certificate (e.g. for a cluster domain other than
	// cluster.local).
	ExtraDNSNames []string
	// IPAddresses are added to the serving certificate, e.g. 127.0.0.1 for `flink-admission dev`,
	// where the API server calls the webhook by URL.
	IPAddresses []net.IP
	// MutatingWebhookConfigurationName and ValidatingWebhookConfigurationName name the
	// configurations whose webhooks (all of them) get the CA bundle; empty skips that kind.
	MutatingWebhookConfigurationName, ValidatingWebhookConfigurationName string
	// Clock reads the time for every renewal decision and drives the resync timer (the real
	// clock when nil).
	Clock clock.Clock
	// CADuration and LeafDuration are the lifetimes of the CA and of the serving certificate
	// (DefaultCADuration and DefaultLeafDuration when zero). LeafDuration must not exceed a third
	// of CADuration, so that a CA with a third of its life left (about to be rotated) can still
	// sign a full-length serving certificate.
	CADuration, LeafDuration time.Duration
	// ResyncInterval is how often everything is re-checked without watch events
	// (DefaultResyncInterval when zero).
	ResyncInterval time.Duration
	// CACommonName is the CommonName of a generated CA (DefaultCACommonName when empty).
	CACommonName string
	// Log receives what the source does (discarded when zero).
	Log logr.Logger
}

// SelfSignedSource signs the serving certificate in memory with a CA kept in a Secret, and
// injects that CA into the webhook configurations. Every replica runs one; they share the CA
// through the Secret and each signs its own serving certificate.
type SelfSignedSource struct {
	opts     SelfSignedOptions
	log      logr.Logger
	clock    clock.Clock
	dnsNames []string

	// serving is read on every handshake: an atomic pointer keeps that path lock-free.
	serving atomic.Pointer[tls.Certificate]

	// mu guards the fields below, written only by the Start loop.
	mu sync.Mutex
	// ca is the CA last read from (or written to) the Secret.
	ca *authority
	// signedBy is the raw CA certificate that signed serving.
	signedBy []byte

	// passes counts completed reconcile passes and passTime holds the clock reading (Unix
	// nanoseconds) of the last one, so tests know when a pass has seen the time they set.
	passes   atomic.Uint64
	passTime atomic.Int64
}

var _ Source = (*SelfSignedSource)(nil)

// NewSelfSignedSource checks the options and fills in defaults. Nothing is read or written
// until Start.
func NewSelfSignedSource(opts SelfSignedOptions) (*SelfSignedSource, error) {
	var errs []error
	if opts.Client == nil {
		errs = append(errs, errors.New("client is required"))
	}
	if opts.Namespace == "" {
		errs = append(errs, errors.New("namespace of the CA secret is required"))
	}
	if opts.SecretName == "" {
		errs = append(errs, errors.New("name of the CA secret is required"))
	}
	if opts.ServiceName == "" && len(opts.ExtraDNSNames) == 0 && len(opts.IPAddresses) == 0 {
		errs = append(errs, errors.New("service name, extra DNS names or IP addresses are required: the serving certificate must name the server"))
	}
	for i, name := range opts.ExtraDNSNames {
		if name == "" {
			errs = append(errs, fmt.Errorf("extra DNS name %d is empty", i))
		}
	}
	for i, ip := range opts.IPAddresses {
		if ip == nil || ip.To16() == nil {
			errs = append(errs, fmt.Errorf("IP address %d is invalid", i))
		}
	}
	if opts.CADuration == 0 {
		opts.CADuration = DefaultCADuration
	}
	if opts.LeafDuration == 0 {
		opts.LeafDuration = DefaultLeafDuration
	}
	if opts.ResyncInterval == 0 {
		opts.ResyncInterval = DefaultResyncInterval
	}
	if opts.CADuration < 0 || opts.LeafDuration < 0 || opts.ResyncInterval < 0 {
		errs = append(errs, errors.New("durations must be positive"))
	} else if opts.LeafDuration > opts.CADuration/3 {
		errs = append(errs, fmt.Errorf("leaf duration %s must not exceed a third of the CA duration %s", opts.LeafDuration, opts.CADuration))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("invalid self-signed certificate options: %w", errors.Join(errs...))
	}
	if opts.CACommonName == "" {
		opts.CACommonName = DefaultCACommonName
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &SelfSignedSource{
		opts:     opts,
		log:      opts.Log,
		clock:    opts.Clock,
		dnsNames: ServiceDNSNames(opts.ServiceName, opts.Namespace, opts.ExtraDNSNames),
	}, nil
}

// ServiceDNSNames returns the names a Service is reached by from inside the cluster (the API
// server uses <svc>.<ns>.svc), followed by extra; no Service names when service is empty.
func ServiceDNSNames(service, namespace string, extra []string) []string {
	var names []string
	if service != "" {
		names = append(names,
			service,
			service+"."+namespace,
			service+"."+namespace+".svc",
			service+"."+namespace+".svc.cluster.local",
		)
	}
	return append(names, extra...)
}

// GetCertificate returns the current serving certificate, for tls.Config.GetCertificate.
func (s *SelfSignedSource) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if cert := s.serving.Load(); cert != nil {
		return cert, nil
	}
	return nil, ErrNoCertificate
}

// Healthy returns nil while a serving certificate is loaded and has not expired.
func (s *SelfSignedSource) Healthy() error {
	return checkServing(s.serving.Load(), s.clock.Now())
}

// CABundle returns the PEM trust bundle injected into the webhook configurations (the current
// CA first, then earlier CAs still valid), or nil before the CA is known. `flink-admission dev`
// can hand it to clients of its local server.
func (s *SelfSignedSource) CABundle() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ca == nil {
		return nil
	}
	return bytes.Clone(s.ca.bundle)
}

// NeedLeaderElection returns false: every replica serves, so every replica needs its
// certificate; the replicas coordinate through the Secret instead.
func (s *SelfSignedSource) NeedLeaderElection() bool { return false }

// Start keeps the CA, the serving certificate and the CA bundles current until ctx is done.
// It reconciles at once, then on every watch event on the Secret or the webhook
// configurations, and every ResyncInterval. Failures are logged and retried sooner (the API
// server may not be reachable yet at start); they never stop the source, and a serving
// certificate already loaded keeps serving.
func (s *SelfSignedSource) Start(ctx context.Context) error {
	trigger := make(chan struct{}, 1)
	stopWatches := s.watch(ctx, trigger)
	defer stopWatches()

	retryInterval := min(s.opts.ResyncInterval, 5*time.Second)
	for {
		wait := s.opts.ResyncInterval
		if err := s.reconcile(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log.Error(err, "keeping the serving certificate current failed; retrying", "in", retryInterval)
			wait = retryInterval
		}
		// A timer on the injected clock, re-armed after each pass, so tests control it. Each
		// pass compares the wall clock against the certificates (see NeedsRenewal) instead of
		// sleeping until the renewal moment: a timer stops with the monotonic clock during a
		// suspend, but the first pass after resume sees the real time.
		timer := s.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C():
		case <-trigger:
			timer.Stop()
		}
	}
}

// reconcile makes one pass: make sure the Secret holds a usable CA, inject its bundle, and
// re-sign the serving certificate when the CA changed or the certificate is due.
func (s *SelfSignedSource) reconcile(ctx context.Context) error {
	now := s.clock.Now()
	defer func() {
		s.passTime.Store(now.UnixNano())
		s.passes.Add(1)
	}()
	var errs []error

	ca, err := s.ensureCA(ctx, now)
	if err != nil {
		errs = append(errs, err)
		s.mu.Lock()
		ca = s.ca // keep signing with the CA we know until the Secret is readable again
		s.mu.Unlock()
		if ca == nil {
			return errors.Join(errs...)
		}
	}
	s.mu.Lock()
	s.ca = ca
	signedBy := s.signedBy
	s.mu.Unlock()

	// Inject before re-signing: when this replica starts presenting a certificate signed by a
	// new CA, the API server should already trust that CA. The bundle still holds the previous
	// CA, so replicas that have not noticed the rotation yet keep working too.
	if err := s.injectCABundle(ctx, ca.bundle); err != nil {
		errs = append(errs, err)
	}

	current := s.serving.Load()
	reason := ""
	switch {
	case current == nil:
		reason = "no serving certificate yet"
	case !bytes.Equal(signedBy, ca.cert.Raw):
		reason = "the CA changed"
	case NeedsRenewal(current.Leaf, now):
		reason = "a third of its lifetime is left"
	}
	if reason != "" {
		cert, err := ca.signServing(s.dnsNames, s.opts.IPAddresses, now, s.opts.LeafDuration)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		s.mu.Lock()
		s.signedBy = ca.cert.Raw
		s.mu.Unlock()
		s.serving.Store(cert)
		s.log.Info("signed a new serving certificate", "reason", reason,
			"serial", cert.Leaf.SerialNumber.String(), "notAfter", cert.Leaf.NotAfter, "renewAt", RenewAt(cert.Leaf),
			"dnsNames", cert.Leaf.DNSNames, "ipAddresses", cert.Leaf.IPAddresses)
	}
	return errors.Join(errs...)
}
