package state_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

const (
	jobID = "0123456789abcdef0123456789abcdef"
	grace = 5 * time.Minute
	lost  = 10 * time.Minute
)

var (
	t0  = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	dep = v1beta1.JobManagerDeploymentTypeDeployment
	job = v1beta1.JobManagerDeploymentTypeJob
)

func running(started time.Time) *corev1.Pod {
	return builder.SetRunning(builder.Pod("wc", "wc-jm-1", "wc-r1", started), started)
}

func flinkJob(s string) *state.Flink {
	return &state.Flink{Job: &flinkclient.Job{ID: jobID, State: s}, JobCount: 1}
}

// ofDeploy labels a pod with the job ID of the deploy it runs, as the controller's pod
// template does.
func ofDeploy(pod *corev1.Pod, id string) *corev1.Pod {
	pod.Labels[resources.LabelJobID] = id
	return pod
}

// cutOff leaves a pod as it stays once its node is lost: deleted (evicted), not ready, its
// container still reported running.
func cutOff(pod *corev1.Pod) *corev1.Pod {
	pod.DeletionTimestamp = &metav1.Time{Time: t0.Add(-time.Minute)}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	return pod
}

func recorded(s string) v1beta1.JobStatus { return v1beta1.JobStatus{ID: jobID, State: s} }

// ranJob is a recorded job that Flink reported RUNNING (its start time is recorded).
func ranJob(s string) v1beta1.JobStatus {
	return v1beta1.JobStatus{ID: jobID, State: s, StartTime: "2026-11-30T12:00:00Z"}
}

