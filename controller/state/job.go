package state

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Workload is what the controller saw of the JobManager Job or Deployment.
type Workload struct {
	// Revision is the spec revision the workload was built from.
	Revision string
	// JobID is the job ID of the deploy it runs ("" from an older controller).
	JobID string

	Deleting bool
	// Failed is set when the Job has a Failed condition (Job mode); FailedMessage says why.
	Failed        bool
	FailedMessage string
	// StartTime and FailedAt (zero if unknown) bound a Job's JobManager run once its pod is gone.
	StartTime, FailedAt time.Time
	// Complete is set when the Job completed: the JobManager exited with 0 (Job mode).
	Complete bool
	// CreateFailure is the Deployment's ReplicaFailure/FailedCreate message (Deployment mode).
	CreateFailure string
}

// Flink is what a trusted JobManager's REST API reported (see Trusted).
type Flink struct {
	// Job is the cluster's job, nil when the JobManager does not list it.
	Job *flinkclient.Job
	// JobFailure is the newest exception of a FAILED job.
	JobFailure string

	JobCount int
	// Application is the application (Flink 2.3+), nil when none is listed.
	Application *flinkclient.Application
	// ApplicationFailure is the newest exception of a FAILED application.
	ApplicationFailure string
	// DriverJob is the FAILED "(application driver)" job listed when main() threw, nil when the
	// cluster's job is listed; DriverFailure is its failure.
	DriverJob     *flinkclient.Job
	DriverFailure string
	// RestoreRefused: the job FAILED restoring the ResumeFromHAOnly path, configured only once
	// the job ran or was submitted: so the job ran.
	RestoreRefused bool
}

// Input is one observation of a cluster's job.
type Input struct {
	Now            time.Time
	DeploymentType v1beta1.JobManagerDeploymentType

	Recorded v1beta1.JobStatus
	// LostSince is when a Lost job became Lost (the Lost condition's lastTransitionTime);
	// zero counts as Now, so a Lost job without a record of its start is never cut short.
	LostSince time.Time
	// LostTimeoutRecorded: the Lost timeout was recorded; the job stays Lost for good.
	LostTimeoutRecorded bool
	// EndedRecorded: the job was recorded ended unobserved (Result.Ended).
	EndedRecorded bool
	// EndedInHA is the HA ConfigMaps' evidence that the job ended globally, or "".
	EndedInHA string
	// HAMetadataGone is the HA ConfigMaps' evidence that the job's HA metadata is gone, or "".
	HAMetadataGone string
	// Stopping: a stop-with-savepoint was requested, so Flink's FINISHED is no success.
	Stopping bool
	// Workload is the JobManager workload, nil when it does not exist.
	Workload *Workload
	// Pod is the selected JobManager pod, nil when there is none.
	Pod *corev1.Pod
	// Pods are all the cluster's JobManager pods; one on a lost node keeps its last status
	// (mayHaveRun).
	Pods []corev1.Pod
	// JobGraphStored: the HA store holds the recorded job's graph, so it was submitted (graphs
	// are removed before a deploy reuses a job ID).
	JobGraphStored bool
	// Flink is the REST API's answer, nil when it was unreachable or not trusted.
	Flink *Flink
	// HARecoveryGrace is how long a started JobManager may take to report the job.
	HARecoveryGrace time.Duration
	// LostTimeout is how long a Lost job may take to be reported again.
	LostTimeout time.Duration
}

// Result is the derived job state.
type Result struct {
	State string
	// Reason is the failure reason of a transition to Failed, DeployFailed or Lost.
	Reason string
	// DeploymentFailure is the kind (CrashLoopBackOff, FailedCreate, ...) of a failed deployment.
	DeploymentFailure string
	// Message explains a transition, for the Event.
	Message string
	// LostSince is when the job became Lost; zero when it is not Lost.
	LostSince time.Time
	// LostTimedOut: the job was Lost for LostTimeout, so it ended and afterJobFails applies.
	LostTimedOut bool
	// RequeueAfter is when a timer (HA grace, Lost timeout) runs out; zero for none.
	RequeueAfter time.Duration
	// Unreported says why the record stands though the JobManager lists no job yet.
	Unreported string
	// Event is the machine's derive event to State; "" when the state stays.
	Event Event
	// Unlisted: the machine lists no derive event to State, so the transition is refused.
	Unlisted bool
	// Ended: the job ended in Flink unseen, so it is Lost for good, with neither after-job policy.
	Ended bool
}

