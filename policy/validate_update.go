package policy

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

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

// maxPlanWarningRunes bounds an upgrade plan warning well below the API server's limit of 256
// runes a warning (k8s.io/apiserver truncates past it, and past 4 KiB in all); a savepoint
// path that would not fit is shortened in its middle.
const (
	maxPlanWarningRunes = 240
	maxPlanPathRunes    = 48
)

// updatePlan is the controller's upgrade decision on an update of a running job, asked as
// the webhook can ask it (see planUpdate).
type updatePlan struct {
	// redeploy is false when the update makes no new revision: the job runs on as it is.
	redeploy bool
	u        flinkcluster.Upgrade
	obs      flinkcluster.UpgradeObservation
	// status is the stored status as the controller decides on it: the update's revision next.
	status v1beta1.FlinkClusterStatus
	now    time.Time
	// maxAge is the last-state max checkpoint age of the new spec; bounded says it is set.
	maxAge  time.Duration
	bounded bool
}

// planUpdate asks the controller's upgrade decision (flinkcluster.PlanUpgrade, the function
// the controller calls) how the update from old to fc carries the job's state. ok is false
// when the job does not run by the stored status, or the cluster is a session cluster: then
// there is no plan. The webhook has no word from Flink: the stored status says the job runs,
// so the decision is asked as for a job Flink reports RUNNING, whose HA store offers a fresh
// checkpoint (see planObservation).
func (v Validator) planUpdate(old, fc *v1beta1.FlinkCluster) (p updatePlan, ok bool) {
	job := old.Status.Components.Job
	if fc.Spec.Job == nil || job == nil || job.State != v1beta1.JobStateRunning {
		return p, false
	}
	// The controller redeploys a running job for a new revision only (the restore annotation
	// answers a stop, it starts no update). A spec that cannot be hashed is taken as a
	// redeploy: the plan then says what a redeploy does, never that the job is left alone when
	// it may not be.
	if redeploy, err := flinkcluster.RedeployNeeded(&old.Spec, &fc.Spec); err == nil && !redeploy {
		return p, true
	}
	p.redeploy, p.now = true, v.now()
	p.maxAge, p.bounded = flinkcluster.LastStateMaxCheckpointAge(fc.Spec.FlinkProperties)
	p.obs = planObservation(flinkcluster.RestoreChoice(fc.Annotations), p.bounded, p.now)
	// The controller decides on the status it records first, a new revision next. The decision
	// reads only that it differs from the current one, so neither a hash nor a deep copy is
	// made: PlanUpgrade reads the status, it never writes it.
	p.status = old.Status
	p.status.Revision.NextRevision = old.Status.Revision.CurrentRevision + "+next"
	p.u = flinkcluster.PlanUpgrade(&fc.Spec, &p.status, p.obs, p.now)
	return p, true
}

// planObservation is what the webhook tells the upgrade decision of a job the stored status
// records running: Flink reports it RUNNING, and its HA store offers a checkpoint, triggered
// now when a max checkpoint age bounds it (the warning says what a last-state plan depends
// on).
func planObservation(restore *string, bounded bool, now time.Time) flinkcluster.UpgradeObservation {
	obs := flinkcluster.UpgradeObservation{
		RestoreChoice: restore,
		FlinkAnswered: true,
		FlinkJobState: flinkcluster.FlinkJobRunning,
		LastState:     flinkcluster.LastStateOffer{Available: true},
	}
	if bounded {
		obs.Checkpoints = &flinkcluster.CheckpointTimes{LatestCompleted: now}
	}
	return obs
}

