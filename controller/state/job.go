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
	// JobID is the job ID of the deploy the workload runs ("" for a workload of an older
	// controller).
	JobID string
	// Deleting is set while the workload is being deleted.
	Deleting bool
	// Failed is set when the Job has a Failed condition (Job mode); FailedMessage says why.
	Failed        bool
	FailedMessage string
	// StartTime and FailedAt are the Job's start and the time it failed (Job mode, zero when
	// not recorded): with the pod gone, they bound how long its JobManager ran.
	StartTime, FailedAt time.Time
	// Complete is set when the Job completed: the JobManager exited with 0 (Job mode).
	Complete bool
	// CreateFailure is the Deployment's ReplicaFailure/FailedCreate message (Deployment mode).
	CreateFailure string
}

// Flink is what the Flink REST API reported, from a JobManager the controller trusts (see
// Trusted).
type Flink struct {
	// Job is the cluster's job, nil when the JobManager does not list it.
	Job *flinkclient.Job
	// JobFailure is the newest exception of a FAILED job.
	JobFailure string
	// JobCount is how many jobs the JobManager lists.
	JobCount int
	// Application is the application (Flink 2.3+); nil when the version has no application
	// API or lists no application.
	Application *flinkclient.Application
	// ApplicationFailure is the newest exception of a FAILED application.
	ApplicationFailure string
	// DriverJob is the FAILED job Flink lists under the name "(application driver)" when
	// main() threw and execution.submit-failed-job-on-application-error is true; nil when
	// there is none or the cluster's job is listed. Its failure is DriverFailure.
	DriverJob     *flinkclient.Job
	DriverFailure string
	// RestoreRefused is set when the job FAILED restoring the controller's ResumeFromHAOnly
	// path: a main() run again without the job's HA data. That path is configured only once
	// the job ran or was submitted, so the job ran, whatever the record says.
	RestoreRefused bool
}

// Input is one observation of a cluster's job.
type Input struct {
	Now            time.Time
	DeploymentType v1beta1.JobManagerDeploymentType
	// Recorded is the job status recorded so far.
	Recorded v1beta1.JobStatus
	// LostSince is when a Lost job became Lost (the Lost condition's lastTransitionTime);
	// zero counts as Now, so a Lost job without a record of its start is never cut short.
	LostSince time.Time
	// LostTimeoutRecorded is set once the Lost timeout was recorded (and afterJobFails
	// applied): the job stays Lost for good, whatever is reported afterwards.
	LostTimeoutRecorded bool
	// EndedRecorded is set once the job was recorded as ended unobserved (Result.Ended):
	// it stays Lost for good, as after the Lost timeout, but without afterJobFails.
	EndedRecorded bool
	// EndedInHA is the evidence in Flink's Kubernetes HA ConfigMaps that the job ended
	// globally (see endedUnobserved); "" when there is none. The controller reads it; the rule
	// here decides when it counts.
	EndedInHA string
	// HAMetadataGone is the evidence in Flink's Kubernetes HA ConfigMaps that the job's HA
	// metadata was deleted behind it (see haMetadataGone); "" when there is none. The
	// controller reads it; the rule here decides when it counts.
	HAMetadataGone string
	// Stopping is set once a stop-with-savepoint of the job was requested (update or
	// cancel): Flink then reports the stopped job FINISHED, which is not a success.
	Stopping bool
	// Workload is the JobManager workload, nil when it does not exist.
	Workload *Workload
	// Pod is the selected JobManager pod, nil when there is none.
	Pod *corev1.Pod
	// Pods are all the cluster's JobManager pods, terminating ones and other deploys' too:
	// a pod of the deploy cut off on a lost node keeps the status it last reported, which
	// may say that its JobManager ran long enough to run the job (see mayHaveRun).
	Pods []corev1.Pod
	// JobGraphStored is set when Flink's HA store holds the job graph of the recorded job
	// ID: the job was submitted (the controller removes the graphs before a deploy that
	// reuses a job ID).
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
	// State is the new job state.
	State string
	// Reason is the failure reason of a transition to Failed, DeployFailed or Lost.
	Reason string
	// DeploymentFailure is the kind of a failed deployment that caused a transition to
	// DeployFailed or Failed (CrashLoopBackOff, ImagePullBackOff, ErrImagePull,
	// CreateContainerConfigError, FailedCreate, ...); "" for any other transition.
	DeploymentFailure string
	// Message explains a transition, for the Event.
	Message string
	// LostSince is when the job became Lost: the recorded time, or Now on the transition.
	// Zero when the job is not Lost.
	LostSince time.Time
	// LostTimedOut is set when the job has been Lost for LostTimeout: it ended, and
	// afterJobFails applies.
	LostTimedOut bool
	// RequeueAfter is when a timer (HA grace, Lost timeout) runs out; zero for none.
	RequeueAfter time.Duration
	// Unreported says, when set, that the recorded state is kept although the JobManager
	// lists no job of the deploy: it started within the HA recovery grace. The state is the
	// record's, not Flink's answer, and the controller says it waits.
	Unreported string
	// Event is the job state machine's derive event that moves the job to State; "" when the
	// state stays.
	Event Event
	// Unlisted is set when the machine lists no derive event from the recorded state to
	// State: the transition is refused, not applied.
	Unlisted bool
	// Ended is set when the job is Lost because it ended in Flink while the controller did
	// not see how (see endedUnobserved): it ended, so nothing deploys it again, but neither
	// afterJobSucceeds nor afterJobFails applies; Reason says what Flink showed.
	Ended bool
}