// IsFailure reports whether a terminal state is a failure (afterJobFails applies).
func IsFailure(state string) bool {
	return state == v1beta1.JobStateFailed || state == v1beta1.JobStateDeployFailed || state == v1beta1.JobStateLost
}

func ran(in Input, rec string) bool {
	return flinkcluster.Ran(&in.Recorded) || rec == v1beta1.JobStateRunning || rec == v1beta1.JobStateLost ||
		(in.Flink != nil && in.Flink.RestoreRefused)
}

func failedState(in Input, rec string) string {
	if ran(in, rec) {
		return v1beta1.JobStateFailed
	}
	return v1beta1.JobStateDeployFailed
}

// Leader is what Flink's HA services publish about the JobManager that leads the cluster.
type Leader struct {
	// Known: the HA leader record names a leader whose lease has not expired.
	Known bool
	// Address is the leader's pod IP (HA sets jobmanager.rpc.address to $(POD_IP)).
	Address string
	// Grace is LeaseGraceFor the configured lease; LeaseGrace when zero.
	Grace time.Duration
}

// Leads reports whether the pod is the JobManager the HA leader information names.
func (l Leader) Leads(pod *corev1.Pod) bool {
	return l.Known && pod != nil && pod.Status.PodIP != "" && pod.Status.PodIP == l.Address
}

// LeaseGrace is how long past its deletion deadline a pod stuck Terminating on a lost node may
// take free leadership: longer than Flink's default 15 s lease, which it cannot renew.
const LeaseGrace = time.Minute

// LeaseGraceFor is four leases, at least LeaseGrace: a cut-off pod loses the lock one lease
// after its last renewal; the rest covers a renewal just before the deletion and clock skew.
func LeaseGraceFor(lease time.Duration) time.Duration {
	return max(LeaseGrace, 4*lease)
}

func (l Leader) grace() time.Duration {
	if l.Grace > 0 {
		return l.Grace
	}
	return LeaseGrace
}

// MayLead reports whether a pod may hold or take the leadership: with a leader record, the leader
// or any pod not being deleted; without, until Grace past its deletion deadline.
func MayLead(pod *corev1.Pod, leader Leader, now time.Time) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if !Deleting(pod) || leader.Leads(pod) {
		return true
	}
	if leader.Known {
		return false
	}
	return !now.After(pod.DeletionTimestamp.Add(leader.grace()))
}

// Trusted reports whether the REST API speaks for the current JobManager, never an old one whose
// FINISHED after stop-with-savepoint would pass for the new deploy's.
func Trusted(selected *corev1.Pod, all []corev1.Pod, leader Leader, now time.Time) bool {
	if !Ready(selected) {
		return false
	}
	if leader.Known {
		return leader.Leads(selected)
	}
	for i := range all {
		p := &all[i]
		if p.UID == selected.UID || !MayLead(p, leader, now) {
			continue
		}
		return false
	}
	return true
}

// DeriveJob applies the lifecycle rules to one observation (see Result.Unlisted).
func DeriveJob(in Input) Result {
	r := deriveJob(in)
	from := in.Recorded.State
	if from == "" {
		from = v1beta1.JobStatePending
	}
	if r.State != from {
		var ok bool
		r.Event, ok = Derived(from, r.State)
		r.Unlisted = !ok
	}
	return r
}