func TestDeriveJob(t *testing.T) {
	wl := &state.Workload{Revision: "wc-r1"}
	crash := builder.SetCrashLoop(builder.Pod("wc", "wc-jm-1", "wc-r1", t0), t0, 3, 20*time.Second, 1,
		"2026-11-30 INFO starting\norg.apache.flink.client.program.ProgramInvocationException: The main method caused an error\nCaused by: java.lang.ClassNotFoundException: org.example.Missing")

	tests := []struct {
		name   string
		in     state.Input
		want   string
		reason string
		timed  bool
		// kind is the failed deployment's kind (Result.DeploymentFailure).
		kind string
		// ended: the job ended unobserved (Result.Ended).
		ended bool
	}{
		// Rule 1: terminal states only from the Flink API in Deployment mode.
		{name: "Deployment: API unreachable while the JobManager restarts keeps Running",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Running"), Workload: wl, Pod: nil},
			want: "Running"},
		{name: "Deployment: FINISHED from the API is Succeeded",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Running"), Workload: wl, Pod: running(t0), Flink: flinkJob("FINISHED")},
			want: "Succeeded"},
		{name: "Deployment: FINISHED after stop-with-savepoint is not Succeeded",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Running"), Stopping: true, Workload: wl, Pod: running(t0), Flink: flinkJob("FINISHED")},
			want: "Running"},
		{name: "Deployment: CANCELED from the API is Cancelled",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Running"), Workload: wl, Pod: running(t0), Flink: flinkJob("CANCELED")},
			want: "Cancelled"},
		{name: "Deployment: FAILED with exceptions is Failed with the newest exception",
			in: state.Input{DeploymentType: dep, Recorded: recorded("Running"), Workload: wl, Pod: running(t0),
				Flink: &state.Flink{Job: &flinkclient.Job{ID: jobID, State: "FAILED"}, JobCount: 1, JobFailure: "org.apache.flink.runtime.JobException: Recovery is suppressed"}},
			want: "Failed", reason: "Flink reports job " + jobID + " FAILED: org.apache.flink.runtime.JobException: Recovery is suppressed"},
		{name: "Deployment: FAILED while deploying (retries exhausted from startup) is Failed",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: running(t0), Flink: flinkJob("FAILED")},
			want: "Failed", reason: "Flink reports job " + jobID + " FAILED"},
		{name: "Deployment: RESTARTING within Flink's restart strategy stays Running",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Running"), Workload: wl, Pod: running(t0), Flink: flinkJob("RESTARTING")},
			want: "Running"},
		{name: "Deployment: RUNNING after deploying is Running",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: running(t0), Flink: flinkJob("RUNNING")},
			want: "Running"},
		{name: "Pending with an existing workload is Deploying",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Pending"), Workload: wl},
			want: "Deploying"},
		{name: "new job without a workload is Pending",
			in:   state.Input{DeploymentType: dep, Workload: nil},
			want: "Pending"},

		// Terminal states are sticky.
		{name: "Succeeded stays Succeeded although the API says RUNNING",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Succeeded"), Workload: wl, Pod: running(t0), Flink: flinkJob("RUNNING")},
			want: "Succeeded"},
		{name: "DeployFailed is not raised again (a fixed spec reconciles)",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("DeployFailed"), Workload: wl, Pod: crash},
			want: "DeployFailed"},
		{name: "Updating belongs to the update flow",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Updating"), Workload: nil},
			want: "Updating"},

		// Rule 2: HA recovery grace.
		{name: "Deployment: job not reported by a JobManager started 4m ago keeps Running",
			in:   state.Input{Now: t0.Add(4 * time.Minute), DeploymentType: dep, Recorded: recorded("Running"), Workload: wl, Pod: running(t0), Flink: &state.Flink{}},
			want: "Running"},
		{name: "Deployment: job not reported 5m after the JobManager started is Lost",
			in:   state.Input{Now: t0.Add(5 * time.Minute), DeploymentType: dep, Recorded: recorded("Running"), Workload: wl, Pod: running(t0), Flink: &state.Flink{}},
			want: "Lost", reason: "the JobManager has not reported the job within 5m0s of starting"},
		{name: "Job: job not reported after the grace is Lost",
			in:   state.Input{Now: t0.Add(6 * time.Minute), DeploymentType: job, Recorded: recorded("Running"), Workload: wl, Pod: running(t0), Flink: &state.Flink{}},
			want: "Lost", reason: "the JobManager has not reported the job within 5m0s of starting"},

		// Rule 3: Lost is tracked again, or times out.
		{name: "Lost job reported RUNNING again is Running",
			in:   state.Input{Now: t0.Add(7 * time.Minute), DeploymentType: dep, Recorded: recorded("Lost"), LostSince: t0, Workload: wl, Pod: running(t0), Flink: flinkJob("RUNNING")},
			want: "Running"},
		{name: "Lost job reported INITIALIZING again is Deploying",
			in:   state.Input{Now: t0.Add(7 * time.Minute), DeploymentType: dep, Recorded: recorded("Lost"), LostSince: t0, Workload: wl, Pod: running(t0), Flink: flinkJob("INITIALIZING")},
			want: "Deploying"},
		{name: "Lost job within the timeout stays Lost",
			in:   state.Input{Now: t0.Add(9 * time.Minute), DeploymentType: dep, Recorded: recorded("Lost"), LostSince: t0, Workload: wl, Pod: running(t0), Flink: &state.Flink{}},
			want: "Lost"},
		{name: "Lost job after the timeout stays Lost and times out (afterJobFails applies)",
			in:   state.Input{Now: t0.Add(10 * time.Minute), DeploymentType: dep, Recorded: recorded("Lost"), LostSince: t0, Workload: wl, Pod: running(t0), Flink: &state.Flink{}},
			want: "Lost", timed: true},
		{name: "Lost job times out also while the API is unreachable",
			in:   state.Input{Now: t0.Add(11 * time.Minute), DeploymentType: dep, Recorded: recorded("Lost"), LostSince: t0, Workload: wl},
			want: "Lost", timed: true},
		{name: "Lost job past the timeout is not tracked again (its cleanup ran)",
			in:   state.Input{Now: t0.Add(11 * time.Minute), DeploymentType: dep, Recorded: recorded("Lost"), LostSince: t0, LostTimeoutRecorded: true, Workload: wl, Pod: running(t0), Flink: flinkJob("RUNNING")},
			want: "Lost", timed: true},
		{name: "Deployment: Lost job past the timeout whose Deployment is missing stays Lost, not created again",
			in:   state.Input{Now: t0.Add(11 * time.Minute), DeploymentType: dep, Recorded: recorded("Lost"), LostSince: t0, Workload: nil},
			want: "Lost", timed: true},
		{name: "Deployment: Lost job within the timeout whose Deployment is missing goes back to Pending",
			in:   state.Input{Now: t0.Add(time.Minute), DeploymentType: dep, Recorded: recorded("Lost"), LostSince: t0, Workload: nil},
			want: "Pending"},
		{name: "Job: Lost job whose Job is missing stays Lost within the timeout",
			in:   state.Input{Now: t0.Add(time.Minute), DeploymentType: job, Recorded: recorded("Lost"), LostSince: t0, Workload: nil},
			want: "Lost"},

		// Rule 4: failed deployments.
		{name: "Deployment: CrashLoopBackOff after 3 short runs makes a deploying job DeployFailed",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: crash},
			want: "DeployFailed", reason: "JobManager container in CrashLoopBackOff after 3 restarts, exit code 1: java.lang.ClassNotFoundException: org.example.Missing", kind: "CrashLoopBackOff"},
		// Hole 5 (issue 8): Flink never ended the job and HA recovers it once the cause passes.
		{name: "Deployment: CrashLoopBackOff of a running job's JobManager keeps it non-terminal (Lost) with the failure",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Running"), Workload: wl, Pod: crash},
			want: "Lost", reason: "JobManager container in CrashLoopBackOff after 3 restarts, exit code 1: java.lang.ClassNotFoundException: org.example.Missing", kind: "CrashLoopBackOff"},
		{name: "Deployment: a job that ran and crash-loops after a JobManager restart is not DeployFailed",
			in:   state.Input{DeploymentType: dep, Recorded: v1beta1.JobStatus{ID: jobID, State: "Deploying", StartTime: "2026-11-30T11:00:00Z"}, Workload: wl, Pod: crash},
			want: "Lost", reason: "JobManager container in CrashLoopBackOff after 3 restarts, exit code 1: java.lang.ClassNotFoundException: org.example.Missing", kind: "CrashLoopBackOff"},
		// Flink never reported the job RUNNING (its REST API timed out, or was not trusted
		// while an old pod may still lead), but what Kubernetes and the HA store recorded
		// says it may have run (seed 1796139225380832786): the deploy is not DeployFailed.
		{name: "Deployment: a crash loop while another pod of the deploy, cut off on a lost node, has run for 15m is Lost, not DeployFailed",
			in: state.Input{DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: crash,
				Pods: []corev1.Pod{*cutOff(ofDeploy(running(t0.Add(-15*time.Minute)), jobID)), *ofDeploy(crash.DeepCopy(), jobID)}},
			want: "Lost", reason: "JobManager container in CrashLoopBackOff after 3 restarts, exit code 1: java.lang.ClassNotFoundException: org.example.Missing (JobManager pod wc-jm-1 has run for 15m0s: its job may have run)", kind: "CrashLoopBackOff"},
		{name: "Deployment: a crash loop with the deploy's job graph in the HA store is Lost, not DeployFailed",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: crash, JobGraphStored: true},
			want: "Lost", reason: "JobManager container in CrashLoopBackOff after 3 restarts, exit code 1: java.lang.ClassNotFoundException: org.example.Missing (Flink's HA store holds job " + jobID + "'s graph: it was submitted: its job may have run)", kind: "CrashLoopBackOff"},
		{name: "Deployment: the crash-looping pod's own short runs are no evidence of a run: DeployFailed",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: crash, Pods: []corev1.Pod{*ofDeploy(crash.DeepCopy(), jobID)}},
			want: "DeployFailed", reason: "JobManager container in CrashLoopBackOff after 3 restarts, exit code 1: java.lang.ClassNotFoundException: org.example.Missing", kind: "CrashLoopBackOff"},
		{name: "Deployment: another pod of the deploy that has run for less than SubmitBound is no evidence: DeployFailed",
			in: state.Input{DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: crash,
				Pods: []corev1.Pod{*cutOff(ofDeploy(running(t0.Add(-state.SubmitBound+time.Second)), jobID)), *ofDeploy(crash.DeepCopy(), jobID)}},
			want: "DeployFailed", reason: "JobManager container in CrashLoopBackOff after 3 restarts, exit code 1: java.lang.ClassNotFoundException: org.example.Missing", kind: "CrashLoopBackOff"},
		{name: "Deployment: an old deploy's pod still running on a lost node is no evidence for this deploy: DeployFailed",
			in: state.Input{DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: crash,
				Pods: []corev1.Pod{*cutOff(ofDeploy(running(t0.Add(-time.Hour)), "ffffffffffffffffffffffffffffffff")), *ofDeploy(crash.DeepCopy(), jobID)}},
			want: "DeployFailed", reason: "JobManager container in CrashLoopBackOff after 3 restarts, exit code 1: java.lang.ClassNotFoundException: org.example.Missing", kind: "CrashLoopBackOff"},
		{name: "Deployment: the crash loop of a Lost job ends at the Lost timeout",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Lost"), LostSince: t0.Add(-lost - time.Second), Workload: wl, Pod: crash},
			want: "Lost", timed: true},
		{name: "Deployment: CrashLoopBackOff after 2 restarts is not yet a failure",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: builder.SetCrashLoop(builder.Pod("wc", "p", "r", t0), t0, 2, time.Second, 1, "x")},
			want: "Deploying"},
		{name: "Deployment: CrashLoopBackOff after a long run is not a failed deployment",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Running"), Workload: wl, Pod: builder.SetCrashLoop(builder.Pod("wc", "p", "r", t0), t0, 5, time.Hour, 137, "OOMKilled")},
			want: "Running"},
		{name: "Deployment: ImagePullBackOff makes a deploying job DeployFailed",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: builder.SetWaiting(builder.Pod("wc", "p", "r", t0), t0, "ImagePullBackOff", "Back-off pulling image \"flink:nope\"")},
			want: "DeployFailed", reason: "container jobmanager: ImagePullBackOff: Back-off pulling image \"flink:nope\"", kind: "ImagePullBackOff"},
		{name: "Deployment: CreateContainerConfigError makes a deploying job DeployFailed",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: builder.SetWaiting(builder.Pod("wc", "p", "r", t0), t0, "CreateContainerConfigError", "secret \"creds\" not found")},
			want: "DeployFailed", reason: "container jobmanager: CreateContainerConfigError: secret \"creds\" not found", kind: "CreateContainerConfigError"},
		{name: "Job: ErrImagePull makes a deploying job DeployFailed",
			in:   state.Input{DeploymentType: job, Recorded: recorded("Deploying"), Workload: wl, Pod: builder.SetWaiting(builder.Pod("wc", "p", "r", t0), t0, "ErrImagePull", "manifest unknown")},
			want: "DeployFailed", reason: "container jobmanager: ErrImagePull: manifest unknown", kind: "ErrImagePull"},
		{name: "Deployment: ReplicaFailure FailedCreate makes a deploying job DeployFailed",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Deploying"), Workload: &state.Workload{CreateFailure: "JobManager pod cannot be created: exceeded quota"}},
			want: "DeployFailed", reason: "JobManager pod cannot be created: exceeded quota", kind: "FailedCreate"},

		// Rule 5: a missing Deployment is created again.
		{name: "Deployment: running job whose Deployment is missing goes back to Pending, not Lost",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Running"), Workload: nil},
			want: "Pending"},
		{name: "Job: running job whose Job is missing is Lost",
			in:   state.Input{Now: t0, DeploymentType: job, Recorded: recorded("Running"), Workload: nil},
			want: "Lost", reason: "JobManager Job is missing"},

		// Rule 9: application-level failure (Flink 2.3).
		{name: "Deployment: application FAILED with an empty job list is DeployFailed with its cause",
			in: state.Input{Now: t0.Add(time.Minute), DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: running(t0),
				Flink: &state.Flink{Application: &flinkclient.Application{ID: "app", Status: "FAILED"}, ApplicationFailure: "java.lang.NumberFormatException: For input string: \"x\""}},
			want: "DeployFailed", reason: "the application failed before submitting a job: java.lang.NumberFormatException: For input string: \"x\"", kind: state.FailureApplication},
		// Hole 6 (issue 8).
		{name: "Deployment: application FAILED while its job was CANCELED is a failure of main(), not a cancel",
			in: state.Input{Now: t0.Add(time.Minute), DeploymentType: dep, Recorded: v1beta1.JobStatus{ID: jobID, State: "Running", StartTime: "2026-11-30T12:00:00Z"}, Workload: wl, Pod: running(t0),
				Flink: &state.Flink{Job: &flinkclient.Job{ID: jobID, State: "CANCELED"}, Application: &flinkclient.Application{ID: "app", Status: "FAILED"}, ApplicationFailure: "java.lang.IllegalStateException: after execute"}},
			want: "Failed", reason: "the application failed: java.lang.IllegalStateException: after execute"},
		{name: "Deployment: application RUNNING without the job after the HA grace is not Lost (FLIP-560)",
			in: state.Input{Now: t0.Add(time.Hour), DeploymentType: dep, Recorded: v1beta1.JobStatus{ID: jobID, State: "Running", StartTime: "2026-11-30T12:00:00Z"}, Workload: wl, Pod: running(t0),
				Flink: &state.Flink{Application: &flinkclient.Application{ID: "app", Status: "RUNNING"}}},
			want: "Running"},
		{name: "Deployment: the (application driver) job FAILED is DeployFailed with its exception",
			in: state.Input{Now: t0.Add(time.Minute), DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: running(t0),
				Flink: &state.Flink{DriverJob: &flinkclient.Job{ID: "ffffffffffffffffffffffffffffffff", Name: "(application driver)", State: "FAILED"}, DriverFailure: "java.lang.RuntimeException: boom", JobCount: 1}},
			want: "DeployFailed", reason: "the application's main() failed: java.lang.RuntimeException: boom", kind: state.FailureApplication},
		// Hole 1 (issue 8): a listed job with another ID is never this deploy's.
		{name: "Deployment: a FINISHED job of another ID is not read as this deploy's (no adoption)",
			in: state.Input{Now: t0.Add(time.Hour), DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: running(t0),
				Flink: &state.Flink{JobCount: 1}},
			want: "Lost", reason: "the JobManager has not reported the job within 5m0s of starting"},
		{name: "Deployment: application RUNNING with an empty job list is within the grace",
			in: state.Input{Now: t0.Add(time.Minute), DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: running(t0),
				Flink: &state.Flink{Application: &flinkclient.Application{ID: "app", Status: "RUNNING"}}},
			want: "Deploying"},

		// Issue 17 hole 6: the job ended globally while its JobManager restarted unseen; the
		// restarted JobManager found its clean result in the job result store and lists no job.
		{name: "Deployment 2.3: application FINISHED without the job ended unobserved, not Succeeded and not Lost-then-failed",
			in: state.Input{Now: t0.Add(time.Minute), DeploymentType: dep, Recorded: ranJob("Running"), Workload: wl, Pod: running(t0),
				Flink: &state.Flink{Application: &flinkclient.Application{ID: "app", Status: "FINISHED"}}},
			want: "Lost", ended: true,
			reason: "job ended unobserved: Flink reports application app FINISHED and lists no job " + jobID + ": the job ended and its result is in the job result store, but Flink 2.3 reports FINISHED whatever the job's end was; how it ended is unknown"},
		{name: "Deployment 2.3: application FINISHED without the job while a stop is in flight belongs to the stop's flow",
			in: state.Input{Now: t0.Add(time.Minute), DeploymentType: dep, Recorded: ranJob("Running"), Stopping: true, Workload: wl, Pod: running(t0),
				Flink: &state.Flink{Application: &flinkclient.Application{ID: "app", Status: "FINISHED"}}},
			want: "Running"},
		{name: "Deployment: HA says the job ended, within the HA recovery grace: still waits",
			in: state.Input{Now: t0.Add(time.Minute), DeploymentType: dep, Recorded: ranJob("Running"), Workload: wl, Pod: running(t0),
				Flink: &state.Flink{}, EndedInHA: "its graph is gone"},
			want: "Running"},
		{name: "Deployment: HA says the job ended, after the grace: ended unobserved, not Lost-then-failed",
			in: state.Input{Now: t0.Add(5 * time.Minute), DeploymentType: dep, Recorded: ranJob("Running"), Workload: wl, Pod: running(t0),
				Flink: &state.Flink{}, EndedInHA: "its graph is gone"},
			want: "Lost", ended: true,
			reason: "job ended unobserved: the JobManager lists no job " + jobID + " within 5m0s of starting, and its graph is gone; how it ended is unknown"},
		{name: "Deployment: a Lost job that HA then says ended is ended unobserved",
			in: state.Input{Now: t0.Add(7 * time.Minute), DeploymentType: dep, Recorded: recorded("Lost"), LostSince: t0.Add(5 * time.Minute), Workload: wl, Pod: running(t0),
				Flink: &state.Flink{}, EndedInHA: "its graph is gone"},
			want: "Lost", ended: true,
			reason: "job ended unobserved: the JobManager lists no job " + jobID + " within 5m0s of starting, and its graph is gone; how it ended is unknown"},
		{name: "Deployment: HA says the job ended, but it never ran: Lost after the grace, not ended",
			in: state.Input{Now: t0.Add(5 * time.Minute), DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: running(t0),
				Flink: &state.Flink{}, EndedInHA: "its graph is gone"},
			want: "Lost", reason: "the JobManager has not reported the job within 5m0s of starting"},
		{name: "Deployment: HA says the job ended, but Flink lists it FAILED: Failed",
			in: state.Input{Now: t0.Add(5 * time.Minute), DeploymentType: dep, Recorded: ranJob("Running"), Workload: wl, Pod: running(t0),
				Flink: flinkJob("FAILED"), EndedInHA: "its graph is gone"},
			want: "Failed", reason: "Flink reports job " + jobID + " FAILED"},
		// Issue 37: found on real Flink 2.2.1. HA ConfigMaps deleted behind a running job: the
		// leader exits, its restarted container fails the job on ResumeFromHAOnly and exits
		// within a second, and the next lists no job (the job result store refuses main()'s
		// submission): the failure is seldom seen, the HA store's state is.
		{name: "Deployment: a job that ran, listed by no JobManager, its HA metadata gone: Failed at once with HAMetadataMissing, not after the grace",
			in: state.Input{Now: t0.Add(time.Minute), DeploymentType: dep, Recorded: ranJob("Running"), Workload: wl, Pod: running(t0),
				Flink: &state.Flink{}, HAMetadataGone: "the HA ConfigMaps were deleted"},
			want: "Failed", reason: "the job's HA metadata is gone: the HA ConfigMaps were deleted", kind: state.FailureHAMetadataMissing},
		{name: "Deployment: HA metadata gone while Flink still lists the job RUNNING: tracked (the redeploy flow answers it)",
			in: state.Input{Now: t0.Add(time.Minute), DeploymentType: dep, Recorded: ranJob("Running"), Workload: wl, Pod: running(t0),
				Flink: flinkJob("RUNNING"), HAMetadataGone: "the HA ConfigMaps were deleted"},
			want: "Running"},
		{name: "Deployment: HA metadata gone during a stop-with-savepoint belongs to the stop's flow",
			in: state.Input{Now: t0.Add(time.Minute), DeploymentType: dep, Recorded: ranJob("Running"), Stopping: true, Workload: wl, Pod: running(t0),
				Flink: &state.Flink{}, HAMetadataGone: "the HA ConfigMaps were deleted"},
			want: "Running"},
		{name: "Deployment: HA metadata gone of a job that never ran: the HA recovery grace applies",
			in: state.Input{Now: t0.Add(time.Minute), DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: running(t0),
				Flink: &state.Flink{}, HAMetadataGone: "the HA ConfigMaps were deleted"},
			want: "Deploying"},
		{name: "Deployment: recorded ended unobserved, then listed RUNNING after all, is tracked again (nothing was cleaned up)",
			in: state.Input{Now: t0.Add(time.Hour), DeploymentType: dep, Recorded: recorded("Lost"), EndedRecorded: true, LostSince: t0, Workload: wl, Pod: running(t0),
				Flink: flinkJob("RUNNING")},
			want: "Running"},
		{name: "Deployment: recorded ended unobserved stays so while the JobManager does not answer",
			in:   state.Input{Now: t0.Add(time.Hour), DeploymentType: dep, Recorded: recorded("Lost"), EndedRecorded: true, LostSince: t0, Workload: wl},
			want: "Lost", ended: true},
		{name: "Deployment: recorded ended unobserved never times out into afterJobFails",
			in: state.Input{Now: t0.Add(time.Hour), DeploymentType: dep, Recorded: recorded("Lost"), EndedRecorded: true, LostSince: t0, Workload: wl, Pod: running(t0),
				Flink: &state.Flink{}},
			want: "Lost", ended: true},

		// Job mode: the Job's end.
		{name: "Job: Job failed after the pod was deleted is Failed",
			in:   state.Input{DeploymentType: job, Recorded: recorded("Running"), Workload: &state.Workload{Failed: true, FailedMessage: "BackoffLimitExceeded: Job has reached the specified backoff limit"}},
			want: "Failed", reason: "JobManager Job failed: BackoffLimitExceeded: Job has reached the specified backoff limit"},
		{name: "Job: main() threw and the JobManager exited 1 is DeployFailed with the log line",
			in: state.Input{DeploymentType: job, Recorded: recorded("Deploying"), Workload: &state.Workload{Failed: true},
				Pod: builder.SetTerminated(builder.Pod("wc", "p", "r", t0), t0, 1, "ERROR x\norg.apache.flink.client.program.ProgramInvocationException: The main method caused an error: boom")},
			want: "DeployFailed", reason: "JobManager container exited with code 1: org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: boom", kind: state.FailureApplication},
		// Issue 17 hole 5: with Flink never heard from, what Kubernetes recorded of the
		// JobManager's run says whether the job may have run.
		{name: "Job: a JobManager that ran for days before its Job failed, Flink never answering, is Failed, not DeployFailed",
			in: state.Input{DeploymentType: job, Recorded: recorded("Deploying"), Workload: &state.Workload{Failed: true},
				Pod: builder.SetTerminated(builder.SetRunning(builder.Pod("wc", "p", "r", t0.Add(-72*time.Hour)), t0.Add(-72*time.Hour)), t0, 1, "java.lang.OutOfMemoryError")},
			want: "Failed", reason: "JobManager container exited with code 1: java.lang.OutOfMemoryError (the JobManager ran for 72h0m0s: its job may have run)"},
		{name: "Job: a failed Job whose pod is gone, with no times recorded, may have run: Failed",
			in:   state.Input{DeploymentType: job, Recorded: recorded("Deploying"), Workload: &state.Workload{Failed: true}},
			want: "Failed", reason: "JobManager Job failed (the JobManager ran for an unknown time: its job may have run)"},
		{name: "Job: a failed Job whose pod is gone, failed seconds after its start, is DeployFailed",
			in:   state.Input{DeploymentType: job, Recorded: recorded("Deploying"), Workload: &state.Workload{Failed: true, StartTime: t0, FailedAt: t0.Add(3 * time.Second)}},
			want: "DeployFailed", reason: "JobManager Job failed", kind: state.FailureApplication},
		{name: "Job: a failed Job whose pod is gone, failed an hour after its start, is Failed",
			in:   state.Input{DeploymentType: job, Recorded: recorded("Deploying"), Workload: &state.Workload{Failed: true, StartTime: t0, FailedAt: t0.Add(time.Hour)}},
			want: "Failed", reason: "JobManager Job failed (the JobManager ran for 1h0m0s: its job may have run)"},
		{name: "Deployment 2.3: a FAILED job of a FAILED application is Failed, not DeployFailed",
			in: state.Input{DeploymentType: dep, Recorded: recorded("Deploying"), Workload: wl, Pod: running(t0),
				Flink: &state.Flink{Job: &flinkclient.Job{ID: jobID, State: "FAILED"}, Application: &flinkclient.Application{ID: "app", Status: "FAILED"}}},
			want: "Failed", reason: "Flink reports job " + jobID + " FAILED"},
		{name: "Job: a Job completed with the job running on record ended unobserved, not Succeeded",
			in:   state.Input{DeploymentType: job, Recorded: recorded("Running"), Workload: &state.Workload{Complete: true}},
			want: "Lost", reason: "job ended unobserved: " + state.JobManagerCompletedUnrecorded + "; how it ended is unknown", ended: true},
		{name: "Job: a Job completed while deploying ended unobserved, not Succeeded",
			in:   state.Input{DeploymentType: job, Recorded: recorded("Deploying"), Workload: &state.Workload{Complete: true}},
			want: "Lost", reason: "job ended unobserved: " + state.JobManagerCompletedUnrecorded + "; how it ended is unknown", ended: true},
		{name: "Job: a Job completed while the job is Lost ended unobserved, not Succeeded",
			in:   state.Input{DeploymentType: job, Recorded: recorded("Lost"), LostSince: t0, Workload: &state.Workload{Complete: true}},
			want: "Lost", reason: "job ended unobserved: " + state.JobManagerCompletedUnrecorded + "; how it ended is unknown", ended: true},
		{name: "Job: a Job completed after the job's end was on record keeps that end",
			in:   state.Input{DeploymentType: job, Recorded: recorded("Failed"), Workload: &state.Workload{Complete: true}},
			want: "Failed"},
		{name: "Job: Job complete after stop-with-savepoint is not Succeeded",
			in:   state.Input{DeploymentType: job, Recorded: recorded("Running"), Stopping: true, Workload: &state.Workload{Complete: true}},
			want: "Running"},
		{name: "Deployment: a Deployment never completes a job by itself",
			in:   state.Input{DeploymentType: dep, Recorded: recorded("Running"), Workload: &state.Workload{Complete: true, Failed: true}},
			want: "Running"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.HARecoveryGrace, tc.in.LostTimeout = grace, lost
			if tc.in.Now.IsZero() {
				tc.in.Now = t0
			}
			got := state.DeriveJob(tc.in)
			assert.Equal(t, tc.want, got.State)
			assert.Equal(t, tc.reason, got.Reason)
			assert.Equal(t, tc.timed, got.LostTimedOut, "lost timed out")
			assert.Equal(t, tc.kind, got.DeploymentFailure, "deployment failure kind")
			assert.Equal(t, tc.ended, got.Ended, "ended unobserved")
			// Every move names the machine's derive event that makes it; staying names none.
			from := tc.in.Recorded.State
			if from == "" {
				from = "Pending"
			}
			assert.False(t, got.Unlisted, "the machine lists %s -> %s", from, got.State)
			if got.State == from {
				assert.Empty(t, got.Event)
				return
			}
			to, ok := state.Next(from, got.Event)
			assert.True(t, ok && to == got.State, "event %q moves %s to %s, not %s", got.Event, from, to, got.State)
		})
	}
}

