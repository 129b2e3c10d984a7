package policy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flink-admission/flink-admission/policy"
)

func TestStage(t *testing.T) {
	image := required(path("spec", "image", "name"), policy.RuleImage)
	port := invalid(path("spec", "jobManager", "ports", "ui"), 80, policy.RulePort)
	port2 := invalid(path("spec", "taskManager", "ports", "data"), 81, policy.RulePort)
	noController := forbidden(path("spec", "jobManager", "deploymentType"), policy.RuleDeploymentWithoutController)
	celRule := invalid(path("spec", "job", "parallelism"), 0, policy.RuleJobParallelism)
	schemaRule := invalid(path("spec", "taskManager", "replicas"), 0, policy.RuleTaskManagerReplicas)
	celRule2 := invalid(path("spec", "job", "parallelism"), -1, policy.RuleJobParallelism)
	discard := required(field.NewPath("metadata", "annotations").Key("flink-admission.dev/discard-state"), policy.RuleDiscardStateUnconfirmed)
	noRule := field.Invalid(path("spec"), 1, "made elsewhere")
	otherRule := field.Invalid(path("spec"), 1, "x").WithOrigin("not-a-rule")
	noObject, _ := policy.ValidateCreate(nil)

	staged := func(e *field.Error) string {
		return fmt.Sprintf(policy.WarningStagedFormat, policy.RuleOf(e), e.Error())
	}
	notStaged := func(rule string) string { return fmt.Sprintf(policy.WarningNotStagedFormat, rule) }
	cases := []struct {
		name         string
		errs         field.ErrorList
		wantErrors   field.ErrorList
		wantWarned   field.ErrorList
		wantWarnings []string
	}{
		{name: "allow: no errors"},
		{
			name:         "warn: a rule only the webhook enforces",
			errs:         field.ErrorList{image},
			wantWarned:   field.ErrorList{image},
			wantWarnings: []string{staged(image)},
		},
		{
			name:         "warn: every error of several webhook-only rules, in order",
			errs:         field.ErrorList{port, image, port2},
			wantWarned:   field.ErrorList{port, image, port2},
			wantWarnings: []string{staged(port), staged(image), staged(port2)},
		},
		{
			name:         "warn: the controller's scope, which only the webhook judges",
			errs:         field.ErrorList{noController},
			wantWarned:   field.ErrorList{noController},
			wantWarnings: []string{staged(noController)},
		},
		{
			name:         "deny: a rule the CRD carries as a CEL rule",
			errs:         field.ErrorList{celRule},
			wantErrors:   field.ErrorList{celRule},
			wantWarnings: []string{notStaged(policy.RuleJobParallelism)},
		},
		{
			name:         "deny: a rule the CRD's schema enforces",
			errs:         field.ErrorList{schemaRule},
			wantErrors:   field.ErrorList{schemaRule},
			wantWarnings: []string{notStaged(policy.RuleTaskManagerReplicas)},
		},
		{
			name:         "deny and warn: a CEL rule beside a webhook-only rule, one note per denied rule",
			errs:         field.ErrorList{celRule, image, celRule2},
			wantErrors:   field.ErrorList{celRule, celRule2},
			wantWarned:   field.ErrorList{image},
			wantWarnings: []string{staged(image), notStaged(policy.RuleJobParallelism)},
		},
		{
			name:         "deny: a webhook-only rule that guards the running job's state",
			errs:         field.ErrorList{discard, image},
			wantErrors:   field.ErrorList{discard},
			wantWarned:   field.ErrorList{image},
			wantWarnings: []string{staged(image), fmt.Sprintf(policy.WarningStateNotStagedFormat, policy.RuleDiscardStateUnconfirmed)},
		},
		{
			name:       "deny: an error of no rule (fail closed)",
			errs:       field.ErrorList{noRule, otherRule},
			wantErrors: field.ErrorList{noRule, otherRule},
		},
		{
			name:       "deny: no object",
			errs:       noObject,
			wantErrors: noObject,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := append(field.ErrorList(nil), tc.errs...)
			got := policy.Stage(tc.errs)
			if diff := cmp.Diff(tc.wantErrors, got.Errors, errorsOpts); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWarned, got.Warned, errorsOpts); diff != "" {
				t.Errorf("warned (-want +got):\n%s", diff)
			}
			checkWarnings(t, tc.wantWarnings, got.Warnings)
			if diff := cmp.Diff(in, tc.errs); diff != "" {
				t.Errorf("the input changed (-before +after):\n%s", diff)
			}
		})
	}
}

// TestStagedWarningNamesRuleAndField: a user reading the warning sees that it is staged, the
// rule, the field, why the write was let through and that the CRD's rules still apply.
func TestStagedWarningNamesRuleAndField(t *testing.T) {
	errs, _ := policy.ValidateCreate(makeFC("example").Image("").Obj())
	s := policy.Stage(errs)
	if len(s.Errors) != 0 || len(s.Warnings) != 1 {
		t.Fatalf("Stage(%v) = %+v, want one warning and no errors", errs, s)
	}
	const want = `staged enforcement: rule image would deny this write: spec.image.name: Required value: ` + policy.MessageImage +
		`; admitted because the namespace is labelled flink-admission.dev/enforcement=warn (the CRD's CEL and schema rules are the API server's and stay enforced)`
	if s.Warnings[0] != want {
		t.Errorf("warning\n got  %q\n want %q", s.Warnings[0], want)
	}
}

// TestEveryRuleHasAnEnforcement: Stage decides from EnforcedBy, so every rule that can
// deny a cluster must be known there, the controller's scope included.
func TestEveryRuleHasAnEnforcement(t *testing.T) {
	for _, r := range policy.Rules() {
		by, ok := policy.EnforcedBy(r.Name)
		if !ok || by != r.EnforcedBy {
			t.Errorf("EnforcedBy(%q) = %q, %v; want %q", r.Name, by, ok, r.EnforcedBy)
		}
	}
	if by, ok := policy.EnforcedBy(policy.RuleDeploymentWithoutController); !ok || by != policy.EnforcedByWebhook {
		t.Errorf("EnforcedBy(%q) = %q, %v; want the webhook's", policy.RuleDeploymentWithoutController, by, ok)
	}
	for _, rule := range []string{policy.RuleNoObject, policy.RuleUnknown, ""} {
		if by, ok := policy.EnforcedBy(rule); ok {
			t.Errorf("EnforcedBy(%q) = %q, want no rule", rule, by)
		}
	}
}

// TestStagedWarningNamesTheLabel: the warning names the label that staged the namespace.
func TestStagedWarningNamesTheLabel(t *testing.T) {
	if want := policy.EnforcementLabel + "=" + policy.EnforcementWarn; !strings.Contains(policy.WarningStagedFormat, want) {
		t.Errorf("WarningStagedFormat %q does not name %s", policy.WarningStagedFormat, want)
	}
}
