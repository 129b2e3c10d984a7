package paritycases

import (
	"slices"
	"testing"

	"github.com/flink-admission/flink-admission/policy"
)

// TestEveryCRDRuleHasCases checks, against the policy's list of rules, that the table
// holds a denial for every rule the CRD carries as a CEL rule, on the rule's field, and
// for every one an allowed case too: otherwise the parity test could not see the policy
// and the CRD disagree on it.
func TestEveryCRDRuleHasCases(t *testing.T) {
	cases := Cases()
	for _, r := range policy.Rules() {
		if r.EnforcedBy != policy.EnforcedByCRDRule {
			continue
		}
		t.Run(r.Name, func(t *testing.T) {
			found := slices.ContainsFunc(cases, func(c Case) bool {
				return !c.Allowed && slices.Contains(c.Paths, r.Field)
			})
			if !found {
				t.Errorf("no denial on %s in the parity table", r.Field)
			}
		})
	}
	if !slices.ContainsFunc(cases, func(c Case) bool { return c.Allowed }) {
		t.Error("no allowed case in the parity table")
	}
}