func deriveJob(in Input) Result {
	rec := in.Recorded.State
	keep := Result{State: rec}
	if rec == v1beta1.JobStateLost {
		keep.LostSince = lostSince(in)
	}
	switch {
	case rec == "":
		rec = v1beta1.JobStatePending
		keep.State = rec
	case flinkcluster.Terminal(rec):
		// Only a new revision deploys a terminal job again: nothing resubmits on its own.
		return keep
	case rec == v1beta1.JobStateUpdating || rec == v1beta1.JobStateRestarting:
		// The update and restart flows own these states until they deploy the next workload.
		return keep
	case rec == v1beta1.JobStateLost && in.EndedRecorded && (in.Flink == nil || in.Flink.Job == nil):
		// Ended in Flink, it stays so, unless Flink lists the job again (nothing was cleaned up).
		keep.Ended = true
		return keep
	case rec == v1beta1.JobStateLost:
		// A job reported again wins over a timeout that ran out unrecorded (a clock jump, a
		// controller that was down); once recorded (and cleaned up) it stays Lost.
		if r := withLostTimeout(in, keep); r.LostTimedOut && (in.LostTimeoutRecorded || in.Flink == nil || in.Flink.Job == nil) {
			return r
		}
	}

	if in.Workload == nil {
		return missingWorkload(in, rec, keep)
	}
	if rec == v1beta1.JobStatePending {
		keep.State = v1beta1.JobStateDeploying
		keep.Message = "JobManager workload exists"
		rec = keep.State
	}

	if reason := in.Workload.CreateFailure; reason != "" {
		return deploymentFailed(in, rec, keep, FailedCreate, reason)
	}
	if kind, reason := PodFailure(in.Pod); reason != "" {
		return deploymentFailed(in, rec, keep, kind, reason)
	}

	if in.Flink != nil {
		if r, ok := fromFlink(in, rec); ok {
			return r
		}
		return notReported(in, rec, keep)
	}

	if in.DeploymentType == v1beta1.JobManagerDeploymentTypeJob {
		if r, ok := fromJobWorkload(in, rec); ok {
			return r
		}
	}
	// Unreachable API: the JobManager is starting or restarting. Keep the recorded state;
	// in Deployment mode only Flink says that a job ended.
	return withLostTimeout(in, keep)
}

// deploymentFailed: the JobManager cannot run. A Deployment's job that ran is Lost, not
// terminal: HA recovers it once the cause passes. A deploy never reported RUNNING may have run
// (mayHaveRun): as DeployFailed, the next update would restore its restore point, rewinding it.
func deploymentFailed(in Input, rec string, keep Result, kind, reason string) Result {
	if in.DeploymentType == v1beta1.JobManagerDeploymentTypeDeployment && !ran(in, rec) {
		if why := mayHaveRun(in); why != "" {
			reason = truncate(reason + " (" + why + ": its job may have run)")
			return Result{State: v1beta1.JobStateLost, Reason: reason, Message: reason, DeploymentFailure: kind,
				LostSince: in.Now, RequeueAfter: in.LostTimeout}
		}
	}
	if in.DeploymentType == v1beta1.JobManagerDeploymentTypeDeployment && ran(in, rec) {
		if rec == v1beta1.JobStateLost {
			r := withLostTimeout(in, keep)
			r.DeploymentFailure, r.Reason = kind, reason
			return r
		}
		return Result{State: v1beta1.JobStateLost, Reason: reason, Message: reason, DeploymentFailure: kind,
			LostSince: in.Now, RequeueAfter: in.LostTimeout}
	}
	r := fail(failedState(in, rec), reason)
	r.DeploymentFailure = kind
	return r
}

func fail(state, reason string) Result {
	return Result{State: state, Reason: reason, Message: reason}
}