// IsFailure reports whether a terminal state is a failure (afterJobFails applies).
func IsFailure(state string) bool {
	return state == v1beta1.JobStateFailed || state == v1beta1.JobStateDeployFailed || state == v1beta1.JobStateLost
}

// ran reports whether the job of the current deploy ever ran: Flink reported it RUNNING
// (the recorded start time), the recorded state says so, or its JobManager refused to run
// main() again without its HA data (Flink.RestoreRefused).
func ran(in Input, rec string) bool {
	return flinkcluster.Ran(&in.Recorded) || rec == v1beta1.JobStateRunning || rec == v1beta1.JobStateLost ||
		(in.Flink != nil && in.Flink.RestoreRefused)
}

// failedState is the state of a failure: DeployFailed for a deploy that never ran the job,
// Failed once it ran.
func failedState(in Input, rec string) string {
	if ran(in, rec) {
		return v1beta1.JobStateFailed
	}
	return v1beta1.JobStateDeployFailed
}

// Leader is what Flink's HA services publish about the JobManager that leads the cluster.
type Leader struct {
	// Known is set when the HA leader information was read and names a leader whose lease has
	// not expired.
	Known bool
	// Address is the leader's host (a pod IP: with HA the JobManager runs with -Djobmanager.rpc.address
	// $(POD_IP)).
	Address string
	// Grace is how long past its deletion deadline a pod that cannot renew the lease may
	// still hold or take it (see LeaseGraceFor); LeaseGrace when zero. It is set whether or
	// not a leader is Known.
	Grace time.Duration
}

// Leads reports whether the pod is the JobManager the HA leader information names.
func (l Leader) Leads(pod *corev1.Pod) bool {
	return l.Known && pod != nil && pod.Status.PodIP != "" && pod.Status.PodIP == l.Address
}

// LeaseGrace is how long past its deletion deadline a JobManager pod that is still listed
// (a pod stuck Terminating on a lost node) may still take the leadership when no JobManager
// holds it, with Flink's default lease (15 s): longer than the lease, which such a pod cannot
// renew. LeaseGraceFor scales it with a configured lease.
const LeaseGrace = time.Minute

// LeaseGraceFor is the grace for a lease of the given duration
// (high-availability.kubernetes.leader-election.lease-duration): four leases, as LeaseGrace
// is for the default one, and never less than LeaseGrace. A pod cut off from the API server
// loses the lock one lease after its last renewal; the rest covers a renewal just before
// the deletion and clock skew between the controller and the API server.
func LeaseGraceFor(lease time.Duration) time.Duration {
	return max(LeaseGrace, 4*lease)
}

func (l Leader) grace() time.Duration {
	if l.Grace > 0 {
		return l.Grace
	}
	return LeaseGrace
}

// MayLead reports whether a JobManager pod may hold, or take, the cluster's leadership and
// answer for it. A pod that runs no container (terminal phase) never does. With a valid HA
// leader record, the pod it names does, and so does any pod not being deleted (it would
// take over from a leader that dies); a pod being deleted that does not lead — the pod stuck
// Terminating on a lost node — blocks nothing. Without a leader record any pod may, until a
// deleted one is the leader's Grace past its deletion deadline.
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

// Trusted reports whether the Flink REST API speaks for the current JobManager: the selected
// pod is ready and it is the HA leader; without HA leader information, no other JobManager
// pod may still run. A JobManager that is still up may hold leadership and answer for the
// whole cluster; an old one reports the old execution, whose FINISHED after stop-with-savepoint
// must never be taken for the new deploy's.
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