func TestDeriveJobTimers(t *testing.T) {
	in := state.Input{Now: t0.Add(time.Minute), DeploymentType: dep, Recorded: recorded("Running"),
		Workload: &state.Workload{}, Pod: running(t0), Flink: &state.Flink{}, HARecoveryGrace: grace, LostTimeout: lost}
	assert.Equal(t, 4*time.Minute, state.DeriveJob(in).RequeueAfter, "requeue when the grace ends")
	assert.Contains(t, state.DeriveJob(in).Unreported, "lists no job "+jobID+" yet",
		"a state kept within the grace, without Flink's word, is said to be unreported")
	listed := in
	listed.Flink = &state.Flink{Job: &flinkclient.Job{ID: jobID, State: flinkclient.JobStateRunning}, JobCount: 1}
	assert.Empty(t, state.DeriveJob(listed).Unreported, "a job Flink lists is reported")

	in.Now = t0.Add(5 * time.Minute)
	r := state.DeriveJob(in)
	assert.Equal(t, t0.Add(5*time.Minute), r.LostSince, "Lost since now")
	assert.Equal(t, lost, r.RequeueAfter, "requeue when the Lost timeout ends")

	in.Recorded, in.LostSince = recorded("Lost"), t0.Add(5*time.Minute)
	in.Now = t0.Add(12 * time.Minute)
	r = state.DeriveJob(in)
	assert.Equal(t, t0.Add(5*time.Minute), r.LostSince, "the recorded Lost time is kept")
	assert.Equal(t, 3*time.Minute, r.RequeueAfter)
}