// missingWorkload: a Deployment is recreated; a Job cannot be without resubmitting: Lost.
func missingWorkload(in Input, rec string, keep Result) Result {
	if rec == v1beta1.JobStatePending {
		return keep
	}
	if in.DeploymentType == v1beta1.JobManagerDeploymentTypeDeployment {
		return Result{State: v1beta1.JobStatePending, Message: "JobManager Deployment is missing: creating it again"}
	}
	if rec == v1beta1.JobStateLost {
		return withLostTimeout(in, keep)
	}
	return Result{State: v1beta1.JobStateLost, Reason: "JobManager Job is missing", Message: "JobManager Job is missing", LostSince: in.Now, RequeueAfter: in.LostTimeout}
}

// FailureApplication: the application failed before its job ran (main() threw, or a failed exit).
const FailureApplication = "ApplicationFailed"

func mainFailed(in Input, rec, reason string) Result {
	r := fail(failedState(in, rec), reason)
	if r.State == v1beta1.JobStateDeployFailed {
		r.DeploymentFailure = FailureApplication
	}
	return r
}

// fromFlink maps what the REST API reported (ok false for neither job nor application); on 2.3 a
// FAILED application overrides its job, and one running without a job is still deploying.
func fromFlink(in Input, rec string) (Result, bool) {
	f := in.Flink
	app := f.Application
	appFailed := func() (Result, bool) {
		reason := "the application failed"
		if f.Job == nil {
			reason = "the application failed before submitting a job"
		}
		if f.ApplicationFailure != "" {
			reason += ": " + f.ApplicationFailure
		}
		return mainFailed(in, rec, reason), true
	}
	if f.Job == nil {
		switch {
		case f.DriverJob != nil:
			reason := "the application's main() failed"
			if f.DriverFailure != "" {
				reason += ": " + f.DriverFailure
			} else if f.ApplicationFailure != "" {
				reason += ": " + f.ApplicationFailure
			}
			return mainFailed(in, rec, reason), true
		case app != nil && app.Status == flinkclient.ApplicationStateFailed:
			return appFailed()
		case app != nil && !flinkclient.IsTerminalApplicationState(app.Status):
			return Result{State: rec}, true
		}
		return Result{}, false
	}
	tracked := func(state string) Result {
		r := Result{State: state}
		if rec == v1beta1.JobStateLost {
			r.Message = fmt.Sprintf("job %s is reported again (%s)", f.Job.ID, f.Job.State)
		} else if state != rec {
			r.Message = fmt.Sprintf("Flink reports job %s %s", f.Job.ID, f.Job.State)
		}
		return r
	}
	if app != nil && app.Status == flinkclient.ApplicationStateFailed && f.Job.State != flinkclient.JobStateFailed {
		// A FAILED job of a FAILED application is the job's failure (below): it may have run,
		// so it is Failed, never DeployFailed.
		return appFailed()
	}
	switch f.Job.State {
	case flinkclient.JobStateRunning:
		return tracked(v1beta1.JobStateRunning), true
	case flinkclient.JobStateFinished:
		if in.Stopping {
			return tracked(rec), true
		}
		r := tracked(v1beta1.JobStateSucceeded)
		r.Message = fmt.Sprintf("Flink reports job %s FINISHED", f.Job.ID)
		return r, true
	case flinkclient.JobStateCanceled:
		if in.Stopping {
			return tracked(rec), true
		}
		r := tracked(v1beta1.JobStateCancelled)
		r.Message = fmt.Sprintf("Flink reports job %s CANCELED", f.Job.ID)
		return r, true
	case flinkclient.JobStateFailed:
		reason := fmt.Sprintf("Flink reports job %s FAILED", f.Job.ID)
		if f.JobFailure != "" {
			reason += ": " + f.JobFailure
		}
		return fail(v1beta1.JobStateFailed, reason), true
	case flinkclient.JobStateRestarting, flinkclient.JobStateFailing:
		// Flink is retrying within its restart strategy: the job is alive.
		if rec == v1beta1.JobStateLost || rec == v1beta1.JobStateDeploying {
			return tracked(v1beta1.JobStateRunning), true
		}
		return tracked(rec), true
	default:
		// INITIALIZING, CREATED, RECONCILING, SUSPENDED, CANCELLING: in between.
		if rec == v1beta1.JobStateLost {
			return tracked(v1beta1.JobStateDeploying), true
		}
		return tracked(rec), true
	}
}

