package policy

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Validator validates FlinkClusters. Its zero value is ready to use.
type Validator struct {
	// Clock tells the time for the job-update rule (is the last savepoint recent enough to
	// update without taking a new one?). Nil means the real clock.
	Clock clock.PassiveClock
}

// ValidateCreate validates a new FlinkCluster with the real clock; see Validator.ValidateCreate.
func ValidateCreate(fc *v1beta1.FlinkCluster) (field.ErrorList, []string) {
	return Validator{}.ValidateCreate(fc)
}

// ValidateUpdate validates an update with the real clock; see Validator.ValidateUpdate.
func ValidateUpdate(old, fc *v1beta1.FlinkCluster) (field.ErrorList, []string) {
	return Validator{}.ValidateUpdate(old, fc)
}

// ValidateCreate returns every rule fc breaks, and warnings for accepted but doubtful
// settings. It does not assume that Default ran.
func (v Validator) ValidateCreate(fc *v1beta1.FlinkCluster) (field.ErrorList, []string) {
	if fc == nil {
		return field.ErrorList{noObject("new")}, nil
	}
	errs := validateObject(fc)
	deployErrs, _ := validateDeployment(fc, nil)
	errs = append(errs, deployErrs...)
	errs = append(errs, validateCancelOnCreate(fc, nil)...)
	errs = append(errs, validateUpgradeMode(fc)...)
	return errs, objectWarnings(fc)
}

// ValidateUpdate returns every rule the update from old to fc breaks, and warnings.
//
// Transition rules (immutable fields, no session/job switch, ...) and the update rules of
// the reference webhook (user-control annotation, cancelRequested, savepointGeneration, job
// updates) are errors. The other rules are ratcheted: an error the old object already had
// (same field, type and rule) becomes a warning, so that clusters created before a rule
// existed stay editable. The Deployment rules ratchet exactly as their CEL rules'
// optionalOldSelf clauses do. When the spec is unchanged, only the annotation rules run,
// as in the reference webhook; a spec that differs only by defaults counts as unchanged.
// An admitted spec change of a cluster whose job runs gets the upgrade plan as its last
// warning (updatePlan.warning): what the controller will do to the job's state. A change
// whose plan newly throws the running job's state away is refused unless it is confirmed
// (validateDiscardState).
func (v Validator) ValidateUpdate(old, fc *v1beta1.FlinkCluster) (field.ErrorList, []string) {
	switch {
	case fc == nil:
		return field.ErrorList{noObject("new")}, nil
	case old == nil:
		return field.ErrorList{noObject("old")}, nil
	}
	errs := validateTransitions(old, fc)
	errs = append(errs, validateUserControl(old, fc)...)
	if !specChanged(&old.Spec, &fc.Spec) {
		return errs, nil
	}

	updateErrs, done := v.validateSpecUpdate(old, fc)
	errs = append(errs, updateErrs...)
	if done {
		// A change of cancelRequested or savepointGeneration alone is a command, not a
		// new spec: the reference webhook accepts it without looking further.
		return errs, nil
	}

	objErrs, warnings := validateObjectUpdate(old, fc)
	errs = append(errs, objErrs...)
	warnings = append(warnings, objectWarnings(fc)...)
	if plan, ok := v.planUpdate(old, fc); ok {
		if discardsStateNewly(old, plan) {
			if e := validateDiscardState(old, fc, plan); e != nil {
				errs = append(errs, e)
			}
		} else if w := discardConfirmationUnused(old, fc); w != "" {
			warnings = append(warnings, w)
		}
		// An update that is refused does not happen: only an admitted one has a plan.
		if len(errs) == 0 {
			warnings = append(warnings, plan.warning(old, fc))
		}
	}
	return errs, warnings
}

// validateObjectUpdate is the part of an update of old to fc that judges fc as an object:
// the object rules, ratcheted against the violations old already had, and the rules of a
// Deployment JobManager, the cancel and the upgrade mode. ValidateStored asks it which of a
// stored cluster's violations its next update would still refuse.
func validateObjectUpdate(old, fc *v1beta1.FlinkCluster) (errs field.ErrorList, warnings []string) {
	if newErrs := validateObject(fc); len(newErrs) > 0 {
		kept, ratcheted := ratchet(newErrs, validateObject(old))
		errs = append(errs, kept...)
		warnings = append(warnings, ratcheted...)
	}
	deployErrs, deployWarnings := validateDeployment(fc, old)
	errs = append(errs, deployErrs...)
	warnings = append(warnings, deployWarnings...)
	errs = append(errs, validateCancelOnCreate(fc, old)...)
	errs = append(errs, validateUpgradeMode(fc)...)
	return errs, warnings
}

