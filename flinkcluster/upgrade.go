package flinkcluster

// The upgrade decision: how an update carries the job's state to the next deploy. It is one
// pure function of the spec, the stored status, what the controller observed and the time, so
// that the controller's update flow, its fallbacks and the admission policy decide by the same
// rules (after the Flink Kubernetes operator's AbstractJobReconciler.getJobUpgrade).

import (
	"fmt"
	"strings"
	"time"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// UpgradeHow is how an update carries the job's state.
type UpgradeHow string

const (
	// UpgradeSavepoint deploys the next revision from a savepoint: the running job's final
	// savepoint (stop-with-savepoint), or one the controller confirms holds its newest state.
	UpgradeSavepoint UpgradeHow = "Savepoint"
	// UpgradeLastState keeps Flink's HA checkpoint store and deploys the next revision under
	// the same job ID, so that its JobMaster restores the newest completed checkpoint.
	UpgradeLastState UpgradeHow = "LastState"
	// UpgradeStateless deploys the next revision from empty state, as upgradeMode stateless
	// asks.
	UpgradeStateless UpgradeHow = "Stateless"
	// UpgradeWait decides nothing yet: what a safe choice needs cannot be had now (the job is
	// restarting, a checkpoint is in progress, a version change waits for the job to run). The
	// caller waits, bounded, and decides again on its next look.
	UpgradeWait UpgradeHow = "Wait"
)

// Upgrade is the decision PlanUpgrade returns.
type Upgrade struct {
	// How the next deploy gets the job's state.
	How UpgradeHow
	// Stop is set when the running job is to be stopped with a savepoint first.
	Stop bool
	// Why says, in words for the user, why this way was chosen.
	Why string
	// NoLastState says why a last-state redeploy is not an option ("" when it is): the update
	// flow's fallback, for a job that cannot take a savepoint, consults it.
	NoLastState string
	// Refused is set when the way the upgrade mode asks for was refused (a last-state update
	// whose checkpoint is too old, across a version change, ...): the user is told why.
	Refused bool
	// EmptyState is set when the next deploy restores nothing: upgradeMode stateless, or the
	// user's restore answer RestoreEmptyState. The running job's state is then thrown away,
	// which the admission policy asks the user to confirm.
	EmptyState bool
}

// SavepointUpgrades reports whether the job's upgrade mode carries its state by savepoints
// (upgradeMode savepoint, the default): such a job needs spec.job.savepointsDir to be updated.
func SavepointUpgrades(j *v1beta1.JobSpec) bool {
	return j.GetUpgradeMode() == v1beta1.UpgradeModeSavepoint
}

// modeKeepsState says of every upgrade mode whether it carries the job's state across
// redeploys. A new mode must say it here (a test checks every mode of v1beta1.UpgradeModes).
var modeKeepsState = map[v1beta1.UpgradeMode]bool{
	v1beta1.UpgradeModeSavepoint: true,
	v1beta1.UpgradeModeLastState: true,
	v1beta1.UpgradeModeStateless: false,
}

// KeepsState reports whether the job's upgrade mode carries its state across redeploys at all:
// only such a job falls back to Flink's HA store, or waits for it. A mode modeKeepsState does
// not know (admission refuses one) keeps state: nothing is thrown away on a guess.
func KeepsState(j *v1beta1.JobSpec) bool {
	keeps, known := modeKeepsState[j.GetUpgradeMode()]
	return keeps || !known
}

// NeedsCheckpointTimes reports whether PlanUpgrade reads the running job's checkpoint
// statistics (UpgradeObservation.Checkpoints): last-state under a max checkpoint age.
func NeedsCheckpointTimes(spec *v1beta1.FlinkClusterSpec, obs UpgradeObservation) bool {
	if spec == nil || spec.Job.GetUpgradeMode() != v1beta1.UpgradeModeLastState || obs.FlinkJobState != FlinkJobRunning {
		return false
	}
	_, bounded := LastStateMaxCheckpointAge(spec.FlinkProperties)
	return bounded
}

// Flink's job states (org.apache.flink.api.common.JobStatus) that PlanUpgrade reads.
const (
	FlinkJobRunning = "RUNNING"
)

// transientFlinkStates are the job states Flink leaves by itself, back to RUNNING or to an
// end: a savepoint cannot be taken in them (Flink's stop-with-savepoint needs RUNNING), and
// waiting for the next state loses nothing.
var transientFlinkStates = map[string]bool{
	"CREATED": true, "INITIALIZING": true, "RESTARTING": true, "RECONCILING": true,
	"FAILING": true, "CANCELLING": true,
}

// TransientFlinkState reports whether Flink leaves a job state by itself (see
// transientFlinkStates).
func TransientFlinkState(s string) bool { return transientFlinkStates[s] }

// UpgradeObservation is what the controller observed of the job for the upgrade decision.
// The webhook has no observation: its zero value means "no word from Flink".
type UpgradeObservation struct {
	// RestoreChoice is the user's answer to a stop for want of a savepoint (a savepoint path,
	// or "" for empty state); nil when there is none.
	RestoreChoice *string
	// StopInFlight is set while the update's own stop-with-savepoint is requested or in
	// progress: it is finished before anything else is decided.
	StopInFlight bool
	// FlinkAnswered is set when a trusted JobManager answered.
	FlinkAnswered bool
	// FlinkJobState is the job's state as a trusted JobManager reports it ("" when none
	// answered or the job is not listed).
	FlinkJobState string
	// MayStillRun is set when no JobManager answers but one may still run the job (a pod that
	// may lead).
	MayStillRun bool
	// LastState is what Flink's HA store offers a last-state redeploy.
	LastState LastStateOffer
	// Checkpoints is what Flink's checkpoint statistics say of the running job; read only
	// when the decision needs it (last-state with a max checkpoint age, the job running).
	Checkpoints *CheckpointTimes
}

// LastStateOffer is what Flink's HA store offers a last-state redeploy of the current job.
type LastStateOffer struct {
	// Available: the store holds a completed checkpoint of the job newer than its savepoints.
	Available bool
	// Checkpoint is the newest checkpoint ID stored.
	Checkpoint int64
	// Why says why Available is false.
	Why string
}

// CheckpointTimes are the trigger times Flink's checkpoint statistics report for the running
// job: its newest completed checkpoint and the one in progress; zero when there is none. Err
// is set when the statistics could not be read; RestoredOnly when the job completed no
// checkpoint since the one it restored, whose trigger time Flink does not report.
type CheckpointTimes struct {
	LatestCompleted, Pending time.Time
	RestoredOnly             bool
	Err                      error
}

// PlanUpgrade decides how the update of a cluster carries its job's state, at now. The order
// follows the Flink Kubernetes operator's getJobUpgrade: the user's explicit answer and a stop
// in flight first, then upgradeMode; with last-state, a flinkVersion change needs a savepoint
// (a new Flink version does not read the old one's HA checkpoint handles), and a running job's
// newest checkpoint must have been triggered within the max checkpoint age; with savepoint, a
// job that Flink reports in a state it leaves by itself is waited for, not stopped.
func PlanUpgrade(spec *v1beta1.FlinkClusterSpec, status *v1beta1.FlinkClusterStatus, obs UpgradeObservation, now time.Time) Upgrade {
	var job *v1beta1.JobStatus
	if status != nil {
		job = status.Components.Job
	}
	var jobSpec *v1beta1.JobSpec
	if spec != nil {
		jobSpec = spec.Job
	}
	running := obs.FlinkJobState == FlinkJobRunning
	noLastState := LastStateUnavailable(spec, job, obs)
	switch {
	case obs.RestoreChoice != nil:
		return Upgrade{How: UpgradeSavepoint, Why: "the user's restore answer", NoLastState: noLastState, EmptyState: *obs.RestoreChoice == ""}
	case obs.StopInFlight:
		return Upgrade{How: UpgradeSavepoint, Stop: true, Why: "the update's stop-with-savepoint is under way", NoLastState: noLastState}
	}
	switch jobSpec.GetUpgradeMode() {
	case v1beta1.UpgradeModeStateless:
		return Upgrade{How: UpgradeStateless, Why: "upgradeMode stateless: empty state, as asked", NoLastState: "upgradeMode stateless", EmptyState: true}
	case v1beta1.UpgradeModeLastState:
		if from, to, changed := versionChange(spec, job); changed {
			why := fmt.Sprintf("flinkVersion changes from %s to %s: Flink %s does not read the HA checkpoint handles of Flink %s", from, to, to, from)
			if running {
				return Upgrade{How: UpgradeSavepoint, Stop: TakesSavepointOnUpdate(jobSpec), Why: why + ", so the job is stopped with a savepoint", NoLastState: noLastState, Refused: true}
			}
			return Upgrade{How: UpgradeWait, Why: why + ": waiting for the job to run to stop it with a savepoint", NoLastState: noLastState, Refused: true}
		}
		if noLastState != "" {
			u := savepointUpgrade(jobSpec, job, obs, "last-state is not possible: "+noLastState, noLastState)
			u.Refused = true
			return u
		}
		if maxAge, bounded := LastStateMaxCheckpointAge(spec.FlinkProperties); bounded {
			switch {
			case running:
				return lastStateByAge(obs.Checkpoints, maxAge, now)
			case obs.FlinkJobState == "" && obs.MayStillRun:
				// No word from Flink while a JobManager may still run the job: it may run on
				// with a checkpoint older than the bound, whose age cannot be read.
				u := savepointUpgrade(jobSpec, job, obs, "the Flink REST API does not answer while a JobManager may still run the job: the age of its newest checkpoint cannot be read",
					"the age of the newest checkpoint cannot be read")
				u.Refused = true
				return u
			}
		}
		return Upgrade{How: UpgradeLastState, Why: fmt.Sprintf("upgradeMode last-state: the newest checkpoint %d of Flink's HA store", obs.LastState.Checkpoint)}
	}
	return savepointUpgrade(jobSpec, job, obs, "upgradeMode savepoint", noLastState)
}

// savepointUpgrade is the savepoint way: a running job is stopped with a savepoint, and so is
// one recorded running while Flink gives no word (the stop's trigger waits for the REST API,
// bounded); one that Flink reports in a state it leaves by itself is waited for.
func savepointUpgrade(jobSpec *v1beta1.JobSpec, job *v1beta1.JobStatus, obs UpgradeObservation, why, noLastState string) Upgrade {
	takes := TakesSavepointOnUpdate(jobSpec)
	unheard := obs.FlinkJobState == "" && !obs.FlinkAnswered && job != nil && job.State == v1beta1.JobStateRunning
	switch {
	case obs.FlinkJobState == FlinkJobRunning || unheard:
		if takes {
			why += ": the running job is stopped with a savepoint"
		}
		return Upgrade{How: UpgradeSavepoint, Stop: takes, Why: why, NoLastState: noLastState}
	case takes && TransientFlinkState(obs.FlinkJobState):
		return Upgrade{How: UpgradeWait, Why: fmt.Sprintf("%s: Flink reports the job %s, and stop-with-savepoint needs it RUNNING: waiting until it runs (or ends)",
			why, obs.FlinkJobState), NoLastState: noLastState}
	}
	return Upgrade{How: UpgradeSavepoint, Why: why, NoLastState: noLastState}
}

// lastStateByAge is the last-state decision for a running job under a max checkpoint age,
// measured as the operator measures it, from the trigger time of the newest completed
// checkpoint: a checkpoint in progress, triggered within the bound, is waited for; otherwise
// the job is stopped with a savepoint. Statistics that cannot be read take the savepoint way:
// it is the safe one while the job runs. Stricter than the operator, which also takes a job
// started within the bound, or a restored checkpoint's restore time, as fresh: both can
// restore state older than the bound (a job restarted from an old checkpoint a moment ago).
func lastStateByAge(cps *CheckpointTimes, maxAge time.Duration, now time.Time) Upgrade {
	within := func(t time.Time) bool { return !t.IsZero() && now.Sub(t) < maxAge }
	stop := func(why string) Upgrade {
		why = "not a last-state update: " + why + "; the job is stopped with a savepoint instead"
		return Upgrade{How: UpgradeSavepoint, Stop: true, Why: why, NoLastState: why, Refused: true}
	}
	switch {
	case cps == nil:
		return stop("the age of its newest checkpoint is not known")
	case cps.Err != nil:
		return stop(fmt.Sprintf("the age of its newest checkpoint cannot be read (%v)", cps.Err))
	case within(cps.LatestCompleted):
		return Upgrade{How: UpgradeLastState, Why: fmt.Sprintf("upgradeMode last-state: the newest checkpoint was triggered %s ago, within %s %s",
			now.Sub(cps.LatestCompleted).Round(time.Second), PropertyLastStateMaxCheckpointAge, maxAge)}
	case within(cps.Pending):
		return Upgrade{How: UpgradeWait, Why: fmt.Sprintf("upgradeMode last-state: no checkpoint triggered within %s %s has completed, and one triggered %s ago is in progress: waiting for it",
			PropertyLastStateMaxCheckpointAge, maxAge, now.Sub(cps.Pending).Round(time.Second))}
	case cps.RestoredOnly:
		return stop("the job has completed no checkpoint since the one it restored, whose age Flink does not report")
	case cps.LatestCompleted.IsZero():
		return stop("Flink reports no completed checkpoint")
	}
	return stop(fmt.Sprintf("its newest checkpoint, triggered %s ago, is older than %s %s",
		now.Sub(cps.LatestCompleted).Round(time.Second), PropertyLastStateMaxCheckpointAge, maxAge))
}

// LastStateUnavailable says why a last-state redeploy of the current job is not possible ("" when
// it is): it needs a JobManager Deployment with Flink's Kubernetes HA, a deployed job whose
// checkpoints Flink's HA store holds, and the same flinkVersion as the deploy that wrote them.
// The update flow's last-state fallback and the Lost timeout's HA recovery decide by it too.
func LastStateUnavailable(spec *v1beta1.FlinkClusterSpec, job *v1beta1.JobStatus, obs UpgradeObservation) string {
	switch {
	case spec == nil || !LastStateSupported(spec):
		return "last-state needs a JobManager Deployment with Flink's Kubernetes HA"
	case !KeepsState(spec.Job):
		return "upgradeMode stateless keeps no state"
	case job == nil || job.ID == "":
		return "no job was deployed"
	}
	if from, to, changed := versionChange(spec, job); changed {
		return fmt.Sprintf("flinkVersion changes from %s to %s: Flink %s does not read the HA checkpoint handles of Flink %s", from, to, to, from)
	}
	if !obs.LastState.Available {
		if obs.LastState.Why == "" {
			return "Flink's HA store offers no checkpoint of the job"
		}
		return obs.LastState.Why
	}
	return ""
}

// versionChange reports whether spec.flinkVersion names another Flink minor version than the
// one the current deploy runs (status.components.job.flinkVersion), as the operator compares
// versions (FlinkVersion: major and minor); a patch release reads the same HA handles. A
// deploy recorded without a version (made by a controller before it recorded one), or a
// version that does not parse (validation denies it), is taken as no change.
func versionChange(spec *v1beta1.FlinkClusterSpec, job *v1beta1.JobStatus) (from, to string, changed bool) {
	if spec == nil || job == nil || job.FlinkVersion == "" {
		return "", "", false
	}
	from, to = strings.TrimSpace(job.FlinkVersion), strings.TrimSpace(spec.FlinkVersion)
	a, errA := ParseVersion(from)
	if errA != nil {
		return from, to, false
	}
	am := a.Segments()
	b, errB := ParseVersion(to)
	if errB != nil {
		return from, to, false
	}
	bm := b.Segments()
	return from, to, len(am) < 2 || len(bm) < 2 || am[0] != bm[0] || am[1] != bm[1]
}