// TestLostSinceComesFromTheCondition: the Lost timer runs from Input.LostSince (the Lost
// condition's lastTransitionTime). completionTime is for jobs that completed and never
// shortens the timer.
func TestLostSinceComesFromTheCondition(t *testing.T) {
	in := state.Input{Now: t0.Add(time.Hour), DeploymentType: dep, Workload: &state.Workload{}, Pod: running(t0), Flink: &state.Flink{},
		HARecoveryGrace: grace, LostTimeout: lost,
		Recorded: v1beta1.JobStatus{ID: jobID, State: v1beta1.JobStateLost, CompletionTime: &metav1.Time{Time: t0}}}
	r := state.DeriveJob(in)
	assert.False(t, r.LostTimedOut, "an hour-old completionTime does not end a Lost job")
	assert.Equal(t, in.Now, r.LostSince, "without a Lost time the job counts as Lost since now")
	assert.Equal(t, lost, r.RequeueAfter)

	in.LostSince = t0.Add(50 * time.Minute)
	r = state.DeriveJob(in)
	assert.True(t, r.LostTimedOut, "ten minutes after the recorded Lost time")
	assert.Equal(t, t0.Add(50*time.Minute), r.LostSince)
}

func TestTrusted(t *testing.T) {
	current := running(t0)
	old := builder.SetRunning(builder.Pod("wc", "wc-jm-old", "wc-r0", t0.Add(-time.Hour)), t0.Add(-time.Hour))
	terminating := old.DeepCopy()
	terminating.DeletionTimestamp = &metav1.Time{Time: t0}
	none := state.Leader{}

	assert.True(t, state.Trusted(current, []corev1.Pod{*current}, none, t0))
	assert.False(t, state.Trusted(current, []corev1.Pod{*current, *terminating}, none, t0), "without leader information an old pod may still answer while it terminates")
	assert.False(t, state.Trusted(current, []corev1.Pod{*old, *current}, none, t0))
	assert.False(t, state.Trusted(nil, nil, none, t0), "no pod, no API")
	evicted := old.DeepCopy()
	evicted.Status.Phase = corev1.PodFailed
	evicted.Status.Reason = "Evicted"
	assert.True(t, state.Trusted(current, []corev1.Pod{*evicted, *current}, none, t0), "an evicted pod runs nothing")
	notReady := builder.SetCrashLoop(builder.Pod("wc", "p", "r", t0), t0, 1, time.Second, 1, "")
	assert.False(t, state.Trusted(notReady, []corev1.Pod{*notReady}, none, t0))
}

