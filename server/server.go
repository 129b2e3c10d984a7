// Package server builds and runs the flink-admission server: one controller-runtime manager
// with the admission webhooks on an HTTPS server whose certificate comes from package certs,
// the metrics and health endpoints, and the FlinkCluster controller on the elected leader.
// `flink-admission serve` runs it in a cluster; Dev runs the same server against a local
// control plane for `flink-admission dev` and the end-to-end tests.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/certs"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/shard"
	"github.com/flink-admission/flink-admission/internal/version"
	"github.com/flink-admission/flink-admission/policy"
	"github.com/flink-admission/flink-admission/webhook"
)

// Certificate modes of --cert-mode.
const (
	CertModeFiles      = "files"
	CertModeSelfSigned = "self-signed"
)

// Values of --deployment-without-controller.
const (
	DeploymentCheckWarn = "warn"
	DeploymentCheckDeny = "deny"
)

// LeaderElectionID is the name of the Lease the replicas elect the controller's leader with.
const LeaderElectionID = "flink-admission.flinkoperator.k8s.io"

// Options are the settings of `flink-admission serve`; `flink-admission dev` fills the
// same struct, so both run one code path.
type Options struct {
	// WebhookHost is the address the webhook server listens on ("" for all addresses; dev
	// listens on 127.0.0.1 only). Not a serve flag.
	WebhookHost string
	// WebhookPort is --webhook-port.
	WebhookPort int

	// CertMode is --cert-mode: CertModeFiles or CertModeSelfSigned.
	CertMode string
	// CertDir, CertName and KeyName locate the certificate and key in files mode.
	CertDir, CertName, KeyName string

	// CASecretName is the Secret holding the CA in self-signed mode, in Namespace.
	CASecretName string
	// Namespace holds the CA Secret and the leader election Lease (--namespace, default
	// $POD_NAMESPACE).
	Namespace string
	// ServiceName is the webhook Service, whose names the self-signed certificate carries.
	ServiceName string
	// IPAddresses are IP SANs of a self-signed serving certificate (dev: 127.0.0.1). Not a
	// serve flag: in a cluster the API server calls the Service by name.
	IPAddresses []net.IP

	// MutatingWebhookConfiguration and ValidatingWebhookConfiguration get the CA bundle in
	// self-signed mode.
	MutatingWebhookConfiguration, ValidatingWebhookConfiguration string

	// MetricsBindAddress and HealthProbeBindAddress are the addresses of /metrics and of
	// /healthz and /readyz ("0" turns one off).
	MetricsBindAddress, HealthProbeBindAddress string
	// MetricsSecure is --metrics-secure: /metrics over HTTPS (the webhook's serving
	// certificate) behind controller-runtime's authentication and authorization filter, so
	// only a caller whose token may `get` the non-resource URL /metrics reads it. The flag
	// defaults to true; the zero value (plain HTTP) is for dev and tests on loopback.
	MetricsSecure bool
	// PprofBindAddress is --pprof-bind-address: the address of Go's profiling endpoints
	// (/debug/pprof/), off ("0") by default, since profiles reveal the process's internals.
	PprofBindAddress string
	// LogLevel is --log-level (see ParseLogLevel).
	LogLevel string

	// ClientCAFile is --client-ca-file: when set, the webhook server accepts only clients
	// presenting a certificate signed by a CA in this PEM file (the API server's webhook
	// client certificate, from its admission configuration).
	ClientCAFile string
	// MaxConnections is --max-connections: the webhook server's limit on open connections
	// (DefaultMaxConnections when zero).
	MaxConnections int
	// MaxBodyBytesInFlight is --max-body-bytes-in-flight: the memory budget of the request
	// bodies being read, across every connection (webhook.DefaultBodyBytesInFlight when
	// zero; see webhook.Options.BodyBytesInFlight).
	MaxBodyBytesInFlight int64
	// ShutdownDrain is --shutdown-drain: after SIGTERM, how long the server goes on serving,
	// unready, before it closes its listener. Zero stops at once (dev and tests).
	ShutdownDrain time.Duration

	// EnableController runs the FlinkCluster controller; false serves the webhooks only.
	EnableController bool
	// LeaderElect elects one replica to run the controller.
	LeaderElect bool
	// ShardFleet is --shard-fleet: every replica runs the controller on its share of the
	// clusters, membership kept in Leases in Namespace (controller/shard), instead of one
	// elected leader running them all.
	ShardFleet bool
	// Shard is the shard membership's timing; shard.DefaultTiming when zero. Not a serve flag.
	Shard shard.Timing
	// Controller configures the controller.
	Controller controller.Options
	// DeploymentWithoutController is --deployment-without-controller: what the validating
	// webhook does with a Deployment-mode cluster that no Deployment-aware controller runs
	// (outside the controller's scope, or no controller at all): DeploymentCheckWarn or
	// DeploymentCheckDeny. Empty (dev, whose control plane runs no Flink pod anyway, and
	// whose verdicts `check` must predict) skips the check.
	DeploymentWithoutController string

	// AuditInterval is --audit-interval: how often the stored FlinkClusters are judged by the
	// policy as if created now (package audit), for the metric
	// flink_admission_stored_violations and the PolicyReports. Zero turns the audit off (dev,
	// tests).
	AuditInterval time.Duration

	// Kubeconfig is the path of a kubeconfig; empty means $KUBECONFIG, then the in-cluster
	// configuration, then ~/.kube/config (controller-runtime's order).
	Kubeconfig string
	// Config reaches the API server; when set, Kubeconfig is ignored (dev and tests).
	Config *rest.Config
	// Log is the logger of the manager and the certificate source; when zero, New builds one
	// from LogLevel and installs it as the global logger (SetGlobalLogger).
	Log logr.Logger
	// FilePollInterval overrides how often files mode re-reads the certificate without a file
	// system event (tests); zero keeps certs.DefaultFilePollInterval.
	FilePollInterval time.Duration
	// SelfSigned adjusts the self-signed source's options after they are filled in from the
	// fields above: tests shorten the lifetimes to see renewals and CA rotations happen.
	SelfSigned func(*certs.SelfSignedOptions)
}

