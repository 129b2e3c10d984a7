package policy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

var (
	pathDeploymentType   = field.NewPath("spec", "jobManager", "deploymentType")
	pathTMDeploymentType = field.NewPath("spec", "taskManager", "deploymentType")
	pathJob              = field.NewPath("spec", "job")
	pathSavepointsDir    = pathJob.Child("savepointsDir")
	pathSavepointGen     = pathJob.Child("savepointGeneration")
	pathUserControl      = field.NewPath("metadata", "annotations").Key(v1beta1.ControlAnnotation)
	userControls         = []string{v1beta1.ControlNameSavepoint, v1beta1.ControlNameJobCancel}
)

// validateTransitions checks the CRD's transition rules: what may not change between the
// old and the new object. They compare effective values, so unset and its default are
// the same (an unset deploymentType is Job), and a nil jobManager or taskManager is unset.
func validateTransitions(old, fc *v1beta1.FlinkCluster) field.ErrorList {
	var errs field.ErrorList
	o, n := &old.Spec, &fc.Spec
	if o.GetDeploymentType() != n.GetDeploymentType() {
		errs = append(errs, field.Forbidden(pathDeploymentType,
			fmt.Sprintf("deploymentType is immutable (unset means Job): delete and recreate the cluster to change it from %s to %s",
				o.GetDeploymentType(), n.GetDeploymentType())).WithOrigin(RuleDeploymentTypeImmutable))
	}
	if o.TaskManager.GetDeploymentType() != n.TaskManager.GetDeploymentType() {
		errs = append(errs, field.Forbidden(pathTMDeploymentType, MessageTaskManagerDeploymentTypeImmutable).
			WithOrigin(RuleTaskManagerDeploymentTypeImmutable))
	}
	if (o.Job == nil) != (n.Job == nil) {
		errs = append(errs, field.Forbidden(pathJob, MessageClusterTypeImmutable).
			WithOrigin(RuleClusterTypeImmutable))
	}
	if o.Job != nil && !isEmpty(o.Job.SavepointsDir) && (n.Job == nil || isEmpty(n.Job.SavepointsDir)) {
		errs = append(errs, field.Required(pathSavepointsDir, MessageSavepointsDirRemoved).WithOrigin(RuleSavepointsDirRemoved))
	}
	if o.Job != nil && isTrue(o.Job.CancelRequested) && (n.Job == nil || !isTrue(n.Job.CancelRequested)) {
		errs = append(errs, field.Forbidden(pathCancelRequest, MessageCancelIrreversible).
			WithOrigin(RuleCancelIrreversible))
	}
	if flinkcluster.HAEnabled(o.FlinkProperties) != flinkcluster.HAEnabled(n.FlinkProperties) {
		errs = append(errs, field.Forbidden(pathFlinkProps, MessageHAImmutable).
			WithOrigin(RuleHAImmutable))
	}
	return errs
}

// validateUserControl checks a new or changed user-control annotation against the old
// object: a known control, no change while a control runs, and a job it applies to. An
// annotation that did not change was judged when it was set: the job's state has moved on
// since, and judging it again would block unrelated updates until the operator removes it.
func validateUserControl(old, fc *v1beta1.FlinkCluster) field.ErrorList {
	value, ok := fc.Annotations[v1beta1.ControlAnnotation]
	if !ok {
		return nil
	}
	if oldValue, had := old.Annotations[v1beta1.ControlAnnotation]; had && oldValue == value {
		return nil
	}
	var errs field.ErrorList
	if c := old.Status.Control; c != nil && c.State == v1beta1.ControlStateInProgress {
		errs = append(errs, field.Forbidden(pathUserControl,
			fmt.Sprintf("cannot change while the %s control is in progress", c.Name)).WithOrigin(RuleUserControlInProgress))
	}
	notApplicable := func(detail string) {
		errs = append(errs, field.Forbidden(pathUserControl, detail).WithOrigin(RuleUserControlNotApplicable))
	}
	job, status := old.Spec.Job, old.Status.Components.Job
	switch value {
	case v1beta1.ControlNameJobCancel:
		switch {
		case job == nil:
			notApplicable("job-cancel is not allowed for a session cluster")
		case status == nil || jobTerminated(status, &old.Spec):
			notApplicable("job-cancel is not allowed: the job has not started yet or has already terminated")
		}
	case v1beta1.ControlNameSavepoint:
		switch {
		case job == nil:
			notApplicable(MessageUserControlNotApplicable)
		case isEmpty(job.SavepointsDir):
			notApplicable("savepoint is not allowed without spec.job.savepointsDir")
		case status == nil || jobStopped(status):
			notApplicable("savepoint is not allowed: the job has not started yet or has already stopped")
		}
	default:
		errs = append(errs, field.NotSupported(pathUserControl, value, userControls).WithOrigin(RuleUserControlValue))
	}
	return errs
}