// Hole 4 (issue 8): a JobManager pod stuck Terminating on a lost node blinded the controller
// forever. Leadership, not pod counting, decides.
func TestLeadershipDecidesTrust(t *testing.T) {
	current := running(t0)
	current.Status.PodIP = "10.0.0.2"
	stuck := builder.SetRunning(builder.Pod("wc", "wc-jm-old", "wc-r1", t0.Add(-time.Hour)), t0.Add(-time.Hour))
	stuck.Status.PodIP = "10.0.0.1"
	stuck.DeletionTimestamp = &metav1.Time{Time: t0}
	pods := []corev1.Pod{*stuck, *current}

	assert.True(t, state.Trusted(current, pods, state.Leader{Known: true, Address: "10.0.0.2"}, t0),
		"the stuck pod does not lead: the current leader is trusted")
	assert.False(t, state.Trusted(current, pods, state.Leader{Known: true, Address: "10.0.0.1"}, t0),
		"the stuck pod still leads: its answers are not the current pod's")
	assert.False(t, state.MayLead(stuck, state.Leader{Known: true, Address: "10.0.0.2"}, t0), "a terminating non-leader blocks nothing")
	assert.True(t, state.MayLead(stuck, state.Leader{Known: true, Address: "10.0.0.1"}, t0), "the leader blocks while it terminates")
	assert.True(t, state.MayLead(stuck, state.Leader{}, t0), "no leader record: a terminating pod may take the lease")
	assert.False(t, state.MayLead(stuck, state.Leader{}, t0.Add(state.LeaseGrace+time.Second)),
		"no leader record, the pod long past its deletion deadline: it cannot renew a lease (bounded wait)")
	long := state.Leader{Grace: state.LeaseGraceFor(2 * time.Minute)}
	assert.True(t, state.MayLead(stuck, long, t0.Add(state.LeaseGrace+time.Second)),
		"a lease of 2 min configured: one minute past the deadline the stuck pod may still hold it")
	assert.False(t, state.MayLead(stuck, long, t0.Add(8*time.Minute+time.Second)), "four leases past the deadline it cannot")
	assert.Equal(t, state.LeaseGrace, state.LeaseGraceFor(time.Second), "never shorter than LeaseGrace")
	live := current.DeepCopy()
	assert.True(t, state.MayLead(live, state.Leader{Known: true, Address: "10.0.0.9"}, t0), "a live pod may take over from a leader that dies")
}

