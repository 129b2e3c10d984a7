package flinkcluster

import (
	"fmt"
	"strings"
	"time"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// UpgradeHow is how an update carries the job's state.
type UpgradeHow string

const (
	// UpgradeSavepoint deploys the next revision from a savepoint (final, or confirmed newest).
	UpgradeSavepoint UpgradeHow = "Savepoint"
	// UpgradeLastState keeps Flink's HA store and job ID: the JobMaster restores the newest checkpoint.
	UpgradeLastState UpgradeHow = "LastState"
	// UpgradeStateless deploys the next revision from empty state.
	UpgradeStateless UpgradeHow = "Stateless"
	// UpgradeWait decides nothing yet (a restart, a checkpoint in progress): wait, bounded.
	UpgradeWait UpgradeHow = "Wait"
)

// Upgrade is the decision PlanUpgrade returns.
type Upgrade struct {
	// How the next deploy gets the job's state.
	How UpgradeHow
	// Stop is set when the running job is to be stopped with a savepoint first.
	Stop bool
	// Why says, for the user, why this way was chosen.
	Why string
	// NoLastState says why a last-state redeploy is not an option ("" when it is).
	NoLastState string
	// Refused is set when the way the upgrade mode asks for was refused; the user is told why.
	Refused bool
	// EmptyState: the next deploy restores nothing, which the admission policy asks to confirm.
	EmptyState bool
	// PastBound is set once the update has waited past its bound: a wait becomes the savepoint
	// way, and a failed stop is not asked again. Until is when the bound passes, while it has not.
	PastBound bool
	Until     time.Time
	// SpecRestore is the fromSavepoint named anew for which no job is stopped (restoringSpec).
	SpecRestore string
}

func planAnswer(choice, noLastState string) Upgrade {
	return Upgrade{How: UpgradeSavepoint, Why: "the user's restore answer", NoLastState: noLastState, EmptyState: choice == ""}
}

func planSavepoint(stop bool, why, noLastState string) Upgrade {
	return Upgrade{How: UpgradeSavepoint, Stop: stop, Why: why, NoLastState: noLastState}
}

func planStop(why, noLastState string) Upgrade { return planSavepoint(true, why, noLastState) }

func planLastState(why string) Upgrade { return Upgrade{How: UpgradeLastState, Why: why} }

func planStateless() Upgrade {
	return Upgrade{How: UpgradeStateless, Why: "upgradeMode stateless: empty state, as asked", NoLastState: "upgradeMode stateless", EmptyState: true}
}

func planWait(why, noLastState string) Upgrade {
	return Upgrade{How: UpgradeWait, Why: why, NoLastState: noLastState}
}

// refused marks a plan that does not go the way the upgrade mode asks.
func (u Upgrade) refused() Upgrade {
	u.Refused = true
	return u
}

// bounded applies the update's wait bound: past it a wait takes the savepoint way, and a job
// that runs is stopped with a savepoint, as one whose newest checkpoint is too old.
func (u Upgrade) bounded(obs UpgradeObservation, now time.Time) Upgrade {
	until, past := obs.bound(now)
	switch {
	case !past:
		u.Until = until
	case u.How == UpgradeWait:
		u.How, u.PastBound, u.Stop = UpgradeSavepoint, true, obs.FlinkJobState == FlinkJobRunning
		u.Why += fmt.Sprintf("; the update has waited past the wait bound %s", obs.WaitBound)
		if u.Stop {
			u.Why += ": the running job is stopped with a savepoint"
		}
	default:
		u.PastBound = true
	}
	return u
}

// SavepointUpgrades reports whether the job carries its state by savepoints (the default mode).
func SavepointUpgrades(j *v1beta1.JobSpec) bool {
	return j.GetUpgradeMode() == v1beta1.UpgradeModeSavepoint
}

// modeKeepsState says of every upgrade mode whether it keeps state; a test checks each mode.
var modeKeepsState = map[v1beta1.UpgradeMode]bool{
	v1beta1.UpgradeModeSavepoint: true,
	v1beta1.UpgradeModeLastState: true,
	v1beta1.UpgradeModeStateless: false,
}

// KeepsState reports whether the upgrade mode keeps state; an unknown one does (no guess loses state).
func KeepsState(j *v1beta1.JobSpec) bool {
	keeps, known := modeKeepsState[j.GetUpgradeMode()]
	return keeps || !known
}

// NeedsCheckpointTimes reports whether PlanUpgrade reads UpgradeObservation.Checkpoints.
func NeedsCheckpointTimes(spec *v1beta1.FlinkClusterSpec, obs UpgradeObservation) bool {
	if spec == nil || spec.Job.GetUpgradeMode() != v1beta1.UpgradeModeLastState || obs.FlinkJobState != FlinkJobRunning {
		return false
	}
	_, bounded := LastStateMaxCheckpointAge(spec.FlinkProperties)
	return bounded
}

// Flink's job states (org.apache.flink.api.common.JobStatus) that PlanUpgrade reads.
const (
	FlinkJobRunning      = "RUNNING"
	flinkJobInitializing = "INITIALIZING"
	flinkJobCreated      = "CREATED"
)

// transientFlinkStates are job states Flink leaves by itself: stop-with-savepoint needs RUNNING,
// and waiting for the next state loses nothing.
var transientFlinkStates = map[string]bool{
	"CREATED": true, "INITIALIZING": true, "RESTARTING": true, "RECONCILING": true,
	"FAILING": true, "CANCELLING": true,
}

// TransientFlinkState reports whether Flink leaves a job state by itself.
func TransientFlinkState(s string) bool { return transientFlinkStates[s] }

// UpgradeObservation is what the controller observed for the upgrade decision; the webhook's
// zero value means "no word from Flink".
type UpgradeObservation struct {
	// RestoreChoice is the user's restore answer; nil when there is none.
	RestoreChoice *string
	// StopInFlight: the update's own stop-with-savepoint is under way; it finishes first.
	StopInFlight bool
	// FlinkAnswered is set when a trusted JobManager answered.
	FlinkAnswered bool
	// FlinkJobState is the job's state as a trusted JobManager reports it ("" when unknown).
	FlinkJobState string
	// FlinkSilence says why no trusted JobManager answered ("" when one did).
	FlinkSilence string
	// MayRunOn: JobManager pods that may still run the job; PodMayLead: a pod may still lead.
	MayRunOn   []string
	PodMayLead bool
	// JobGraphStored: Flink's HA store holds the current job's graph (it was submitted).
	JobGraphStored bool
	// WorkloadOfJob: a JobManager workload of the current job's ID exists.
	WorkloadOfJob bool
	// LastState is what Flink's HA store offers a last-state redeploy.
	LastState LastStateOffer
	// Checkpoints is read only when NeedsCheckpointTimes.
	Checkpoints *CheckpointTimes
	// UpdatingSince is when the running update began (zero: none runs); WaitBound bounds its
	// waits (zero: unbounded, as the webhook asks).
	UpdatingSince time.Time
	WaitBound     time.Duration
}

// mayStillRun: no JobManager answers, but one may still run the job.
func (o UpgradeObservation) mayStillRun() bool { return !o.FlinkAnswered && len(o.MayRunOn) > 0 }

// bound is when the update's wait bound passes, and whether it has at now.
func (o UpgradeObservation) bound(now time.Time) (until time.Time, past bool) {
	if o.UpdatingSince.IsZero() || o.WaitBound <= 0 {
		return time.Time{}, false
	}
	until = o.UpdatingSince.Add(o.WaitBound)
	if now.After(until) {
		return time.Time{}, true
	}
	return until, false
}

// LastStateOffer is what Flink's HA store offers a last-state redeploy of the current job.
type LastStateOffer struct {
	// Available: the store holds a completed checkpoint of the job newer than its savepoints.
	Available bool
	// Checkpoint is the newest checkpoint ID stored.
	Checkpoint int64
	// NewerSavepoint: the job's last savepoint is newer than every stored checkpoint.
	NewerSavepoint bool
	// Why says why Available is false.
	Why string
}

// CheckpointTimes are the trigger times of the running job's newest completed and in-progress
// checkpoints. RestoredOnly: none completed since the restored one, whose time Flink hides.
type CheckpointTimes struct {
	LatestCompleted, Pending time.Time
	RestoredOnly             bool
	Err                      error
}

// PlanUpgrade decides how an update carries the job's state, in the order of the Flink
// Kubernetes operator's getJobUpgrade, bounded by the update's wait bound. Under last-state a
// flinkVersion change needs a savepoint: a new Flink does not read the old one's HA handles.
func PlanUpgrade(spec *v1beta1.FlinkClusterSpec, status *v1beta1.FlinkClusterStatus, obs UpgradeObservation, now time.Time) Upgrade {
	return planUpgrade(spec, status, obs, now).bounded(obs, now).restoringSpec(spec, status, obs)
}

// restoringSpec stops no job for a fromSavepoint named anew (RevisionRestore), which replaces
// whatever a stop would save; a stop under way finishes.
func (u Upgrade) restoringSpec(spec *v1beta1.FlinkClusterSpec, status *v1beta1.FlinkClusterStatus, obs UpgradeObservation) Upgrade {
	if !u.Stop || obs.StopInFlight || spec == nil {
		return u
	}
	from, ok := RevisionRestore(status, spec.Job)
	if !ok {
		return u
	}
	u.Stop, u.SpecRestore = false, from
	u.Why += "; spec.job.fromSavepoint names " + from + " to restore: the job is not stopped with a savepoint"
	return u
}

func planUpgrade(spec *v1beta1.FlinkClusterSpec, status *v1beta1.FlinkClusterStatus, obs UpgradeObservation, now time.Time) Upgrade {
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
		return planAnswer(*obs.RestoreChoice, noLastState)
	case obs.StopInFlight:
		return planStop("the update's stop-with-savepoint is under way", noLastState)
	}
	switch jobSpec.GetUpgradeMode() {
	case v1beta1.UpgradeModeStateless:
		return planStateless()
	case v1beta1.UpgradeModeLastState:
		if from, to, changed := versionChange(spec, job); changed {
			why := fmt.Sprintf("flinkVersion changes from %s to %s: Flink %s does not read the HA checkpoint handles of Flink %s", from, to, to, from)
			if running {
				return planSavepoint(TakesSavepointOnUpdate(jobSpec), why+", so the job is stopped with a savepoint", noLastState).refused()
			}
			return planWait(why+": waiting for the job to run to stop it with a savepoint", noLastState).refused()
		}
		if noLastState != "" {
			return savepointUpgrade(jobSpec, job, obs, "last-state is not possible: "+noLastState, noLastState).refused()
		}
		if maxAge, bounded := LastStateMaxCheckpointAge(spec.FlinkProperties); bounded {
			switch {
			case running:
				return lastStateByAge(obs.Checkpoints, maxAge, now)
			case obs.FlinkJobState == "" && obs.mayStillRun():
				// A JobManager may run on with a checkpoint older than the bound, of unknown age.
				return savepointUpgrade(jobSpec, job, obs, "the Flink REST API does not answer while a JobManager may still run the job: the age of its newest checkpoint cannot be read",
					"the age of the newest checkpoint cannot be read").refused()
			}
		}
		return planLastState(fmt.Sprintf("upgradeMode last-state: the newest checkpoint %d of Flink's HA store", obs.LastState.Checkpoint))
	}
	return savepointUpgrade(jobSpec, job, obs, "upgradeMode savepoint", noLastState)
}

