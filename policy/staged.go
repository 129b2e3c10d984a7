package policy

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Staged enforcement: a namespace with the label EnforcementLabel=EnforcementWarn gets
// warnings instead of denials for the rules that only the webhook enforces, so that a rule
// can be rolled out namespace by namespace. The webhook configurations send its writes to
// the staged validating webhook (its own path and namespaceSelector), which calls Stage.
const (
	// EnforcementLabel is the namespace label that selects staged enforcement.
	EnforcementLabel = "flink-admission.dev/enforcement"
	// EnforcementWarn is the value of EnforcementLabel that turns the webhook's own denials
	// into warnings.
	EnforcementWarn = "warn"
)

// The warnings of staged enforcement. Each starts with the rule and the field error, so
// that the API server's truncation of many long warnings (256 runes each beyond 4 KiB in
// all) keeps what the user needs.
const (
	// WarningStagedFormat (formatted with the rule and the field error's Error()): an error of
	// a rule only the webhook enforces, admitted because the namespace is staged.
	WarningStagedFormat = "staged enforcement: rule %s would deny this write: %s; admitted because the namespace is labelled flink-admission.dev/enforcement=warn (the CRD's CEL and schema rules are the API server's and stay enforced)"

	// WarningNotStagedFormat (formatted with the rule): an error that stays a denial in a
	// staged namespace because the CRD enforces the rule too.
	WarningNotStagedFormat = "staged enforcement: rule %s is enforced in this namespace too: the CRD carries it (the API server's CEL and schema rules are not staged)"

	// WarningStateNotStagedFormat (formatted with the rule): an error of a rule that guards a
	// running job's state, which stays a denial in a staged namespace: a warning would come
	// after the state is gone.
	WarningStateNotStagedFormat = "staged enforcement: rule %s is enforced in this namespace too: it guards the running job's state, which a warning would not keep"
)

// guardsState is the set of rules staged enforcement never turns into warnings
// (RuleInfo.GuardsState).
var guardsState = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range rules {
		if r.GuardsState {
			m[r.Name] = true
		}
	}
	return m
}()

// StagedVerdict is what staged enforcement makes of a policy's errors.
type StagedVerdict struct {
	// Errors are still denied: rules the CRD enforces too (the API server would deny the
	// write anyway), and errors of no known rule (fail closed).
	Errors field.ErrorList
	// Warned are the errors turned into warnings: rules only the webhook enforces.
	Warned field.ErrorList
	// Warnings are the texts to return: one per warned error (WarningStagedFormat), then
	// one per rule the CRD enforces too that is still denied (WarningNotStagedFormat).
	Warnings []string
}

// Stage sorts a policy's errors for a namespace under staged enforcement: the errors of
// rules only the webhook enforces (EnforcedByWebhook) become warnings, except the rules that
// guard a running job's state (RuleInfo.GuardsState); the others stay errors. errs is not modified.
func Stage(errs field.ErrorList) StagedVerdict {
	var s StagedVerdict
	var denied []string
	for _, e := range errs {
		rule := RuleOf(e)
		by, ok := EnforcedBy(rule)
		if ok && by == EnforcedByWebhook && !guardsState[rule] {
			s.Warned = append(s.Warned, e)
			s.Warnings = append(s.Warnings, fmt.Sprintf(WarningStagedFormat, rule, e.Error()))
			continue
		}
		s.Errors = append(s.Errors, e)
		if ok && !slices.Contains(denied, rule) {
			denied = append(denied, rule)
		}
	}
	for _, rule := range denied {
		format := WarningNotStagedFormat
		if guardsState[rule] {
			format = WarningStateNotStagedFormat
		}
		s.Warnings = append(s.Warnings, fmt.Sprintf(format, rule))
	}
	return s
}

// EnforcedBy returns where a rule is enforced, from the rule list (Rules); false for a
// name that is no rule of the policy.
func EnforcedBy(rule string) (Enforcement, bool) {
	by, ok := enforcement[rule]
	return by, ok
}

// enforcement is every rule's Enforcement by name: the rule list, and the rule of the
// controller's scope, which only the webhook can judge (it depends on the install).
var enforcement = func() map[string]Enforcement {
	m := make(map[string]Enforcement, len(rules)+1)
	for _, r := range rules {
		m[r.Name] = r.EnforcedBy
	}
	m[RuleDeploymentWithoutController] = EnforcedByWebhook
	return m
}()