// TestOldLeaderFinishedRace replays the update race: the old revision's JobManager, still
// terminating, answers FINISHED for the execution it stopped with a savepoint, while the new
// revision is Deploying. The old pod makes the API untrusted, so the job stays Deploying.
func TestOldLeaderFinishedRace(t *testing.T) {
	newPod := builder.SetRunning(builder.Pod("wc", "wc-jm-new", "wc-r2", t0), t0)
	oldPod := builder.SetRunning(builder.Pod("wc", "wc-jm-old", "wc-r1", t0.Add(-time.Hour)), t0.Add(-time.Hour))
	oldPod.DeletionTimestamp = &metav1.Time{Time: t0}
	pods := []corev1.Pod{*oldPod, *newPod}

	in := state.Input{Now: t0, DeploymentType: dep, Recorded: recorded("Deploying"), Workload: &state.Workload{Revision: "wc-r2"},
		Pod: state.NewestPod(pods), HARecoveryGrace: grace, LostTimeout: lost}
	assert.Equal(t, "wc-jm-new", in.Pod.Name, "the terminating pod is never selected")
	if state.Trusted(in.Pod, pods, state.Leader{}, t0) {
		in.Flink = flinkJob("FINISHED")
	}
	assert.Equal(t, "Deploying", state.DeriveJob(in).State, "the old execution's FINISHED is not read")

	// Without the guard the same answer would end the new revision: this is the bug.
	in.Flink = flinkJob("FINISHED")
	assert.Equal(t, "Succeeded", state.DeriveJob(in).State)
}

// A job reported again by Flink is tracked, even when its Lost timeout ran out meanwhile
// (found by the simulation: a clock jump over a crash loop that passed).
func TestReportedAgainBeatsALapsedLostTimeout(t *testing.T) {
	in := state.Input{Now: t0.Add(time.Hour), DeploymentType: dep, Recorded: recorded("Lost"), LostSince: t0,
		Workload: &state.Workload{}, Pod: running(t0), Flink: flinkJob("RUNNING"), HARecoveryGrace: grace, LostTimeout: lost}
	r := state.DeriveJob(in)
	assert.Equal(t, "Running", r.State)
	assert.False(t, r.LostTimedOut)
	in.Flink = &state.Flink{}
	assert.True(t, state.DeriveJob(in).LostTimedOut, "not reported: the timeout ends it")
}