// DeriveJob applies the lifecycle rules to one observation. A new state comes with the
// derive event of the job state machine that moves the job there (Result.Event), or with
// Result.Unlisted when the machine lists no such move: the caller refuses it.
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
		// A terminal job stays terminal: only a new revision (a spec change) deploys again,
		// so a fixed spec reconciles and nothing resubmits on its own.
		return keep
	case rec == v1beta1.JobStateUpdating || rec == v1beta1.JobStateRestarting:
		// The update and restart flows own these states until they deploy the next workload.
		return keep
	case rec == v1beta1.JobStateLost && in.EndedRecorded && (in.Flink == nil || in.Flink.Job == nil):
		// Ended in Flink (its result is in the job result store): it stays so. Should Flink list
		// the job again after all, it is tracked again below: nothing was cleaned up.
		keep.Ended = true
		return keep
	case rec == v1beta1.JobStateLost:
		// The job reported again wins over a timeout that ran out unrecorded (a clock jump, a
		// controller that was down): only a job still not reported ends; once the timeout is
		// recorded (and its cleanup ran) the job stays Lost.
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

// deploymentFailed: the JobManager cannot run. A deploy that never ran the job failed
// (DeployFailed). A JobManager Deployment whose job ran is kept reconciling: Flink never ended
// the job, and HA recovers it once the cause passes (a storage outage, a node problem), so
// the job is Lost — not terminal — with the DeploymentFailed condition, until the Lost
// timeout.
//
// Flink never reporting the job RUNNING does not make a deploy one that never ran: its
// REST API may not have answered, or not been trusted, while a JobManager ran the job (and
// checkpointed). mayHaveRun's evidence, from Kubernetes and the HA store, then counts as a
// run: taking it for a failed deploy would let the next update restore the deploy's own
// restore point and rewind the job.
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

// missingWorkload: the Deployment of an active job is created again (Pending), never Lost.
// A Job that disappeared cannot be recreated without resubmitting the job: it is Lost.
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

// FailureApplication is the kind of a failed deployment whose JobManager ran but whose
// application failed before the job ran: main() threw (a missing jar or class, a bad
// argument, an exception before execute()), or the JobManager exited with a failure.
const FailureApplication = "ApplicationFailed"

// mainFailed is the result of an application that failed: a deploy that never ran its job
// failed to deploy (DeployFailed, with DeploymentFailed's kind ApplicationFailed); one that
// ran failed (Failed: a job failure, not a failed deployment).
func mainFailed(in Input, rec, reason string) Result {
	r := fail(failedState(in, rec), reason)
	if r.State == v1beta1.JobStateDeployFailed {
		r.DeploymentFailure = FailureApplication
	}
	return r
}

// fromFlink maps the job or application state the REST API reported. ok is false when the
// API does not report the job.
//
// On Flink 2.3 the application's terminal status overrides its job's: an application FAILED
// whose job was CANCELED is a failure of main() after it submitted the job, not a cancel.
// Without a job, a FAILED application, or a FAILED "(application driver)" job
// (execution.submit-failed-job-on-application-error), is a failure of main(); a running
// application without a job yet is still deploying (FLIP-560 delays recovery until
// execute()).
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
			// main() runs but has not submitted the job yet, or, recovering from HA, has not
			// reached execute() again: the application speaks for the job.
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
		// A FAILED job of a FAILED application is the job's failure, as before 2.3 (the
		// case below): it was submitted and may have run, so it is Failed, never DeployFailed.
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

// notReported: the JobManager answers but does not list the job. A JobManager that started
// recently is still recovering it from HA metadata; after the grace the job is Lost — or, when
// Flink shows that the job ended globally (endedUnobserved), Lost and ended.
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
// metadata is gone: no JobManager can recover it, and main() run again must not start it
// from empty state.
const FailureHAMetadataMissing = "HAMetadataMissing"

// haMetadataGone: a JobManager that lists no job of a Deployment that ran, while the HA
// store holds nothing of the job (HAMetadataGone), can never run it again: without its graph
// nothing recovers it, and main() run again either fails on the deploy's ResumeFromHAOnly
// path or is refused as a duplicate of a job in the job result store. The job Failed with
// kind FailureHAMetadataMissing, at once rather than after the HA recovery grace: Flink
// 2.2's JobManager exits within a second of that failure, and its restarted container lists
// no job at all, so the failure itself is seldom seen.
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