// BindFlags registers the flags of `flink-admission serve` (deploy's contract) on fs, with
// their defaults, and the controller's.
func (o *Options) BindFlags(fs *flag.FlagSet) {
	fs.IntVar(&o.WebhookPort, "webhook-port", 9443, "port of the HTTPS admission webhook server")
	fs.StringVar(&o.CertMode, "cert-mode", CertModeFiles,
		"where the serving certificate comes from: files (a mounted Secret, e.g. cert-manager's, reloaded when it changes) or self-signed (a CA kept in --ca-secret-name, injected into the webhook configurations)")
	fs.StringVar(&o.CertDir, "cert-dir", "/var/run/flink-admission/serving-certs", "directory of the serving certificate and key (files mode)")
	fs.StringVar(&o.CertName, "cert-name", "tls.crt", "file name of the serving certificate in --cert-dir")
	fs.StringVar(&o.KeyName, "key-name", "tls.key", "file name of the serving key in --cert-dir")
	fs.StringVar(&o.CASecretName, "ca-secret-name", "flink-admission-ca", "Secret (in --namespace) holding the CA (self-signed mode)")
	fs.StringVar(&o.Namespace, "namespace", os.Getenv("POD_NAMESPACE"),
		"namespace of the CA Secret and the leader election Lease (default $POD_NAMESPACE)")
	fs.StringVar(&o.ServiceName, "service-name", "flink-admission-webhook", "Service the API server calls the webhook through; names in the self-signed certificate")
	fs.StringVar(&o.MutatingWebhookConfiguration, "mutating-webhook-configuration", "flink-admission",
		"MutatingWebhookConfiguration that gets the CA bundle (self-signed mode)")
	fs.StringVar(&o.ValidatingWebhookConfiguration, "validating-webhook-configuration", "flink-admission",
		"ValidatingWebhookConfiguration that gets the CA bundle (self-signed mode)")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (/metrics); 0 turns it off")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", true,
		"serve /metrics over HTTPS with the webhook's certificate, only to callers the API server authenticates and authorizes for GET /metrics (TokenReview, SubjectAccessReview); false serves plain HTTP without authentication (local tests)")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", ":8081", "address of /healthz and /readyz; 0 turns them off")
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", "0",
		"address of Go's profiling endpoints (/debug/pprof/), e.g. 127.0.0.1:8082, to see where the server's CPU time and memory go; 0 turns them off")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log level: error, info, debug, or a number N for V(N) verbosity")
	fs.StringVar(&o.ClientCAFile, "client-ca-file", "",
		"PEM file of CAs: when set, the webhook server accepts only clients presenting a certificate they signed (the API server's, from its admission configuration)")
	fs.IntVar(&o.MaxConnections, "max-connections", DefaultMaxConnections, "most connections the webhook server keeps open at once; more wait to be accepted")
	o.MaxBodyBytesInFlight = webhook.DefaultBodyBytesInFlight
	fs.Var((*byteQuantity)(&o.MaxBodyBytesInFlight), "max-body-bytes-in-flight",
		"memory budget (a `quantity` such as 64Mi) of the request bodies being read across all connections; a request that finds no room within a second is answered 503")
	fs.DurationVar(&o.ShutdownDrain, "shutdown-drain", DefaultShutdownDrain,
		"after SIGTERM, how long to go on serving while unready, so that the endpoint removal reaches the API servers first")
	fs.BoolVar(&o.EnableController, "enable-controller", true,
		"run the FlinkCluster controller on the elected leader; false serves the webhooks only (beside another operator)")
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "elect one replica to run the controller (Lease "+LeaderElectionID+" in --namespace)")
	fs.BoolVar(&o.ShardFleet, "shard-fleet", false,
		"every replica runs the controller on its share of the FlinkClusters (rendezvous hashing over the live replicas, one Lease each in --namespace, labelled "+shard.GroupLabel+"); needs --leader-elect=false")
	fs.StringVar(&o.DeploymentWithoutController, "deployment-without-controller", DeploymentCheckWarn,
		"what the validating webhook does with a Deployment-mode FlinkCluster that no Deployment-aware controller runs (outside --watch-namespaces or --cluster-selector, or with --enable-controller=false): warn or deny")
	fs.DurationVar(&o.AuditInterval, "audit-interval", DefaultAuditInterval,
		"how often to judge the stored FlinkClusters by the policy as if created now, for the metric flink_admission_stored_violations and a PolicyReport per namespace (when the wgpolicyk8s.io CRD is installed); 0 turns the audit off")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "path of a kubeconfig (default $KUBECONFIG, then the in-cluster configuration, then ~/.kube/config)")
	o.Controller.BindFlags(fs)
}

