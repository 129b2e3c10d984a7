package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/net/netutil"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// The limits of the webhook's HTTPS server all derive from one fact: the API server waits at
// most timeoutSeconds for a webhook (10 in deploy/base/webhooks.yaml) and then rejects the
// change itself. A request still being read after that has nobody waiting for its answer, so
// the only thing a slower client achieves is holding a connection, a goroutine and buffers.
const (
	// webhookCallTimeout is the webhook configurations' timeoutSeconds.
	webhookCallTimeout = 10 * time.Second

	// readTimeout bounds reading one request, TLS handshake, headers and body together: the
	// API server sends a review at once, so a client that needs longer than its own timeout
	// is broken or hostile (a body trickled a byte at a time). Go uses the smallest of the
	// read and write timeouts for the handshake too, so a connection that never completes
	// one is closed after it as well.
	readTimeout = webhookCallTimeout
	// readHeaderTimeout is the same bound for the headers alone (equal: the body is sent
	// right behind them, so a separate, shorter bound would add nothing).
	readHeaderTimeout = webhookCallTimeout
	// writeTimeout bounds a request from the end of its headers to the end of the answer:
	// reading the body (readTimeout) plus answering, which takes milliseconds, with the same
	// margin again for a congested network.
	writeTimeout = 2 * webhookCallTimeout
	// idleTimeout closes a kept-alive connection that carries no request. It is longer than
	// the API server's own idle timeout (client-go's transport keeps idle connections 90 s),
	// so that the client closes first: a server closing a connection at the moment the
	// client reuses it fails that request, since a POST is not retried.
	idleTimeout = 2 * time.Minute
	// maxHeaderBytes is far above the API server's headers (well under 1 KiB, a few more
	// with tracing) and 16 times below Go's default of 1 MiB. The body is capped separately
	// by the webhooks (webhook.MaxRequestBytes, larger than any object etcd accepts), and
	// the bodies of all connections together by --max-body-bytes-in-flight.
	maxHeaderBytes = 64 << 10

	// shutdownTimeout bounds how long requests in flight may take to finish once the
	// listener is closed: none can take longer than writeTimeout from its headers.
	shutdownTimeout = writeTimeout + 5*time.Second
)

// DefaultMaxConnections is --max-connections' default. An API server keeps a few dozen
// connections to a webhook (client-go keeps up to 25 idle ones per host), so a thousand
// leaves room for several API servers and bursts while bounding what a flood can cost: each
// TLS connection holds about 50 KiB (a goroutine stack, bufio and TLS record buffers, the
// first buffer of a body it announced), 50 MiB in all, well inside the container's memory
// limit.
const DefaultMaxConnections = 1000

// DefaultShutdownDrain is --shutdown-drain's default: how long a terminating replica goes on
// serving after it turns unready. The endpoint controller takes the pod out of the Service's
// EndpointSlices at once, but every node's kube-proxy (or the API server's own endpoint
// routing) must see that before it stops sending new connections here; a few seconds is
// usual, ten covers a loaded control plane.
const DefaultShutdownDrain = 10 * time.Second

// httpsServer is the webhook server: controller-runtime's registration (its per-path
// metrics) with our own net/http server underneath, because controller-runtime's sets only a
// header timeout and offers neither the other timeouts, a connection limit, nor a drain.
type httpsServer struct {
	// Server registers the webhooks on mux, instrumented with controller-runtime's metrics.
	// Its own Start and StartedChecker are never used.
	crwebhook.Server

	addr           string
	tlsConfig      *tls.Config
	maxConnections int
	log            logr.Logger

	// started is set once the listener is bound (connections queue in the kernel from then
	// on) and Serve runs; draining once shutdown began (see Drain).
	started, draining atomic.Bool
}

var _ crwebhook.Server = (*httpsServer)(nil)

// newHTTPSServer returns the webhook server for o. tlsConfig must provide the certificate.
func newHTTPSServer(o Options, tlsConfig *tls.Config, log logr.Logger) *httpsServer {
	maxConns := o.MaxConnections
	if maxConns <= 0 {
		maxConns = DefaultMaxConnections
	}
	return &httpsServer{
		Server:         crwebhook.NewServer(crwebhook.Options{WebhookMux: http.NewServeMux()}),
		addr:           net.JoinHostPort(o.WebhookHost, strconv.Itoa(o.WebhookPort)),
		tlsConfig:      tlsConfig,
		maxConnections: maxConns,
		log:            log,
	}
}

// Start serves until ctx is done, then stops accepting connections and lets the requests in
// flight finish (at most shutdownTimeout).
func (s *httpsServer) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	// The limit counts TCP connections, before their TLS handshake: a client that connects
	// and never says hello holds a slot too, until the handshake bound closes it. At the
	// limit, new connections wait in the kernel's accept queue rather than being refused.
	ln = tls.NewListener(netutil.LimitListener(ln, s.maxConnections), s.tlsConfig)
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		// Requests must not be cancelled when shutdown begins: Shutdown waits for them.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	stopped := make(chan error, 1)
	go func() {
		<-ctx.Done()
		s.log.Info("stopping the webhook server: no new connections, waiting for the requests in flight", "timeout", shutdownTimeout)
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		stopped <- srv.Shutdown(sctx)
	}()
	s.log.Info("serving webhooks", "address", ln.Addr().String(), "maxConnections", s.maxConnections,
		"readTimeout", readTimeout, "writeTimeout", writeTimeout, "idleTimeout", idleTimeout)
	s.started.Store(true)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("webhook server: %w", err)
	}
	if err := <-stopped; err != nil {
		return fmt.Errorf("stopping the webhook server: %w", err)
	}
	s.log.Info("webhook server stopped")
	return nil
}

// ServeHTTP serves the registered webhooks. While draining, every answer closes its
// connection: a client's next request opens a new one, which the Service sends to a replica
// that is not shutting down. Idle connections are left alone until the end of the drain:
// closing one as a client reuses it would fail that request.
func (s *httpsServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		w.Header().Set("Connection", "close")
	}
	s.WebhookMux().ServeHTTP(w, r)
}

// Drain marks the server as shutting down: /readyz fails and connections are closed after
// their current request, while requests go on being served.
func (s *httpsServer) Drain() { s.draining.Store(true) }

// StartedChecker passes once the listener is bound and served. It does not dial the server:
// with client authentication on, a probe without a client certificate would be refused, and
// a dial would take one of the limited connections.
func (s *httpsServer) StartedChecker() healthz.Checker {
	return func(*http.Request) error {
		if !s.started.Load() {
			return errors.New("webhook server has not been started yet")
		}
		return nil
	}
}

// DrainChecker fails once the server is draining, so that the pod leaves the Service's
// endpoints before it stops serving.
func (s *httpsServer) DrainChecker() healthz.Checker {
	return func(*http.Request) error {
		if s.draining.Load() {
			return errors.New("shutting down: serving the requests still routed here until the drain period ends")
		}
		return nil
	}
}

// loadClientCAs reads the PEM CA bundle of --client-ca-file.
func loadClientCAs(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading --client-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--client-ca-file %s holds no PEM certificate", path)
	}
	return pool, nil
}