// endedUnobserved says why a job the JobManager does not list ended globally in Flink,
// although the controller never saw how; "" when nothing says so. A JobManager that starts
// after its job ended finds the job's result in the job result store
// (FileSystemJobResultStore, kept by job-result-store.delete-on-commit false): a clean result
// means the Dispatcher recovers nothing, main()'s submission is refused as a duplicate of a
// globally terminated job (DuplicateJobSubmissionException), which the application takes as
// done, and the REST API lists no job. (A dirty result is listed in its state by the
// CheckpointResourcesCleanupRunner: fromFlink reads it.) What is left to see:
//
//   - Flink 2.3: the application FINISHED without the job. PackagedProgramApplication turns
//     the refused submission into an "unknown" job result that counts as a success, so
//     FINISHED says the job ended, not how: it is not taken for Succeeded.
//   - Before 2.3, no application status: the HA ConfigMaps (EndedInHA), read once the HA
//     recovery grace is over (afterGrace), for a job that ran. A job graph still in HA may
//     be recovered, so it never counts as ended.
//
// A stop-with-savepoint in flight (Stopping) owns the job's end: its flow reads it.
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

// ended is the result of a job that ended unobserved: Lost (its end is unknown) for good.
func ended(in Input, rec, why string) Result {
	reason := "job ended unobserved: " + why + "; how it ended is unknown"
	r := Result{State: v1beta1.JobStateLost, Reason: reason, Message: reason, LostSince: in.Now, Ended: true}
	if rec == v1beta1.JobStateLost {
		r.LostSince = lostSince(in)
	}
	return r
}

// mayHaveRun says why a Deployment deploy whose job Flink never reported RUNNING may still
// have run it, "" when nothing says so:
//   - the HA store holds the job's graph: the job was submitted, and a submitted job may
//     have run (HA recovers it once the JobManager can start);
//   - a JobManager pod of the deploy (its job ID and revision) has a container that has been
//     running for SubmitBound, as Job mode judges a JobManager's run: long enough to have
//     run the job. A pod on a lost node keeps reporting the run it last reported; nothing
//     says it stopped, so its run counts until now. A crash loop's short runs (the
//     container waiting, its last run terminated) are no such evidence: a JobManager that
//     fails to start must still make the deploy DeployFailed.
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
			// Flink never reported the job, but its JobManager ran long enough to have run
			// it (or nothing tells how long): taking it for a failed deploy would let the
			// next update restore the deploy's own restore point and rewind the job.
			how := "for an unknown time"
			if known {
				how = "for " + run.Round(time.Second).String()
			}
			return fail(v1beta1.JobStateFailed, reason+" (the JobManager ran "+how+": its job may have run)"), true
		}
		return mainFailed(in, rec, reason), true
	case w.Complete && !in.Stopping:
		// The JobManager outlives its job (execution.shutdown-on-application-finish false)
		// until the controller shuts it down once the job's end is on record, and a recorded
		// end never reaches here (DeriveJob keeps it). A Job that completes otherwise was
		// shut down by someone else: DELETE /cluster ends the cluster SUCCEEDED, exit 0,
		// whatever the job's state, so its completion says that the job ended, not how.
		return ended(in, rec, JobManagerCompletedUnrecorded), true
	}
	return Result{}, false
}

// JobManagerCompletedUnrecorded is why a Job-mode job whose JobManager Job completed before
// the job's end was on record ended unobserved.
const JobManagerCompletedUnrecorded = "the JobManager Job completed (its JobManager exited 0) with no end of the job on record: " +
	"a shutdown of the Flink cluster (DELETE /cluster) by anyone but the controller ends it SUCCEEDED whatever the job's state"

// SubmitBound is the shortest JobManager run that may have run its job, in Job mode with
// Flink never heard from: the JVM start, the application's main() and the job's submission
// take longer. A JobManager that failed sooner failed to deploy (DeployFailed); one that ran
// longer may have run the job (Failed), so the next update asks for a savepoint rather than
// restore the deploy's own restore point.
const SubmitBound = 10 * time.Second

// jobManagerRun is how long the JobManager of a failed Job ran, from what Kubernetes
// recorded: its container's terminated run (start and finish), else the Job's start and the
// time it failed. known is false when neither is recorded (the pod is gone, the Job's times
// are not set).
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

// withLostTimeout keeps a Lost job Lost and says when its timeout runs out. A job Lost for
// the timeout stays Lost for good (afterJobFails applies): time only moves on, so nothing,
// not even a missing Deployment, deploys it again.
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
