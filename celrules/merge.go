package celrules

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Merge returns the policy's errors followed by the CEL rules' errors that the
// policy did not already report. The policy mirrors every CEL rule with the same field path
// and type, so one violation found by both is reported once, with the policy's detail
// (which may say more than the rule's fixed message).
//
// A CEL rule without a fieldPath that sits on the root of the object (the name rules) is
// reported at the nil path, where the policy names the field: such an error is the same
// violation when its type and message equal a policy error's.
func Merge(policyErrs, celErrs field.ErrorList) field.ErrorList {
	if len(celErrs) == 0 {
		return policyErrs
	}
	merged := policyErrs
	for _, c := range celErrs {
		if !slices.ContainsFunc(policyErrs, func(p *field.Error) bool { return sameViolation(p, c) }) {
			merged = append(merged, c)
		}
	}
	return merged
}

// rootField is how a field.Error names the object itself (a nil *field.Path).
const rootField = "<nil>"

// sameViolation reports whether the CEL error c reports the policy error p again.
func sameViolation(p, c *field.Error) bool {
	if p.Type != c.Type {
		return false
	}
	if p.Field == c.Field {
		return true
	}
	return (c.Field == rootField || c.Field == "") && p.Detail == c.Detail
}
