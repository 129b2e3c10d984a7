package webhook

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flink-admission/flink-admission/policy"
)

// TestValidateWarn posts the same reviews to the validating webhook and to the staged one:
// the staged webhook admits, with the staged warning, what only the webhook's rules deny,
// counts each warned rule once per write, and refuses what the CRD's rules refuse and what
// it cannot judge.
func TestValidateWarn(t *testing.T) {
	versionErr := field.Invalid(field.NewPath("spec", "flinkVersion"), "latest", policy.MessageFlinkVersion)
	staged := func(rule string, e *field.Error) string {
		return fmt.Sprintf(policy.WarningStagedFormat, rule, e.Error())
	}
	wrongKind := request(admissionv1.Create, jobCluster(), nil)
	wrongKind.Kind.Kind = "Pod"
	tests := []struct {
		name string
		req  *admissionv1.AdmissionRequest
		// enforced is the validating webhook's verdict; staged the staged webhook's.
		enforced, staged bool
		warnings         []string // the staged webhook's
		warned           map[string]float64
		denied           []string // the staged webhook's denial rules
	}{
		{
			name: "a write that breaks no rule", req: request(admissionv1.Create, jobCluster(), nil),
			enforced: true, staged: true,
		},
		{
			name:     "a webhook-only rule: denied, staged admits with the warning",
			req:      request(admissionv1.Create, set(jobCluster(), "spec.flinkVersion", "latest"), nil),
			staged:   true,
			warnings: []string{staged(policy.RuleFlinkVersion, versionErr)},
			warned:   map[string]float64{policy.RuleFlinkVersion: 1},
		},
		{
			name: "two errors of one webhook-only rule: one warned write",
			req: request(admissionv1.Create,
				set(set(jobCluster(), "spec.jobManager.ports.ui", int64(80)), "spec.jobManager.ports.query", int64(81)), nil),
			staged: true,
			warned: map[string]float64{policy.RulePort: 1},
		},
		{
			name:     "a rule the CRD carries as a CEL rule: denied by both",
			req:      request(admissionv1.Create, set(jobCluster(), "metadata.name", "Word_Count"), nil),
			warnings: []string{fmt.Sprintf(policy.WarningNotStagedFormat, policy.RuleNameDNS1035)},
			denied:   []string{policy.RuleNameDNS1035},
		},
		{
			name:   "a review of another kind: refused by both",
			req:    wrongKind,
			denied: []string{ruleWrongKind},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := post(t, testHandlers.Validate, reviewBody(tt.req)).response(t).Allowed; got != tt.enforced {
				t.Errorf("validating webhook: allowed %v, want %v", got, tt.enforced)
			}
			before := map[string]float64{}
			for _, r := range policy.Rules() {
				before[r.Name] = testutil.ToFloat64(testMetrics.warnedWrites.WithLabelValues(r.Name))
			}
			deniedBefore := map[string]float64{}
			for _, r := range tt.denied {
				deniedBefore[r] = testutil.ToFloat64(testMetrics.denials.WithLabelValues(webhookValidateWarn, r))
			}

			a := post(t, testHandlers.ValidateWarn, reviewBody(tt.req))
			if a.code != http.StatusOK {
				t.Fatalf("HTTP status %d, want 200: %s", a.code, a.body)
			}
			resp := a.response(t)
			if resp.Allowed != tt.staged {
				t.Fatalf("staged webhook: allowed %v, want %v: %s", resp.Allowed, tt.staged, a.body)
			}
			if tt.warnings != nil {
				if diff := cmp.Diff(tt.warnings, resp.Warnings); diff != "" {
					t.Errorf("warnings (-want +got):\n%s", diff)
				}
			}
			for _, r := range policy.Rules() {
				if got := testutil.ToFloat64(testMetrics.warnedWrites.WithLabelValues(r.Name)) - before[r.Name]; got != tt.warned[r.Name] {
					t.Errorf("warned writes of %s: +%v, want +%v", r.Name, got, tt.warned[r.Name])
				}
			}
			for _, r := range tt.denied {
				if got := testutil.ToFloat64(testMetrics.denials.WithLabelValues(webhookValidateWarn, r)) - deniedBefore[r]; got != 1 {
					t.Errorf("denials of validate-warn %s: +%v, want +1", r, got)
				}
			}
		})
	}
}

// TestWarnedWritesHaveASeriesPerStagedRule: a dashboard of the staged rollout sees a 0 for
// every rule that can be warned before any write is.
func TestWarnedWritesHaveASeriesPerStagedRule(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := 1 // deployment-without-controller
	for _, r := range policy.Rules() {
		if r.EnforcedBy == policy.EnforcedByWebhook {
			want++
		}
	}
	if got := testutil.CollectAndCount(m.warnedWrites); got != want {
		t.Errorf("%d series, want one per webhook-only rule (%d)", got, want)
	}
}