// savepointUpgrade stops a running job with a savepoint (also one recorded running while Flink
// is silent) and waits for one in a transient state.
func savepointUpgrade(jobSpec *v1beta1.JobSpec, job *v1beta1.JobStatus, obs UpgradeObservation, why, noLastState string) Upgrade {
	takes := TakesSavepointOnUpdate(jobSpec)
	unheard := obs.FlinkJobState == "" && !obs.FlinkAnswered && job != nil && job.State == v1beta1.JobStateRunning
	switch {
	case obs.FlinkJobState == FlinkJobRunning || unheard:
		if takes {
			why += ": the running job is stopped with a savepoint"
		}
		return planSavepoint(takes, why, noLastState)
	case takes && TransientFlinkState(obs.FlinkJobState):
		return planWait(fmt.Sprintf("%s: Flink reports the job %s, and stop-with-savepoint needs it RUNNING: waiting until it runs (or ends)",
			why, obs.FlinkJobState), noLastState)
	}
	return planSavepoint(false, why, noLastState)
}

// lastStateByAge decides last-state under a max checkpoint age, from the newest completed
// checkpoint's trigger time: one in progress within the bound is waited for, else (also when
// unreadable) stop with a savepoint. Stricter than the operator, whose recent start or restore
// counts as fresh: either can restore state older than the bound.
func lastStateByAge(cps *CheckpointTimes, maxAge time.Duration, now time.Time) Upgrade {
	within := func(t time.Time) bool { return !t.IsZero() && now.Sub(t) < maxAge }
	stop := func(why string) Upgrade {
		why = "not a last-state update: " + why + "; the job is stopped with a savepoint instead"
		return planStop(why, why).refused()
	}
	switch {
	case cps == nil:
		return stop("the age of its newest checkpoint is not known")
	case cps.Err != nil:
		return stop(fmt.Sprintf("the age of its newest checkpoint cannot be read (%v)", cps.Err))
	case within(cps.LatestCompleted):
		return planLastState(fmt.Sprintf("upgradeMode last-state: the newest checkpoint was triggered %s ago, within %s %s",
			now.Sub(cps.LatestCompleted).Round(time.Second), PropertyLastStateMaxCheckpointAge, maxAge))
	case within(cps.Pending):
		return planWait(fmt.Sprintf("upgradeMode last-state: no checkpoint triggered within %s %s has completed, and one triggered %s ago is in progress: waiting for it",
			PropertyLastStateMaxCheckpointAge, maxAge, now.Sub(cps.Pending).Round(time.Second)), "")
	case cps.RestoredOnly:
		return stop("the job has completed no checkpoint since the one it restored, whose age Flink does not report")
	case cps.LatestCompleted.IsZero():
		return stop("Flink reports no completed checkpoint")
	}
	return stop(fmt.Sprintf("its newest checkpoint, triggered %s ago, is older than %s %s",
		now.Sub(cps.LatestCompleted).Round(time.Second), PropertyLastStateMaxCheckpointAge, maxAge))
}

// LastStateUnavailable says why a last-state redeploy is not possible ("" when it is): it needs
// a Deployment JobManager with Kubernetes HA, checkpoints in the HA store and the same flinkVersion.
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

// versionChange reports whether spec.flinkVersion changes the Flink minor version (a patch reads
// the same HA handles); a missing or unparsable version is no change.
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
