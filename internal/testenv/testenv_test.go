package testenv

import (
	"strings"
	"testing"
)

// TestStartInstallsCRD proves the generated CRD — with every CEL rule — is accepted by a real
// API server (cost limits, field paths) and that kubectl reaches the control plane.
func TestStartInstallsCRD(t *testing.T) {
	env, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	out, err := env.Kubectl("get", "crd", "flinkclusters.flinkoperator.k8s.io", "-o", "jsonpath={.status.conditions[?(@.type=='Established')].status}").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl: %v: %s", err, out)
	}
	if strings.TrimSpace(string(out)) != "True" {
		t.Fatalf("CRD not established: %q", out)
	}
}
