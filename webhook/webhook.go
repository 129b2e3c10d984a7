package webhook

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flink-admission/flink-admission/celrules"
	"github.com/flink-admission/flink-admission/policy"
)

// ReadyzCheckName is the name of the readiness check Setup adds to the manager.
const ReadyzCheckName = "webhook"

// Options configure the webhooks.
type Options struct {
	// Clock is the policy's clock (the job-update rule reads the time). Nil means the real
	// clock.
	Clock clock.PassiveClock
	// Rules are the CRD's compiled CEL rules. Nil means NewHandlers compiles them with
	// celrules.New; pass them to share one compilation between users.
	Rules *celrules.Validator
	// CertHealthy reports whether the serving certificate is loaded: nil once it is (the
	// certs Source's Healthy). Setup requires it, for the readiness check.
	CertHealthy func() error
}

// Handlers are the two webhooks as http.Handlers: controller-runtime's admission.Webhook
// around each handler, behind the guard. They are safe for concurrent use and keep no
// state between requests.
type Handlers struct {
	// Mutate serves MutatePath.
	Mutate http.Handler
	// Validate serves ValidatePath.
	Validate http.Handler

	rules *celrules.Validator
}

// NewHandlers builds the webhooks without a manager (for Setup, tests and benchmarks). The
// CEL rules are compiled here, once, unless opts carries them.
func NewHandlers(opts Options) (*Handlers, error) {
	rules := opts.Rules
	if rules == nil {
		var err error
		if rules, err = celrules.New(); err != nil {
			return nil, fmt.Errorf("compiling the CRD's CEL rules: %w", err)
		}
	}
	return &Handlers{
		Mutate:   newGuard(webhookMutate, &mutator{}),
		Validate: newGuard(webhookValidate, &validator{policy: policy.Validator{Clock: opts.Clock}, rules: rules}),
		rules:    rules,
	}, nil
}

// newGuard wraps an admission.Handler into controller-runtime's admission.Webhook and the
// guard.
func newGuard(name string, h admission.Handler) http.Handler {
	wh := &admission.Webhook{
		Handler: h,
		// A panic is a bug, but the answer must still be a denial, never a dropped
		// connection (the API server would retry against another replica) or an allow.
		RecoverPanic: ptrTo(true),
		// The default constructor adds six key/value pairs to the logger of every request,
		// at a cost of a dozen allocations, even when nothing is logged.
		LogConstructor: func(base logr.Logger, _ *admission.Request) logr.Logger { return base },
	}
	return &guard{name: name, next: wh}
}

func ptrTo[T any](v T) *T { return &v }

// Setup builds the webhooks and registers them on the manager's webhook server at
// MutatePath and ValidatePath, with a readiness check (ReadyzCheckName) that passes once
// the serving certificate is loaded and the CEL rules are compiled.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.CertHealthy == nil {
		return errors.New("webhook.Options.CertHealthy is required: readiness depends on the serving certificate")
	}
	h, err := NewHandlers(opts)
	if err != nil {
		return err
	}
	srv := mgr.GetWebhookServer()
	srv.Register(MutatePath, h.Mutate)
	srv.Register(ValidatePath, h.Validate)
	if err := mgr.AddReadyzCheck(ReadyzCheckName, ReadyCheck(h, opts.CertHealthy)); err != nil {
		return fmt.Errorf("adding the webhook readiness check: %w", err)
	}
	return nil
}

// ReadyCheck returns a readiness check that passes once certHealthy returns nil and h's CEL
// rules are compiled. A nil h or certHealthy is never ready.
func ReadyCheck(h *Handlers, certHealthy func() error) healthz.Checker {
	return func(*http.Request) error {
		switch {
		case h == nil || h.rules == nil:
			return errors.New("the CEL rules are not compiled")
		case certHealthy == nil:
			return errors.New("no serving certificate source")
		}
		if err := certHealthy(); err != nil {
			return fmt.Errorf("serving certificate: %w", err)
		}
		return nil
	}
}
