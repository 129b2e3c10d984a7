package webhook

import (
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/flink-admission/flink-admission/pipeline"
	"github.com/flink-admission/flink-admission/policy"
)

// ReadyzCheckName is the name of the readiness check Setup adds to the manager.
const ReadyzCheckName = "webhook"

// Options configure the webhooks.
type Options struct {
	// Clock is the policy's clock (the job-update rule reads the time). Nil means the real
	// clock.
	Clock clock.PassiveClock
	// Metrics are the metrics the handlers record. Nil means NewHandlers builds them
	// without registering them anywhere; Setup registers them on controller-runtime's
	// registry, the one the manager serves.
	Metrics *Metrics
	// Log receives the refusals (at the default level) and the denials (at V(1)). The zero
	// value means controller-runtime's logger, named "webhook".
	Log logr.Logger
	// CertHealthy reports whether the serving certificate is loaded: nil once it is (the
	// certs Source's Healthy). Setup requires it, for the readiness check.
	CertHealthy func() error
	// Controller is the controller that runs Deployment JobManagers (see
	// pipeline.Pipeline.Controller); nil skips the check.
	Controller *policy.ControllerScope
	// BodyBytesInFlight is the memory budget of request bodies across every connection and
	// both webhooks (see bodyBudget); zero means DefaultBodyBytesInFlight. Below
	// MaxRequestBytes, the largest requests are always refused.
	BodyBytesInFlight int64
}

// Handlers are the webhooks as http.Handlers. They are safe for concurrent use and
// keep no state between requests.
type Handlers struct {
	// Mutate serves MutatePath.
	Mutate http.Handler
	// Validate serves ValidatePath.
	Validate http.Handler
	// ValidateWarn serves ValidateWarnPath: Validate under staged enforcement.
	ValidateWarn http.Handler
}

// NewHandlers builds the webhooks without a manager (for Setup, tests and benchmarks).
func NewHandlers(opts Options) (*Handlers, error) {
	m := opts.Metrics
	if m == nil {
		var err error
		if m, err = NewMetrics(nil); err != nil {
			return nil, err
		}
	}
	log := opts.Log
	if log.GetSink() == nil {
		log = logf.Log.WithName("webhook")
	}
	p := pipeline.Pipeline{Clock: opts.Clock, Controller: opts.Controller}
	size := opts.BodyBytesInFlight
	if size <= 0 {
		size = DefaultBodyBytesInFlight
	}
	budget := newBodyBudget(size, m.bodyBytes)
	mr := &refuser{name: webhookMutate, metrics: m.forWebhook(webhookMutate), log: log}
	vr := &refuser{name: webhookValidate, metrics: m.forWebhook(webhookValidate), log: log}
	wr := &refuser{name: webhookValidateWarn, metrics: m.forWebhook(webhookValidateWarn), log: log}
	return &Handlers{
		Mutate:       newServer(&mutator{pipeline: p, r: mr}, false, budget, mr),
		Validate:     newServer(&validator{pipeline: p, steps: pipeline.Validate, r: vr}, true, budget, vr),
		ValidateWarn: newServer(&validator{pipeline: p, steps: pipeline.Validate | pipeline.Stage, r: wr}, true, budget, wr),
	}, nil
}

// Setup builds the webhooks, with their metrics on controller-runtime's registry, and
// registers them on the manager's webhook server at MutatePath, ValidatePath and
// ValidateWarnPath, with a
// readiness check (ReadyzCheckName) that passes once the serving certificate is loaded.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.CertHealthy == nil {
		return errors.New("webhook.Options.CertHealthy is required: readiness depends on the serving certificate")
	}
	if opts.Metrics == nil {
		m, err := registryMetrics()
		if err != nil {
			return fmt.Errorf("registering the webhook metrics: %w", err)
		}
		opts.Metrics = m
	}
	h, err := NewHandlers(opts)
	if err != nil {
		return err
	}
	srv := mgr.GetWebhookServer()
	srv.Register(MutatePath, h.Mutate)
	srv.Register(ValidatePath, h.Validate)
	srv.Register(ValidateWarnPath, h.ValidateWarn)
	if err := mgr.AddReadyzCheck(ReadyzCheckName, ReadyCheck(opts.CertHealthy)); err != nil {
		return fmt.Errorf("adding the webhook readiness check: %w", err)
	}
	return nil
}

// registryMetrics are the metrics on controller-runtime's registry, registered once per
// process however many managers Setup is called with (tests build several).
var registryMetrics = sync.OnceValues(func() (*Metrics, error) { return NewMetrics(crmetrics.Registry) })

// ReadyCheck returns a readiness check that passes once certHealthy returns nil. A nil
// certHealthy is never ready.
func ReadyCheck(certHealthy func() error) healthz.Checker {
	return func(*http.Request) error {
		if certHealthy == nil {
			return errors.New("no serving certificate source")
		}
		if err := certHealthy(); err != nil {
			return fmt.Errorf("serving certificate: %w", err)
		}
		return nil
	}
}
