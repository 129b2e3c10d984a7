package policy

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// ValidateStored judges a stored cluster by the policy as it is now, for an audit: errs are
// the rules fc breaks as if it were created now (ValidateCreate), and ratcheted[i] says
// whether an update of the spec that leaves errs[i] as it is would be admitted with it as a
// warning (ratcheting, see ValidateUpdate): such a cluster stays editable, and the violation
// surfaces only when someone reads the warning. The others refuse every change of the spec
// until they are fixed.
//
// stored is the object as the API server stores it, the old object of that next update; fc
// is the object the validating webhook would judge: stored after the mutating webhook
// (Default on a copy), as on every create and update. A cluster created while the webhooks
// were off has no defaults, which the next write adds.
//
// The update rules that depend on the change itself (immutable fields, the job-update
// rules, the user-control annotation) are not judged: the audit knows no change.
func (v Validator) ValidateStored(stored, fc *v1beta1.FlinkCluster) (errs field.ErrorList, ratcheted []bool, warnings []string) {
	if stored == nil || fc == nil {
		return field.ErrorList{noObject("stored")}, []bool{false}, nil
	}
	errs, warnings = v.ValidateCreate(fc)
	if len(errs) == 0 {
		return errs, nil, warnings
	}
	// What ValidateUpdate refuses of fc after stored, its per-object part: the rules it
	// ratchets drop the violations stored already had.
	refused, _ := validateObjectUpdate(stored, fc)
	still := make(map[ruleKey]struct{}, len(refused))
	for _, e := range refused {
		still[keyOf(e)] = struct{}{}
	}
	ratcheted = make([]bool, len(errs))
	for i, e := range errs {
		_, refuses := still[keyOf(e)]
		ratcheted[i] = !refuses
	}
	return errs, ratcheted, warnings
}
