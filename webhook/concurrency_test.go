package webhook

import (
	"bytes"
	"net/http"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// TestConcurrentReviews serves different reviews at once on the same handlers: each gets
// its own answer (run with -race to check the handlers share no request state).
func TestConcurrentReviews(t *testing.T) {
	type tc struct {
		h       http.Handler
		body    []byte
		allowed bool
	}
	cases := []tc{
		{testHandlers.Validate, reviewBody(request(admissionv1.Create, jobCluster(), nil)), true},
		{testHandlers.Validate, reviewBody(request(admissionv1.Create, set(deploymentCluster(), "spec.job.mode", "Detached"), nil)), false},
		{testHandlers.Mutate, reviewBody(request(admissionv1.Create, deploymentCluster(), nil)), true},
		{testHandlers.Mutate, []byte(`{}`), false},
	}
	var wg sync.WaitGroup
	for i := range 40 {
		c := cases[i%len(cases)]
		wg.Go(func() {
			a := serve(c.h, "/", c.body)
			allowed := a.Code == http.StatusOK && bytes.Contains(a.Body.Bytes(), []byte(`"allowed":true`))
			if allowed != c.allowed {
				t.Errorf("review %d: allowed %v, want %v: %s", i, allowed, c.allowed, a.Body)
			}
		})
	}
	wg.Wait()
}
