package webhook

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// newTestManager returns a manager that is never started: Setup only registers.
func newTestManager(t *testing.T) ctrl.Manager {
	t.Helper()
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:1"}, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          crwebhook.NewServer(crwebhook.Options{Port: 0}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// TestSetup checks that Setup registers every webhook at its path on the manager's
// webhook server, and the readiness check.
func TestSetup(t *testing.T) {
	certErr := errors.New("no serving certificate loaded yet")
	var certHealthy error = certErr
	mgr := &recordingManager{Manager: newTestManager(t), readyz: map[string]healthz.Checker{}}
	if err := Setup(mgr, Options{CertHealthy: func() error { return certHealthy }}); err != nil {
		t.Fatal(err)
	}
	mux := mgr.GetWebhookServer().WebhookMux()
	for path, want := range map[string]string{
		MutatePath:       `"patchType":"JSONPatch"`,
		ValidatePath:     `"allowed":true`,
		ValidateWarnPath: `"allowed":true`,
	} {
		req := httptest.NewRequest(http.MethodPost, path,
			strings.NewReader(string(reviewBody(request(admissionv1.Create, deploymentCluster(), nil)))))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("%s: HTTP %d %s, want 200 with %s", path, rec.Code, rec.Body, want)
		}
	}
	check := mgr.readyz[ReadyzCheckName]
	if check == nil {
		t.Fatalf("no readiness check %q was added", ReadyzCheckName)
	}
	if err := check(nil); !errors.Is(err, certErr) {
		t.Errorf("readiness before the certificate is loaded: %v, want %v", err, certErr)
	}
	certHealthy = nil
	if err := check(nil); err != nil {
		t.Errorf("readiness once the certificate is loaded: %v", err)
	}
}

// recordingManager records the readiness checks added to it.
type recordingManager struct {
	ctrl.Manager
	readyz map[string]healthz.Checker
}

func (m *recordingManager) AddReadyzCheck(name string, check healthz.Checker) error {
	m.readyz[name] = check
	return m.Manager.AddReadyzCheck(name, check)
}

func TestSetupRequiresCertHealthy(t *testing.T) {
	if err := Setup(newTestManager(t), Options{}); err == nil {
		t.Error("Setup without CertHealthy succeeded, want an error")
	}
}