// AddFlags registers the flags of BindFlags on a pflag set, as `flink-admission serve`
// parses them: written --name, and named so in errors and in --help.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	gofs := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	o.BindFlags(gofs)
	fs.AddGoFlagSet(gofs)
}

// Validate rejects settings that cannot work, before anything starts.
func (o *Options) Validate() error {
	var errs []error
	if o.WebhookPort < 1 || o.WebhookPort > 65535 {
		errs = append(errs, fmt.Errorf("--webhook-port %d is not a port number", o.WebhookPort))
	}
	switch o.CertMode {
	case CertModeFiles:
		if o.CertDir == "" || o.CertName == "" || o.KeyName == "" {
			errs = append(errs, errors.New("files mode needs --cert-dir, --cert-name and --key-name"))
		}
	case CertModeSelfSigned:
		if o.CASecretName == "" {
			errs = append(errs, errors.New("self-signed mode needs --ca-secret-name"))
		}
		if o.Namespace == "" {
			errs = append(errs, errors.New("self-signed mode needs --namespace (or $POD_NAMESPACE) for the CA Secret"))
		}
		if o.ServiceName == "" && len(o.IPAddresses) == 0 {
			errs = append(errs, errors.New("self-signed mode needs --service-name: the certificate must name the server"))
		}
	default:
		errs = append(errs, fmt.Errorf("--cert-mode %q is not supported: use %s or %s", o.CertMode, CertModeFiles, CertModeSelfSigned))
	}
	if o.ShardFleet && o.LeaderElect {
		errs = append(errs, errors.New("--shard-fleet shares the clusters among every replica, --leader-elect gives them all to one: pass --leader-elect=false"))
	}
	if o.ShardFleet && o.EnableController && o.Namespace == "" {
		errs = append(errs, errors.New("--shard-fleet needs --namespace (or $POD_NAMESPACE) for its Leases"))
	}
	if o.leaderElection() && o.Namespace == "" {
		errs = append(errs, errors.New("leader election needs --namespace (or $POD_NAMESPACE) for its Lease; or pass --leader-elect=false"))
	}
	if _, err := ParseLogLevel(o.LogLevel); err != nil {
		errs = append(errs, err)
	}
	switch o.DeploymentWithoutController {
	case "", DeploymentCheckWarn, DeploymentCheckDeny:
	default:
		errs = append(errs, fmt.Errorf("--deployment-without-controller %q is not supported: use %s or %s",
			o.DeploymentWithoutController, DeploymentCheckWarn, DeploymentCheckDeny))
	}
	if o.MaxConnections < 0 {
		errs = append(errs, fmt.Errorf("--max-connections %d is negative", o.MaxConnections))
	}
	if o.MaxBodyBytesInFlight < 0 || o.MaxBodyBytesInFlight > 0 && o.MaxBodyBytesInFlight < webhook.MaxRequestBytes {
		errs = append(errs, fmt.Errorf("--max-body-bytes-in-flight %s is below the largest request body (%s), which would always be refused",
			byteQuantity(o.MaxBodyBytesInFlight).String(), byteQuantity(webhook.MaxRequestBytes).String()))
	}
	if o.AuditInterval < 0 {
		errs = append(errs, fmt.Errorf("--audit-interval %s is negative (0 turns the audit off)", o.AuditInterval))
	}
	if o.ShutdownDrain < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-drain %s is negative", o.ShutdownDrain))
	}
	return errors.Join(errs...)
}