// warning is the upgrade plan of the update from old to fc as a warning. What Flink's HA
// store holds is unknown to the webhook, so a last-state plan is asked again without a
// checkpoint, and says both.
func (p updatePlan) warning(old, fc *v1beta1.FlinkCluster) string {
	if !p.redeploy {
		return WarningPlanNoRedeploy
	}
	nj := fc.Spec.Job
	dir := planPath(ptr.Deref(nj.SavepointsDir, ""), "the configured savepoint directory")
	var w string
	switch p.u.How {
	case flinkcluster.UpgradeStateless:
		w = WarningPlanStateless
	case flinkcluster.UpgradeWait:
		w = planf(WarningPlanWaitFormat, p.u.Why)
	case flinkcluster.UpgradeLastState:
		bound := ""
		if p.bounded {
			bound = planf(WarningPlanLastStateBoundFormat, p.maxAge.String())
		}
		obs := p.obs
		obs.LastState, obs.Checkpoints = flinkcluster.LastStateOffer{}, nil
		fallback := WarningPlanFallbackNoStop
		switch fb := flinkcluster.PlanUpgrade(&fc.Spec, &p.status, obs, p.now); {
		case fb.Stop:
			fallback = planf(WarningPlanFallbackStopFormat, dir)
		case fb.SpecRestore != "":
			fallback = planf(WarningPlanFallbackFromSavepointFormat, planPath(fb.SpecRestore, ""))
		}
		w = planf(WarningPlanLastStateFormat, bound, fallback)
	default:
		w = savepointPlan(p.u, p.obs.RestoreChoice, old.Status.Components.Job, nj, dir)
	}
	return boundRunes(w, maxPlanWarningRunes)
}

// savepointPlan is the warning of a savepoint upgrade. The controller stops the job with a
// savepoint unless the user's restore answer or a new spec.job.fromSavepoint names what to
// restore (cycle.startUpdate), or takeSavepointOnUpdate is false.
func savepointPlan(u flinkcluster.Upgrade, restore *string, job *v1beta1.JobStatus, nj *v1beta1.JobSpec, dir string) string {
	if restore != nil {
		from := "empty state"
		if *restore != "" {
			from = planPath(*restore, "")
		}
		return planf(WarningPlanRestoreChoiceFormat, from, flinkcluster.RestoreAnnotation)
	}
	if from, ok := flinkcluster.UpdateRestore(job, nj); ok {
		return planf(WarningPlanFromSavepointFormat, planPath(from, ""))
	}
	if !u.Stop {
		return planf(WarningPlanNoStopFormat, planPath(job.SavepointLocation, "(none recorded)"))
	}
	why := "upgradeMode savepoint"
	if nj.GetUpgradeMode() == v1beta1.UpgradeModeLastState {
		// The first clause says why last-state is out (a flinkVersion change, no HA); the
		// rest explains it at a length the warning has no room for.
		why = "upgradeMode last-state"
		if reason, _, _ := strings.Cut(u.NoLastState, ": "); reason != "" {
			why += ", but " + reason
		}
	}
	return planf(WarningPlanSavepointFormat, dir, why)
}

// planf fills the %s verbs of a plan format with args in order. It is fmt.Sprintf for
// strings alone, without boxing each argument: the plan is written on every admitted update
// of a running job.
func planf(format string, args ...string) string {
	n := len(format)
	for _, a := range args {
		n += len(a)
	}
	var b strings.Builder
	b.Grow(n)
	for _, a := range args {
		before, after, found := strings.Cut(format, "%s")
		if !found {
			break
		}
		b.WriteString(before)
		b.WriteString(a)
		format = after
	}
	b.WriteString(format)
	return b.String()
}

// planPath is a path as the plan shows it: shortened in its middle past maxPlanPathRunes, or
// none when it is empty.
func planPath(p, none string) string {
	p = strings.TrimSpace(p)
	switch {
	case p == "":
		return none
	case utf8.RuneCountInString(p) <= maxPlanPathRunes:
		return p
	}
	r := []rune(p)
	half := (maxPlanPathRunes - 1) / 2
	return string(r[:half]) + "…" + string(r[len(r)-half:])
}

// boundRunes cuts s to at most n runes, the last one an ellipsis when it was cut.
func boundRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
