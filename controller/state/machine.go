package state

import (
	"slices"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// Step names the controller function (a cycle method) that moves the job, for table readers.
type Step string

// The steps that change status.components.job.state.
const (
	// StepDerive applies DeriveJob to what Kubernetes and Flink report.
	StepDerive Step = "derive"
	// StepNewDeploy chooses a new job ID for a deploy that does not resume from HA.
	StepNewDeploy Step = "newDeploy"
	// StepLastStateDeploy redeploys the job under its job ID from its newest HA checkpoint.
	StepLastStateDeploy Step = "lastStateDeploy"
	// StepCreateJobManager creates the deploy's JobManager Job or Deployment.
	StepCreateJobManager Step = "createJobManager"
	// StepStartUpdate begins the update flow for a new revision or the user's restore answer.
	StepStartUpdate Step = "startUpdate"
	// StepUpdate is the update flow: a revert, or a next deploy's workload that exists already.
	StepUpdate Step = "update"
	// StepRedeployWithoutHA answers HA metadata deleted behind a running job.
	StepRedeployWithoutHA Step = "redeployWithoutHA"
	// StepResume recreates the missing JobManager Deployment of an active job.
	StepResume Step = "resume"
	// StepRestart restarts a failed job (Job mode, restartPolicy FromSavepointOnFailure).
	StepRestart Step = "restart"
	// StepCancelled records a cancel that Flink, or the JobManager's absence, confirmed.
	StepCancelled Step = "cancelled"
)

// Event names what happened to move the job, one per row of Transitions.
type Event string

// The events of the job state machine, one per row of Transitions.
const (
	EventWorkloadExists         Event = "WorkloadExists"
	EventReportedRunning        Event = "ReportedRunning"
	EventReportedStarting       Event = "ReportedStarting"
	EventJobSucceeded           Event = "JobSucceeded"
	EventJobCanceled            Event = "JobCanceled"
	EventJobFailed              Event = "JobFailed"
	EventDeployFailed           Event = "DeployFailed"
	EventDeploymentMissing      Event = "DeploymentMissing"
	EventJobNotReported         Event = "JobNotReported"
	EventNewDeploy              Event = "NewDeploy"
	EventJobManagerCreated      Event = "JobManagerCreated"
	EventLastStateRedeploy      Event = "LastStateRedeploy"
	EventSpecChanged            Event = "SpecChanged"
	EventSpecReverted           Event = "SpecReverted"
	EventSpecRevertedRunning    Event = "SpecRevertedRunning"
	EventNextJobManagerExists   Event = "NextJobManagerExists"
	EventHAMetadataGone         Event = "HAMetadataGone"
	EventDeploymentAndHAMissing Event = "DeploymentAndHAMissing"
	EventRestart                Event = "Restart"
	EventCancelConfirmed        Event = "CancelConfirmed"
)

// Transition is one row: from any of From, on Event (Means says it in words), Step moves the job
// to To.
type Transition struct {
	From  []string
	Event Event
	Means string
	To    string
	Step  Step
}

const (
	pending      = v1beta1.JobStatePending
	deploying    = v1beta1.JobStateDeploying
	running      = v1beta1.JobStateRunning
	updating     = v1beta1.JobStateUpdating
	restarting   = v1beta1.JobStateRestarting
	lostState    = v1beta1.JobStateLost
	succeeded    = v1beta1.JobStateSucceeded
	cancelled    = v1beta1.JobStateCancelled
	failed       = v1beta1.JobStateFailed
	deployFailed = v1beta1.JobStateDeployFailed
)

// Transitions is the job state machine: the controller moves the job only through Next, which
// refuses an event its row does not list for the state (a Warning Event UnlistedTransition).
// docs/troubleshooting.md shows this table; a docs test keeps them equal.
var Transitions = []Transition{
	{[]string{pending}, EventWorkloadExists, "the JobManager workload exists", deploying, StepDerive},
	{[]string{pending, deploying, lostState}, EventReportedRunning, "Flink reports the job RUNNING, RESTARTING or FAILING (a Lost job is reported again)", running, StepDerive},
	{[]string{lostState}, EventReportedStarting, "a Lost job is reported again, not yet running (INITIALIZING, CREATED)", deploying, StepDerive},
	{[]string{pending, deploying, running, lostState}, EventJobSucceeded, "Flink reports the job FINISHED with no stop-with-savepoint in flight", succeeded, StepDerive},
	{[]string{pending, deploying, running, lostState}, EventJobCanceled, "Flink reports the job CANCELED with no stop-with-savepoint in flight", cancelled, StepDerive},
	{[]string{pending, deploying, running, lostState}, EventJobFailed, "Flink reports the job FAILED; or a job that ran, or a Job-mode JobManager that ran for SubmitBound (10 s), fails", failed, StepDerive},
	{[]string{pending, deploying}, EventDeployFailed, "the JobManager cannot run, or main() failed, before the job ran", deployFailed, StepDerive},
	{[]string{deploying, running, lostState}, EventDeploymentMissing, "the JobManager Deployment is missing (Deployment mode): it is created again", pending, StepDerive},
	{[]string{pending, deploying, running}, EventJobNotReported, "the job is not reported within the HA recovery grace, it ended unobserved (Lost=True/EndedUnobserved; also a JobManager Job that completed before the job's end was on record), the JobManager Job is missing, or the Deployment of a job that ran (or may have: another pod of the deploy ran for SubmitBound, or the HA store holds its graph) cannot run", lostState, StepDerive},
	{[]string{updating, restarting, succeeded, cancelled, failed, deployFailed, lostState}, EventNewDeploy, "a deploy that does not resume from HA: a new job ID", pending, StepNewDeploy},
	{[]string{pending}, EventJobManagerCreated, "the deploy's JobManager workload was created", deploying, StepCreateJobManager},
	{[]string{updating, restarting, succeeded, cancelled, failed, deployFailed, lostState}, EventLastStateRedeploy, "a last-state redeploy: the same job ID, the newest checkpoint of the HA store", pending, StepLastStateDeploy},
	{[]string{pending, deploying, running, lostState, restarting}, EventSpecChanged, "the spec changed (a new revision, also while a failed job restarts from its savepoint), or the user answered SavepointRequired", updating, StepStartUpdate},
	{[]string{updating}, EventSpecReverted, "the spec went back to the running revision before its stop took effect", deploying, StepUpdate},
	{[]string{updating}, EventSpecRevertedRunning, "the spec went back to the running revision before its stop took effect, and Flink reports the job RUNNING", running, StepUpdate},
	{[]string{pending}, EventNextJobManagerExists, "the next revision's JobManager exists already (created, its record lost)", deploying, StepUpdate},
	{[]string{pending, deploying, running, lostState}, EventHAMetadataGone, "the HA metadata of the running job is gone: stop it with a savepoint and deploy again", updating, StepRedeployWithoutHA},
	{[]string{pending}, EventDeploymentAndHAMissing, "the JobManager Deployment of a job that ran is missing and its HA metadata is gone", failed, StepResume},
	{[]string{failed, lostState}, EventRestart, "the job failed, or stayed Lost for the Lost timeout, with restartPolicy FromSavepointOnFailure", restarting, StepRestart},
	{[]string{pending, deploying, running, lostState, updating, restarting}, EventCancelConfirmed, "the job was cancelled (cancelRequested, the job-cancel control) and its end is confirmed", cancelled, StepCancelled},
}

// Next is the state an event moves the job to from a state, and whether the table lists that
// transition (an event leading to the current state is listed; an unknown one is not).
func Next(from string, ev Event) (string, bool) {
	i := slices.IndexFunc(Transitions, func(t Transition) bool { return t.Event == ev })
	if i < 0 {
		return from, false
	}
	t := Transitions[i]
	if t.To == from {
		return from, true
	}
	if !slices.Contains(t.From, from) {
		return from, false
	}
	return t.To, true
}

// StepOf is the step whose row an event is; "" for an unknown event.
func StepOf(ev Event) Step {
	if i := slices.IndexFunc(Transitions, func(t Transition) bool { return t.Event == ev }); i >= 0 {
		return Transitions[i].Step
	}
	return ""
}

// Derived is the derive event that moves the job between two states; derive rows are one per pair.
func Derived(from, to string) (Event, bool) {
	i := slices.IndexFunc(Transitions, func(t Transition) bool {
		return t.Step == StepDerive && t.To == to && slices.Contains(t.From, from)
	})
	if i < 0 {
		return "", false
	}
	return Transitions[i].Event, true
}

// Listed reports whether any step may move the job from one state to another.
func Listed(from, to string) bool {
	return slices.ContainsFunc(Transitions, func(t Transition) bool { return t.To == to && slices.Contains(t.From, from) })
}