// validateSpecUpdate checks the reference webhook's rules for a changed spec: the
// cancelRequested and savepointGeneration commands, which must come alone, and the job
// update rules. done is true when the update is a valid command alone, which needs no
// further checks.
func (v Validator) validateSpecUpdate(old, fc *v1beta1.FlinkCluster) (errs field.ErrorList, done bool) {
	oj, nj := old.Spec.Job, fc.Spec.Job
	if oj == nil || nj == nil {
		return nil, false // a session cluster, or a switch the transition rules reject
	}

	if !isTrue(oj.CancelRequested) && isTrue(nj.CancelRequested) {
		if onlyJobChange(&old.Spec, &fc.Spec, func(j *v1beta1.JobSpec) { j.CancelRequested = nj.CancelRequested }) {
			return nil, true
		}
		errs = append(errs, field.Forbidden(pathCancelRequest, MessageCancelAlone).WithOrigin(RuleCancelAlone))
	}

	if oj.SavepointGeneration != nj.SavepointGeneration {
		next := flinkcluster.NextSavepointGeneration(old.Status.Components.Job)
		valid := nj.SavepointGeneration == next
		alone := onlyJobChange(&old.Spec, &fc.Spec, func(j *v1beta1.JobSpec) { j.SavepointGeneration = nj.SavepointGeneration })
		if valid && alone {
			return errs, true
		}
		if !valid {
			errs = append(errs, field.Invalid(pathSavepointGen, nj.SavepointGeneration,
				fmt.Sprintf("can only be set to %d: status.components.job.savepointGeneration + 1", next)).
				WithOrigin(RuleSavepointGeneration))
		}
		if !alone {
			errs = append(errs, field.Forbidden(pathSavepointGen, MessageSavepointGenerationAlone).WithOrigin(RuleSavepointGenerationAlone))
		}
	}
	return append(errs, v.validateJobUpdate(old, fc)...), false
}

// onlyJobChange reports whether newSpec means oldSpec with only set applied to the job.
func onlyJobChange(oldSpec, newSpec *v1beta1.FlinkClusterSpec, set func(*v1beta1.JobSpec)) bool {
	s := oldSpec.DeepCopy()
	set(s.Job)
	return !specChanged(s, newSpec)
}

// validateJobUpdate checks that the job of a changed job cluster can carry its state over:
// the operator restarts the job from a savepoint, so the cluster needs a savepointsDir
// from the start, and when no savepoint is taken before the update (takeSavepointOnUpdate
// false, or the job stopped), a recent enough one must exist, unless fromSavepoint names a
// savepoint the update restores (flinkcluster.UpdateRestore: one other than the running
// revision's, as the controller decides it; a fromSavepoint left as it was is not restored
// again and does not count).
func (v Validator) validateJobUpdate(old, fc *v1beta1.FlinkCluster) field.ErrorList {
	oj, nj := old.Spec.Job, fc.Spec.Job
	switch {
	case oj == nil || nj == nil:
		return nil
	case isEmpty(oj.SavepointsDir) && flinkcluster.SavepointUpgrades(nj):
		return field.ErrorList{field.Forbidden(pathJob, MessageJobUpdateRequiresSavepointsDir).
			WithOrigin(RuleJobUpdateRequiresSavepointsDir)}
	case isEmpty(nj.SavepointsDir):
		return nil // removal is a transition error
	case !flinkcluster.SavepointUpgrades(nj):
		// stateless carries no state on purpose; last-state carries it in Flink's HA store
		// (the controller stops with SavepointRequired when that holds nothing newer than
		// the job's savepoints), so neither needs a savepoint here.
		return nil
	}
	status := old.Status.Components.Job
	if _, ok := flinkcluster.UpdateRestore(status, nj); ok {
		return nil // the update restores the savepoint it names: it needs no other
	}
	takeSavepoint := nj.TakeSavepointOnUpdate == nil || *nj.TakeSavepointOnUpdate
	skipSavepoint := !takeSavepoint || jobStopped(status)
	if skipSavepoint && status != nil && !jobUpdateReady(status, nj, v.now()) {
		return field.ErrorList{field.Forbidden(pathJob, MessageJobUpdateRequiresRecentSavepoint).
			WithOrigin(RuleJobUpdateRequiresRecentSavepoint)}
	}
	return nil
}