// now returns the validator's time.
func (v Validator) now() time.Time {
	if v.Clock == nil {
		return clock.RealClock{}.Now()
	}
	return v.Clock.Now()
}

// ruleKey identifies "the same violation" for ratcheting: the same rule on the same field.
type ruleKey struct {
	field  string
	typ    field.ErrorType
	origin string
}

func keyOf(e *field.Error) ruleKey {
	return ruleKey{field: e.Field, typ: e.Type, origin: e.Origin}
}

// ratchet splits the errors of the new object into those the old object did not have
// (kept) and those it had (returned as warnings).
func ratchet(newErrs, oldErrs field.ErrorList) (kept field.ErrorList, warnings []string) {
	seen := make(map[ruleKey]struct{}, len(oldErrs))
	for _, e := range oldErrs {
		seen[keyOf(e)] = struct{}{}
	}
	for _, e := range newErrs {
		if _, ok := seen[keyOf(e)]; ok {
			warnings = append(warnings, existingViolation(e))
		} else {
			kept = append(kept, e)
		}
	}
	return kept, warnings
}

// existingViolation is the warning text of a ratcheted error.
func existingViolation(e *field.Error) string {
	return fmt.Sprintf(WarningExistingViolationFormat, e.Error())
}

// noObject is the error for a missing object: fail closed rather than panic.
func noObject(which string) *field.Error {
	return &field.Error{Type: field.ErrorTypeInternal, Detail: "no " + which + " FlinkCluster to validate", Origin: RuleNoObject}
}

// objectWarnings returns the warnings about settings that are accepted but probably not
// what the user wants.
func objectWarnings(fc *v1beta1.FlinkCluster) []string {
	var warnings []string
	s := &fc.Spec
	if s.GetDeploymentType() == v1beta1.JobManagerDeploymentTypeDeployment &&
		s.Job != nil && s.Job.RestartPolicy != nil &&
		*s.Job.RestartPolicy == v1beta1.JobRestartPolicyFromSavepointOnFailure {
		warnings = append(warnings, WarningRestartPolicyWithDeployment)
	}
	if s.GetDeploymentType() == v1beta1.JobManagerDeploymentTypeJob && shutdownOnFinish(s.FlinkProperties) {
		warnings = append(warnings, WarningShutdownOnFinishOverridden)
	}
	if s.FlinkProperties[PropertyHALegacy] != "" {
		if s.FlinkProperties[PropertyHAType] != "" {
			warnings = append(warnings, WarningLegacyHAKeyIgnored)
		} else {
			warnings = append(warnings, WarningLegacyHAKey)
		}
	}
	if s.BatchSchedulerName != nil {
		warnings = append(warnings, WarningBatchSchedulerName)
	}
	if schedulerName(s) == VolcanoScheduler {
		warnings = append(warnings, WarningVolcanoNoGang)
	}
	// Before Flink 2.3 the controller passes the restore on the command line (Job mode: the
	// path; Deployment mode: $(FLINK_ADMISSION_RESTORE_PATH), which needs the path the HA
	// recovery puts in the savepoint's place once the job ran); only a Deployment without HA,
	// which the webhook denies but a stored cluster may keep, is left without it.
	if s.Job != nil && ptr.Deref(s.Job.AllowNonRestoredState, false) && flinkcluster.IgnoresAllowNonRestoredState(s.FlinkVersion) &&
		s.GetDeploymentType() == v1beta1.JobManagerDeploymentTypeDeployment && !flinkcluster.HAEnabled(s.FlinkProperties) {
		warnings = append(warnings, fmt.Sprintf(WarningAllowNonRestoredStateIgnoredFormat, s.FlinkVersion))
	}
	if j := s.Job; j != nil && isEmpty(j.SavepointsDir) {
		if ptr.Deref(j.AutoSavepointSeconds, 0) > 0 {
			warnings = append(warnings, fmt.Sprintf(WarningSavepointsWithoutDirFormat, "autoSavepointSeconds"))
		}
		if j.SavepointsToKeep != nil {
			warnings = append(warnings, fmt.Sprintf(WarningSavepointsWithoutDirFormat, "savepointsToKeep"))
		}
	}
	return warnings
}