// leaderElection reports whether the manager campaigns for the Lease. Only the controller
// needs a leader: the webhook server and the certificate source run on every replica, so a
// webhook-only deployment does not take part in an election at all.
func (o *Options) leaderElection() bool { return o.LeaderElect && o.EnableController }

// cacheOptions are the manager's cache settings: with the controller, its owned kinds are
// cached only for the objects carrying the controller's label, not every pod and ConfigMap
// of the cluster, and only in the controller's scope (controller.ScopedCacheOptions). The
// webhooks read nothing through the cache.
func (o *Options) cacheOptions() cache.Options {
	if !o.EnableController {
		return cache.Options{}
	}
	return controller.ScopedCacheOptions(o.Controller.Scope)
}

// controllerScope is what the webhooks know of the controller that runs Deployment
// JobManagers (nil: no check): this process's, when enabled, with its scope. With the controller off, no
// Deployment-aware controller is assumed to run anywhere: beside the flink-on-k8s-operator
// alone, deploymentType Deployment would silently be a Job.
func (o *Options) controllerScope() *policy.ControllerScope {
	if o.DeploymentWithoutController == "" {
		return nil
	}
	return &policy.ControllerScope{
		Running: o.EnableController,
		Scope:   o.Controller.Scope,
		Deny:    o.DeploymentWithoutController == DeploymentCheckDeny,
	}
}

// gracefulShutdownTimeout bounds the manager's stop after the drain: the webhook server may
// need shutdownTimeout for the requests in flight; the other runnables stop in moments.
const gracefulShutdownTimeout = shutdownTimeout + 5*time.Second

// ShutdownBound is the longest serve takes from SIGTERM to its exit: the drain, then the
// manager's graceful stop. A pod's terminationGracePeriodSeconds must be at least this, or
// the kubelet kills requests in flight.
func (o *Options) ShutdownBound() time.Duration { return o.ShutdownDrain + gracefulShutdownTimeout }

// Run builds the server and runs it until ctx is done, then shuts down gracefully (see
// Server.Start).
func Run(ctx context.Context, o Options) error {
	srv, err := New(o)
	if err != nil {
		return err
	}
	return srv.Start(ctx)
}