// notReported: the JobManager lists no job; after its HA recovery grace the job is Lost.
func notReported(in Input, rec string, keep Result) Result {
	if r, ok := haMetadataGone(in, rec); ok {
		return r
	}
	var left time.Duration
	if in.Pod != nil {
		left = StartTime(in.Pod).Add(in.HARecoveryGrace).Sub(in.Now)
	}
	if why := endedUnobserved(in, rec, left <= 0); why != "" {
		return ended(in, rec, why)
	}
	if rec == v1beta1.JobStateLost {
		return withLostTimeout(in, keep)
	}
	if left > 0 {
		keep.RequeueAfter = left
		keep.Unreported = fmt.Sprintf("JobManager pod %s lists no job %s yet: it may still submit it or recover it from HA for %s (--ha-recovery-grace %s from its start), after which the job is Lost",
			in.Pod.Name, in.Recorded.ID, left.Round(time.Second), in.HARecoveryGrace)
		return keep
	}
	reason := fmt.Sprintf("the JobManager has not reported the job within %s of starting", in.HARecoveryGrace)
	return Result{State: v1beta1.JobStateLost, Reason: reason, Message: reason, LostSince: in.Now, RequeueAfter: in.LostTimeout}
}

// FailureHAMetadataMissing is the kind of a failed deployment whose job ran and whose HA
// metadata is gone: main() run again must not start it from empty state.
const FailureHAMetadataMissing = "HAMetadataMissing"

// haMetadataGone fails at once a Deployment's job that ran once HA holds nothing of it: Flink
// 2.2's JobManager exits a second after failing main() again, and restarts listing no job.
func haMetadataGone(in Input, rec string) (Result, bool) {
	if in.HAMetadataGone == "" || in.Stopping || in.DeploymentType != v1beta1.JobManagerDeploymentTypeDeployment ||
		rec == v1beta1.JobStateLost || !ran(in, rec) {
		return Result{}, false
	}
	f := in.Flink
	if f == nil || f.Job != nil || f.DriverJob != nil {
		return Result{}, false
	}
	r := fail(v1beta1.JobStateFailed, "the job's HA metadata is gone: "+in.HAMetadataGone)
	r.DeploymentFailure = FailureHAMetadataMissing
	return r, true
}

// endedUnobserved says why a job the JobManager does not list ended globally unseen, or "".
// A JobManager started after its job ended finds a clean result in the job result store:
// it recovers nothing and refuses main()'s submission as a duplicate, which the application
// takes as done. Flink 2.3 then reports the application FINISHED whatever the job's end;
// before, EndedInHA tells, after the HA recovery grace and for a job that ran (a graph still
// in HA may be recovered). A stop-with-savepoint in flight owns the job's end.
func endedUnobserved(in Input, rec string, afterGrace bool) string {
	f := in.Flink
	if in.Stopping || f == nil || f.Job != nil || f.DriverJob != nil {
		return ""
	}
	if app := f.Application; app != nil {
		if app.Status != flinkclient.ApplicationStateFinished {
			return ""
		}
		return fmt.Sprintf("Flink reports application %s FINISHED and lists no job %s: the job ended and its result is in the job result store, but Flink 2.3 reports FINISHED whatever the job's end was",
			app.ID, in.Recorded.ID)
	}
	if in.EndedInHA == "" || !ran(in, rec) || !afterGrace {
		return ""
	}
	return fmt.Sprintf("the JobManager lists no job %s within %s of starting, and %s", in.Recorded.ID, in.HARecoveryGrace, in.EndedInHA)
}

// ended is the result of a job that ended unobserved: Lost for good, its end unknown.
func ended(in Input, rec, why string) Result {
	reason := "job ended unobserved: " + why + "; how it ended is unknown"
	r := Result{State: v1beta1.JobStateLost, Reason: reason, Message: reason, LostSince: in.Now, Ended: true}
	if rec == v1beta1.JobStateLost {
		r.LostSince = lostSince(in)
	}
	return r
}

