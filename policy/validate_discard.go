package policy

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// DiscardStateAnnotation confirms an update that throws a running job's state away. Its value
// must be the ID of the job whose state is thrown away (status.components.job.id): every
// deploy that does not resume from Flink's HA store gets a new job ID, so the annotation
// confirms one loss only. One copied from another cluster names another job, and one left in
// a manifest names a job that no longer runs once the confirmed redeploy is made.
const DiscardStateAnnotation = "flink-admission.dev/discard-state"

var pathDiscardState = field.NewPath("metadata", "annotations").Key(DiscardStateAnnotation)

// discardsStateNewly reports whether the update's plan p newly throws the running job's
// state away: p starts the next deploy from empty state, and the plan of the stored spec
// (flinkcluster.PlanUpgrade on old, as the webhook asks it) would have kept the state. A
// cluster already stateless is its owner's standing choice. The stored plan is asked without
// a restore answer: RestoreAnnotation is a one-off answer the controller removes once it acted
// on it, never a standing choice, and one left on a running job (or put back by a GitOps sync)
// would throw the state away at the next update.
func discardsStateNewly(old *v1beta1.FlinkCluster, p updatePlan) bool {
	if !p.redeploy || !p.u.EmptyState {
		return false
	}
	_, bounded := flinkcluster.LastStateMaxCheckpointAge(old.Spec.FlinkProperties)
	return !flinkcluster.PlanUpgrade(&old.Spec, &old.Status, planObservation(nil, bounded, p.now), p.now).EmptyState
}

// validateDiscardState refuses an update that newly throws the running job's state away
// (discardsStateNewly), unless DiscardStateAnnotation names the job. The denial says what is
// lost and how to confirm.
func validateDiscardState(old, fc *v1beta1.FlinkCluster, p updatePlan) *field.Error {
	job := old.Status.Components.Job
	value, set := fc.Annotations[DiscardStateAnnotation]
	if set && job.ID != "" && value == job.ID {
		return nil
	}
	cause := p.u.Why
	switch {
	case p.u.How == flinkcluster.UpgradeStateless:
		cause = "spec.job.upgradeMode stateless"
	case p.obs.RestoreChoice != nil:
		cause = "annotation " + flinkcluster.RestoreAnnotation + "=" + flinkcluster.RestoreEmptyState
	}
	var detail string
	if job.ID == "" {
		detail = planf(MessageDiscardStateNoJobIDFormat, cause)
	} else {
		savepoint := "none recorded"
		if job.SavepointLocation != "" {
			savepoint = job.SavepointLocation
			if job.SavepointTime != "" {
				savepoint += " of " + job.SavepointTime
			}
		}
		detail = planf(MessageDiscardStateFormat, job.ID, cause, savepoint, DiscardStateAnnotation, job.ID)
	}
	if !set {
		return field.Required(pathDiscardState, detail).WithOrigin(RuleDiscardStateUnconfirmed)
	}
	return field.Invalid(pathDiscardState, value, MessageDiscardStateOtherJob+detail).WithOrigin(RuleDiscardStateUnconfirmed)
}

// discardConfirmationUnused is the warning for DiscardStateAnnotation naming the running job
// on an update that throws no state away: left on the cluster, it would confirm a later
// update that does, unasked (a last-state redeploy keeps the job ID). "" otherwise.
func discardConfirmationUnused(old, fc *v1beta1.FlinkCluster) string {
	value, set := fc.Annotations[DiscardStateAnnotation]
	job := old.Status.Components.Job
	if !set || value == "" || job == nil || value != job.ID {
		return ""
	}
	return planf(WarningDiscardStateUnusedFormat, DiscardStateAnnotation, value)
}