// Start runs the manager until ctx is done, then shuts down in this order: /readyz fails at
// once and the webhook server closes each connection after its current request, while it
// goes on serving for Options.ShutdownDrain (the time the pod's removal from the Service
// takes to reach every API server); then the listener closes, the requests in flight finish,
// and the leader releases its Lease.
func (s *Server) Start(ctx context.Context) error {
	mgrCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	done := make(chan error, 1)
	go func() { done <- s.Manager.Start(mgrCtx) }()
	select {
	case err := <-done:
		return err // the manager failed on its own
	case <-ctx.Done():
	}
	s.webhooks.Drain()
	log := s.Manager.GetLogger()
	log.Info("shutdown requested: not ready any more, serving during the drain period", "drain", s.Options.ShutdownDrain)
	drain := time.NewTimer(s.Options.ShutdownDrain)
	select {
	case err := <-done:
		drain.Stop()
		return err
	case <-drain.C:
	}
	log.Info("drain period over: stopping")
	stop()
	return <-done
}

// Server is a manager with the webhooks, the certificate source and, when enabled, the
// controller registered on it, not started yet.
type Server struct {
	// Manager runs everything: call Start.
	Manager ctrl.Manager
	// Source provides the serving certificate.
	Source certs.Source
	// Options are the settings the server was built with.
	Options Options

	webhooks *httpsServer
}

// New builds the manager serve and dev share: one controller-runtime manager with the
// webhook server (TLS from the certificate source), the metrics and health endpoints, the
// certificate source and the controller as runnables, and leader election for the controller.
func New(o Options) (*Server, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	log := o.Log
	if log.GetSink() == nil {
		level, _ := ParseLogLevel(o.LogLevel) // validated above
		log = NewLogger(level, os.Stderr)
		SetGlobalLogger(log)
	}
	cfg := o.Config
	if cfg == nil {
		var err error
		if cfg, err = LoadConfig(o.Kubeconfig); err != nil {
			return nil, err
		}
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1beta1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := version.RegisterMetric(crmetrics.Registry); err != nil {
		return nil, err
	}

	src, err := newCertSource(o, cfg, log.WithName("certs"))
	if err != nil {
		return nil, err
	}

	tlsConfig := certs.TLSConfig(src)
	// HTTP/2 is off (as in kubebuilder's scaffold): its stream multiplexing has a history of
	// denial-of-service bugs (rapid reset, CVE-2023-44487), and the API server calls webhooks
	// over HTTP/1.1 just as well.
	tlsConfig.NextProtos = []string{"http/1.1"}
	if o.ClientCAFile != "" {
		pool, err := loadClientCAs(o.ClientCAFile)
		if err != nil {
			return nil, err
		}
		tlsConfig.ClientCAs = pool
		tlsConfig.ClientAuth = tls.RequireAndVerifyClientCert
	}
	webhooks := newHTTPSServer(o, tlsConfig, log.WithName("webhook-server"))

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Logger:                        log,
		Cache:                         o.cacheOptions(),
		WebhookServer:                 webhooks,
		GracefulShutdownTimeout:       ptr.To(gracefulShutdownTimeout),
		Metrics:                       metricsOptions(o, src),
		HealthProbeBindAddress:        o.HealthProbeBindAddress,
		PprofBindAddress:              o.PprofBindAddress,
		LeaderElection:                o.leaderElection(),
		LeaderElectionID:              LeaderElectionID,
		LeaderElectionNamespace:       o.Namespace,
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	// The source implements NeedLeaderElection (false): every replica keeps its certificate.
	if err := mgr.Add(src); err != nil {
		return nil, fmt.Errorf("adding the certificate source: %w", err)
	}
	if err := webhook.Setup(mgr, webhook.Options{
		CertHealthy: src.Healthy, Controller: o.controllerScope(), BodyBytesInFlight: o.MaxBodyBytesInFlight,
	}); err != nil {
		return nil, fmt.Errorf("setting up the webhooks: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	// Ready also needs the HTTPS listener to be up, not only a loaded certificate; and not
	// shutting down.
	if err := mgr.AddReadyzCheck("webhook-server", webhooks.StartedChecker()); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("shutdown", webhooks.DrainChecker()); err != nil {
		return nil, err
	}
	if o.AuditInterval > 0 {
		if err := addAuditor(mgr, o.AuditInterval, log.WithName("audit")); err != nil {
			return nil, fmt.Errorf("setting up the audit: %w", err)
		}
	}
	if o.EnableController {
		if o.ShardFleet {
			m, err := newShardMembership(o, mgr, log.WithName("shard"))
			if err != nil {
				return nil, err
			}
			o.Controller.Shard = m
		}
		if err := controller.Setup(mgr, o.Controller); err != nil {
			return nil, fmt.Errorf("setting up the controller: %w", err)
		}
	}
	return &Server{Manager: mgr, Source: src, Options: o, webhooks: webhooks}, nil
}

// newShardMembership is this replica's membership of the install's shard group (the leader
// election Lease's name, so that two installs in one namespace need two names anyway). Its
// name is the pod's (the host name) with a random suffix: a restarted process is a new
// member, whatever its predecessor left behind.
func newShardMembership(o Options, mgr ctrl.Manager, log logr.Logger) (*shard.Membership, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "flink-admission"
	}
	m, err := shard.New(shard.Options{
		Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Namespace: o.Namespace, Group: LeaderElectionID,
		Identity: host + "-" + utilrand.String(5), Timing: o.Shard, Log: log, Release: true,
	})
	if err != nil {
		return nil, fmt.Errorf("setting up the shard membership: %w", err)
	}
	return m, nil
}

// metricsOptions configures the metrics server. Secure, it shares the webhook's certificate
// source (renewed and reloaded like the webhook's, and verifiable by a scraper that trusts
// the webhook's CA) and asks the API server who the caller is and whether it may read
// /metrics: the page reveals the webhook's traffic and the clusters' names.
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
func metricsOptions(o Options, src certs.Source) metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsBindAddress}
	if o.MetricsSecure {
		m.SecureServing = true
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
		m.TLSOpts = []func(*tls.Config){certs.TLSOption(src), func(c *tls.Config) {
			// As on the webhook server: no HTTP/2 (see New).
			c.NextProtos = []string{"http/1.1"}
		}}
	}
	return m
}