// mayHaveRun says why a Deployment deploy never reported RUNNING may have run its job, or "":
// the HA store holds its graph, or a pod of the deploy has run for SubmitBound (on a lost
// node, until now). Crash-loop runs do not count: a failed start is still DeployFailed.
func mayHaveRun(in Input) string {
	if in.JobGraphStored {
		return fmt.Sprintf("Flink's HA store holds job %s's graph: it was submitted", in.Recorded.ID)
	}
	if in.Recorded.ID == "" || in.Workload == nil {
		return ""
	}
	for i := range in.Pods {
		p := &in.Pods[i]
		if p.Labels[resources.LabelJobID] != in.Recorded.ID || p.Labels[resources.LabelRevision] != in.Workload.Revision {
			continue
		}
		if d, ok := RunningFor(p, in.Now); ok && d >= SubmitBound {
			return fmt.Sprintf("JobManager pod %s has run for %s", p.Name, d.Round(time.Second))
		}
	}
	return ""
}

// fromJobWorkload: in Job mode the Job's end is the JobManager's end.
func fromJobWorkload(in Input, rec string) (Result, bool) {
	w := in.Workload
	switch {
	case w.Failed:
		reason := TerminatedFailure(in.Pod)
		if reason == "" {
			reason = "JobManager Job failed"
			if w.FailedMessage != "" {
				reason += ": " + w.FailedMessage
			}
		}
		if run, known := jobManagerRun(in); !ran(in, rec) && (!known || run >= SubmitBound) {
			// Long enough to have run the job, or for an unknown time: see deploymentFailed.
			how := "for an unknown time"
			if known {
				how = "for " + run.Round(time.Second).String()
			}
			return fail(v1beta1.JobStateFailed, reason+" (the JobManager ran "+how+": its job may have run)"), true
		}
		return mainFailed(in, rec, reason), true
	case w.Complete && !in.Stopping:
		// The JobManager outlives its job (execution.shutdown-on-application-finish false) until
		// the controller, with the job's end recorded, shuts it down: so someone else's DELETE
		// /cluster did.
		return ended(in, rec, JobManagerCompletedUnrecorded), true
	}
	return Result{}, false
}

// JobManagerCompletedUnrecorded is why a Job-mode job ended unobserved when its Job completed.
const JobManagerCompletedUnrecorded = "the JobManager Job completed (its JobManager exited 0) with no end of the job on record: " +
	"a shutdown of the Flink cluster (DELETE /cluster) by anyone but the controller ends it SUCCEEDED whatever the job's state"

// SubmitBound is the shortest Job-mode JobManager run that may have run its job unreported (the
// JVM start, main() and the submission take longer); after it, updates ask for a savepoint.
const SubmitBound = 10 * time.Second

// jobManagerRun is how long a failed Job's JobManager ran, from its container or else its Job.
func jobManagerRun(in Input) (d time.Duration, known bool) {
	if d, ok := TerminatedRun(in.Pod); ok {
		return d, true
	}
	if w := in.Workload; w != nil && !w.StartTime.IsZero() && !w.FailedAt.IsZero() && !w.FailedAt.Before(w.StartTime) {
		return w.FailedAt.Sub(w.StartTime), true
	}
	return 0, false
}

func lostSince(in Input) time.Time {
	if in.LostSince.IsZero() {
		return in.Now
	}
	return in.LostSince
}

// withLostTimeout keeps a Lost job Lost until its timeout, then for good.
func withLostTimeout(in Input, r Result) Result {
	if r.State != v1beta1.JobStateLost {
		return r
	}
	r.LostSince = lostSince(in)
	left := r.LostSince.Add(in.LostTimeout).Sub(in.Now)
	if left <= 0 {
		r.LostTimedOut = true
		r.RequeueAfter = 0
		return r
	}
	r.RequeueAfter = left
	return r
}