// newCertSource builds the serving certificate source of --cert-mode.
func newCertSource(o Options, cfg *rest.Config, log logr.Logger) (certs.Source, error) {
	switch o.CertMode {
	case CertModeFiles:
		var opts []certs.FileOption
		if o.FilePollInterval > 0 {
			opts = append(opts, certs.WithPollInterval(o.FilePollInterval))
		}
		return certs.NewFileSource(filepath.Join(o.CertDir, o.CertName), filepath.Join(o.CertDir, o.KeyName), opts...)
	case CertModeSelfSigned:
		// A clientset, not the manager's cached client: the source reads the CA Secret and
		// the webhook configurations straight from the API server (see certs.SelfSignedOptions).
		cs, err := certs.NewClient(cfg)
		if err != nil {
			return nil, fmt.Errorf("creating a client for the self-signed certificate source: %w", err)
		}
		opts := certs.SelfSignedOptions{
			Client:                             cs,
			Namespace:                          o.Namespace,
			SecretName:                         o.CASecretName,
			ServiceName:                        o.ServiceName,
			IPAddresses:                        o.IPAddresses,
			MutatingWebhookConfigurationName:   o.MutatingWebhookConfiguration,
			ValidatingWebhookConfigurationName: o.ValidatingWebhookConfiguration,
			Log:                                log,
		}
		if o.SelfSigned != nil {
			o.SelfSigned(&opts)
		}
		return certs.NewSelfSignedSource(opts)
	default:
		return nil, fmt.Errorf("--cert-mode %q is not supported", o.CertMode)
	}
}

// LoadConfig returns the API server configuration (serve, audit) from a kubeconfig path, or
// controller-runtime's lookup ($KUBECONFIG, in-cluster, ~/.kube/config) when path is empty.
func LoadConfig(path string) (*rest.Config, error) {
	if path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("loading the kubeconfig %s: %w", path, err)
		}
		// As ctrl.GetConfig does for the other sources: no client-side rate limit (client-go's
		// default of 5 requests/s would throttle the controller); the API server's priority and
		// fairness limits the server instead.
		cfg.QPS = -1
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("finding the API server (in-cluster, $KUBECONFIG or --kubeconfig): %w", err)
	}
	return cfg, nil
}
