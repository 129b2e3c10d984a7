package realplane_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// scenario is one row of the scenario table for one deployment type.
type scenario struct {
	mode  v1beta1.JobManagerDeploymentType
	name  string
	build func(w *builder.FlinkClusterWrapper)
	run   func(t *testing.T, h *harness)
	// prepare runs before the cluster is created (see newHarness).
	prepare func(h *harness)
	// serial rows run first, one at a time: they move the shared clock far.
	serial bool
}

func scenarios() []scenario {
	keepOnFailure := func(w *builder.FlinkClusterWrapper) {
		w.CleanupPolicy(v1beta1.CleanupActionDeleteCluster, v1beta1.CleanupActionKeepCluster, v1beta1.CleanupActionDeleteCluster)
	}
	flink23 := func(w *builder.FlinkClusterWrapper) { w.FlinkVersion("2.3") }
	return []scenario{
		{depMode, "1 regular update twice: restores the final savepoint under a new job ID, HA data deleted first, no replacement while old JM pod terminating (old-leader FINISHED race fixed)", nil, updateTwice, nil, false},
		{jobMode, "1 regular update twice (Job mode savepoint loss fixed): the JobManager outlives the job its stop ended, the update takes the final savepoint and the next Job restores it under a new job ID, revisions converge", nil, updateTwice, nil, false},
		{depMode, "+ update while Flink restarts the job: waits, stops with a savepoint once the job runs, redeploys from it", nil, updateDuringRestart, nil, false},
		{jobMode, "+ update while Flink restarts the job: waits, stops with a savepoint once the job runs, redeploys from it", nil, updateDuringRestart, nil, false},
		{depMode, "2 cancel with savepoint: Cancelled, cancellation cleanup, no resubmission", nil, cancelWithSavepoint, nil, false},
		{jobMode, "2 cancel with savepoint: Cancelled, cancellation cleanup, no resubmission", nil, cancelWithSavepoint, nil, false},
		{depMode, "3 non-stopping savepoint: job stays Running, workload and pod UIDs unchanged", nil, nonStoppingSavepoint, nil, false},
		{jobMode, "3 non-stopping savepoint: job stays Running, workload and pod UIDs unchanged", nil, nonStoppingSavepoint, nil, false},
		{depMode, "4 delete running cluster: finalizer held while JM pod terminates, no replacement, HA ConfigMaps removed, no savepoint", nil, deleteRunningCluster, nil, false},
		{jobMode, "4 delete running cluster: finalizer held while JM pod terminates, no replacement, HA ConfigMaps removed, no savepoint", nil, deleteRunningCluster, nil, false},
		{depMode, "5a Flink retries exhausted after a checkpoint: Failed, cleanup to Stopped, no resubmission", nil, retriesExhaustedWhileRunning, nil, false},
		{jobMode, "5a Flink retries exhausted after a checkpoint: Failed, cleanup to Stopped, no resubmission", nil, retriesExhaustedWhileRunning, nil, false},
		{depMode, "5b Flink retries exhausted from startup: Failed, cleanup to Stopped, no resubmission", nil, retriesExhaustedFromStartup, initializingProgram, false},
		{jobMode, "5b Flink retries exhausted from startup: Failed, cleanup to Stopped, no resubmission", nil, retriesExhaustedFromStartup, initializingProgram, false},
		{depMode, "7 delete JM pod: replacement pod, same job ID recovered, no premature failure", nil, deleteJobManagerPodDeployment, nil, false},
		{jobMode, "7 delete JM pod: Failed, failure cleanup, no resubmission", nil, deleteJobManagerPodJob, nil, false},
		{depMode, "8 delete JM Deployment: recreated, same job recovered, no premature cleanup", nil, deleteJobManagerDeployment, nil, false},
		{depMode, "8b delete JM Deployment with its HA data gone: Failed with HAMetadataMissing, nothing restarted, user's restore-from deploys", nil, deleteJobManagerDeploymentHALost, nil, false},
		{depMode, "8c job graphs deleted behind a running JM: stopped with a savepoint and redeployed from it under a new job ID, main() never rerun from empty state", nil, haDeletedBehindRunningJobManager, nil, false},
		{depMode, "8d job graphs and the job's ConfigMap deleted behind a running JM: the stop's savepoint fails, the job runs on under its JM, nothing redeployed", nil, jobConfigMapDeletedBehindRunningJobManager, nil, false},
		{depMode, "9 exception in main() on Flink 2.2: crash loop gives DeployFailed with the cause, cleanup, no resubmission", nil, mainThrowsCrashLoop, throwingProgram, false},
		{depMode, "9 exception in main() on Flink 2.3: application FAILED with empty job list gives DeployFailed with the cause, cleanup, no resubmission", flink23, mainThrowsApplicationFailed, blockedThrowingProgram, false},
		{jobMode, "9 exception in main() on Flink 2.2: JM exits, DeployFailed with the cause, cleanup, no resubmission", nil, mainThrowsJobExits, throwingProgram, false},
		{jobMode, "9 exception in main() on Flink 2.3: application FAILED with empty job list gives DeployFailed with the cause, cleanup, no resubmission", flink23, mainThrowsApplicationFailed, blockedThrowingProgram, false},
		{depMode, "11 invalid entry class: DeployFailed, Deployment scaled to 0 and kept, no restart loop", keepOnFailure, invalidArtifact(classNotFound, "java.lang.ClassNotFoundException: org.example.Missing"), startupFails(classNotFound), false},
		{jobMode, "11 invalid entry class: DeployFailed, failed Job kept, no restart loop", keepOnFailure, invalidArtifact(classNotFound, "java.lang.ClassNotFoundException: org.example.Missing"), startupFails(classNotFound), false},
		{depMode, "11 missing jar: DeployFailed, Deployment scaled to 0 and kept, no restart loop", keepOnFailure, invalidArtifact(missingJar, "java.nio.file.NoSuchFileException: /opt/flink/usrlib/job.jar"), startupFails(missingJar), false},
		{jobMode, "11 missing jar: DeployFailed, failed Job kept, no restart loop", keepOnFailure, invalidArtifact(missingJar, "java.nio.file.NoSuchFileException: /opt/flink/usrlib/job.jar"), startupFails(missingJar), false},
		{depMode, "12 finite application succeeds: Succeeded, afterJobSucceeds cleanup, no resubmission", nil, finiteApplicationSucceeds, nil, false},
		{jobMode, "12 finite application succeeds: Succeeded, afterJobSucceeds cleanup, no resubmission", nil, finiteApplicationSucceeds, nil, false},
		{depMode, "+ old-leader FINISHED race: a Terminating old-revision JM next to the new ready JM, FINISHED ignored", nil, oldLeaderFinishedRace, ownNode, false},
		{jobMode, "+ old-leader FINISHED race: a Terminating old-revision JM next to the new ready JM, FINISHED ignored", nil, oldLeaderFinishedRace, ownNode, false},
		{depMode, "+ crash loop of a Running job's JM: not terminal, DeploymentFailed with the reason, recovered when it passes", nil, crashLoopWhileRunning, nil, false},
		{depMode, "+ DeployFailed, then a fixed spec: the next revision deploys and runs", keepOnFailure, fixedSpecRedeploys, startupFails(classNotFound), false},
		{jobMode, "+ DeployFailed, then a fixed spec: the next revision deploys and runs", keepOnFailure, fixedSpecRedeploys, startupFails(classNotFound), false},
		{jobMode, "+ restartPolicy FromSavepointOnFailure: failed job restored from its latest savepoint", func(w *builder.FlinkClusterWrapper) { w.RestartFromSavepoint(3600) }, restartFromSavepoint, nil, false},
		{depMode, "+ restartPolicy FromSavepointOnFailure is ignored: a failed job is never restored from a savepoint", func(w *builder.FlinkClusterWrapper) { w.RestartFromSavepoint(3600) }, noRestartFromSavepoint, nil, false},
		{depMode, "+ initial fromSavepoint: restored through the Flink configuration, taken out of it once the job runs, pod template never changed", func(w *builder.FlinkClusterWrapper) { w.FromSavepoint(initialSavepoint) }, initialSavepointLeavesConfiguration, nil, false},
		{jobMode, "+ initial fromSavepoint: restored through the Flink configuration, taken out of it once the job runs, pod template never changed", func(w *builder.FlinkClusterWrapper) { w.FromSavepoint(initialSavepoint) }, initialSavepointLeavesConfiguration, nil, false},
		{depMode, "+ session or non-Application mode: left alone with an Event", func(w *builder.FlinkClusterWrapper) { w.JobMode(v1beta1.JobModeDetached).DeploymentType("") }, notManaged, nil, false},
	}
}

// TestScenarios runs the scenario table, the timer rows and the rows that need the real
// parts on the one shared control plane: the serial rows first, one at a time, then every
// other row in parallel, each in its own namespace.
func TestScenarios(t *testing.T) {
	rows := append(append(append(scenarios(), timerRows()...), realPlaneRows()...), podLifecycleRows()...)
	for _, serial := range []bool{true, false} {
		// Each serial row, and the parallel ones together, start with the clock at the real
		// time, whatever the serial rows before stepped it to (see resetClock).
		resetClock()
		for _, s := range rows {
			if s.serial != serial {
				continue
			}
			t.Run(string(s.mode)+"/"+s.name, func(t *testing.T) {
				if s.serial {
					resetClock()
				} else {
					t.Parallel()
				}
				var prepare []func(h *harness)
				if s.prepare != nil {
					prepare = append(prepare, s.prepare)
				}
				s.run(t, newHarness(t, s.mode, s.build, prepare...))
			})
		}
	}
}

// failedPodOrJob is the failure reason of a Job-mode JobManager killed (SIGKILL, an OOM): the
// container's exit or the Job controller's verdict on it.
const failedPodOrJob = `JobManager container exited with code 137|JobManager Job failed: BackoffLimitExceeded`

// haConfigMapUIDs are the cluster's HA ConfigMaps now, name by UID.
func haConfigMapUIDs(h *harness) map[types.UID]string {
	h.t.Helper()
	cms := &corev1.ConfigMapList{}
	require.NoError(h.t, k8s.List(h.ctx, cms, client.InNamespace(h.ns), client.MatchingLabels(flinkha.Labels(h.name))))
	out := map[types.UID]string{}
	for _, cm := range cms.Items {
		out[cm.UID] = cm.Name
	}
	return out
}

// ownNode gives a row a node of its own (see ownNodes).
func ownNode(h *harness) { h.ownNodes(1) }

// resetClock sets the controller's and Flink's clock back to the real time, which the control
// plane's timestamps (a container's startedAt, a pod's deletionTimestamp) are written in. Only
// between rows that run alone: a serial row steps the clock by minutes (HA grace, Lost
// timeout, a lost node's deletion deadline), and the rows after it would otherwise find every
// grace long over. Going back in time is safe there: every earlier row's cluster is retired,
// and a new row's leases and timers all start after the reset.
func resetClock() {
	if now := time.Now().Truncate(time.Second); !now.Equal(fakeClock.Now()) {
		fakeClock.SetTime(now)
	}
}

// Programs of main() and failing starts that rows set before their cluster exists.
var (
	initializingProgram = func(h *harness) {
		// The job fails over from its first start on: it never gets past INITIALIZING.
		h.flink.SetProgram(fakeflink.Program{JobName: "wordcount", InitialState: flinkclient.JobStateInitializing})
	}
	throwingProgram = func(h *harness) {
		h.flink.SetProgram(fakeflink.Program{JobName: "wordcount", Throw: `java.lang.NumberFormatException: For input string: "not-a-number"`})
	}
	blockedThrowingProgram = func(h *harness) {
		// main() takes a while, then throws before it submits the job.
		h.flink.SetProgram(fakeflink.Program{JobName: "wordcount", BlockBeforeExecute: true,
			Throw: `org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: For input string: "not-a-number"`})
	}
)

// startupFails makes the cluster's JobManager containers die at start with log as their
// termination message (exit code 1): the entrypoint cannot load the application.
func startupFails(log string) func(h *harness) {
	return func(h *harness) {
		h.failStartup(&fakeflink.ExitStatus{Code: fakeflink.ExitStartupFailure, Message: log})
	}
}

func savepointState(fc *v1beta1.FlinkCluster) string {
	if fc.Status.Savepoint == nil {
		return ""
	}
	return fc.Status.Savepoint.State
}

// noResubmission checks that after a terminal state nothing is deployed again: no new
// JobManager workload or pod, the job state kept, no further stop or savepoint.
func noResubmission(h *harness, jobState string, workloadUID string) {
	h.t.Helper()
	stops, savepoints := h.requests("POST", "/stop"), h.requests("POST", "/savepoints")
	h.afterReconciles("no resubmission", func() bool {
		wl := h.workload()
		sameWorkload := (wl == nil && workloadUID == "") || (wl != nil && string(wl.GetUID()) == workloadUID)
		return sameWorkload && h.jobState() == jobState &&
			h.requests("POST", "/stop") == stops && h.requests("POST", "/savepoints") == savepoints
	})
}

func updateDuringRestart(t *testing.T, h *harness) {
	// A TaskManager failover: Flink refuses a stop-with-savepoint of a job that is not
	// RUNNING. The update must wait for the job to run again, not fail its stop and end in
	// SavepointRequired while the job runs.
	pod, jm, id := h.runningJob()
	jm.SetJobState(id, flinkclient.JobStateRestarting)
	old := h.updateArgs("--v2")
	h.waitConditions("Updating=True/" + controller.ConditionReasonWaitingForUpgradableState)
	h.afterReconciles("no stop while the job restarts, and no SavepointRequired", func() bool {
		return h.countRequests("POST /jobs/"+id+"/stop") == 0 &&
			!meta.IsStatusConditionTrue(h.get().Status.Conditions, controller.ConditionSavepointRequired)
	})

	jm.SetJobState(id, flinkclient.JobStateRunning)
	h.eventually("a stop-with-savepoint once the job runs", func() bool { return h.countRequests("POST /jobs/"+id+"/stop") == 1 })
	h.eventually("the stop's savepoint", func() bool {
		sp := h.get().Status.Savepoint
		return sp != nil && sp.TriggerReason == controller.SavepointReasonUpdate && sp.State == controller.SavepointStateSucceeded
	})
	loc := h.get().Status.Components.Job.SavepointLocation
	require.NotEmpty(t, loc)
	job := h.runsNextRevision(old)
	assert.NotEqual(t, id, job.ID, "a new deploy runs under a new job ID")
	assert.Equal(t, loc, job.FromSavepoint, "the next deploy restores the stop's savepoint")
	assert.False(t, h.podExists(pod), "the old JobManager is gone")
	assert.False(t, meta.IsStatusConditionTrue(h.get().Status.Conditions, controller.ConditionSavepointRequired))
}

func updateTwice(t *testing.T, h *harness) {
	// Job mode: with Flink's default execution.shutdown-on-application-finish the JobManager
	// exited as soon as the stop-with-savepoint had finished the job, before the controller
	// read the savepoint's location, and the update waited forever (savepoint state Unknown).
	// The controller's configuration now keeps it up until the controller replaces it.
	wl, pod := h.runJob()
	id := h.jobID()
	prevTrigger := ""
	for i := 1; i <= 2; i++ {
		before := h.get().Status.Revision
		if h.deployment() {
			// The old JobManager stays Terminating in its preStop delay after being deleted.
			h.hold(pod)
		}
		old := h.process(pod)
		oldHA := haConfigMapUIDs(h)
		if i == 1 {
			// Hold the first update's savepoint to see the update stop the job.
			old.SetSavepointMode(fakeflink.SavepointHold)
		}
		h.patch(func(fc *v1beta1.FlinkCluster) {
			fc.Spec.FlinkProperties["pipeline.name"] = fmt.Sprintf("wordcount-v%d", i)
		})

		h.eventually("a stop-with-savepoint for this update", func() bool { return h.countRequests("POST /jobs/"+id+"/stop") == 1 })
		if i == 1 {
			fc := h.waitConditions("Updating=True/StoppingWithSavepoint", "JobManagerReady=True/PodReady")
			assert.Equal(t, v1beta1.JobStateUpdating, fc.Status.Components.Job.State)
			assert.Equal(t, wl.GetUID(), h.workload().GetUID(), "the old JobManager runs until its savepoint is taken")
			old.SetSavepointMode(fakeflink.SavepointComplete)
			old.CompleteSavepoints()
		}
		h.eventually("the final savepoint", func() bool {
			sp := h.get().Status.Savepoint
			return sp != nil && sp.TriggerReason == controller.SavepointReasonUpdate &&
				sp.State == controller.SavepointStateSucceeded && sp.TriggerID != prevTrigger
		})
		fc := h.get()
		loc := fc.Status.Components.Job.SavepointLocation
		require.NotEmpty(t, loc)
		require.True(t, fc.Status.Components.Job.FinalSavepoint)
		prevTrigger = fc.Status.Savepoint.TriggerID
		require.Equal(t, flinkclient.JobStateFinished, h.executionState(id), "Flink ended the stopped execution FINISHED")

		if h.deployment() {
			// The race: the old JobManager is still Terminating and, as the leader, still
			// answers FINISHED for the execution it stopped.
			h.eventually("the old JobManager pod terminating", func() bool {
				p := &corev1.Pod{}
				return k8s.Get(h.ctx, client.ObjectKeyFromObject(pod), p) == nil && p.DeletionTimestamp != nil
			})
			h.waitConditions("Updating=True/WaitingForJobManagerPods", "JobManagerReady=False/JobManagerMissing")
			assert.Contains(t, h.condition(controller.ConditionUpdating).Message, pod.Name)
			h.afterReconciles("no replacement and no Succeeded while the old JobManager pod terminates", func() bool {
				fc := h.get()
				// One pod: the old ReplicaSet, deleted by the garbage collector after the
				// Deployment, made no pod in between (it would, were the controller's own
				// delete of the old pod seen by a ReplicaSet still alive).
				return h.workload() == nil && fc.Status.Components.Job.State == v1beta1.JobStateUpdating &&
					fc.Status.State == v1beta1.ClusterStateUpdating && h.podExists(pod) && len(h.jmPods()) == 1
			})
			h.waitEvent(corev1.EventTypeNormal, controller.ReasonWaitingForPods, pod.Name)
			h.release(pod)
		}

		next := h.waitWorkload(wl.GetUID())
		if st, ok := old.ExitStatus(); assert.True(t, ok, "the old JobManager ended") {
			assert.Equal(t, fakeflink.ExitTerminated, st.Code, "the old JobManager ran until the controller deleted it (SIGTERM), after it read the savepoint; it did not exit on its own")
		}
		// The next revision's workload is created after every old JobManager pod is gone;
		// the real ReplicaSet or Job controller may have made its own pod since.
		require.False(t, h.podExists(pod), "the next revision starts after the old JobManager pod is gone")
		for _, p := range h.jmPods() {
			require.Equal(t, next.GetLabels()[resources.LabelRevision], p.Labels[resources.LabelRevision], "pod %s of the next revision only", p.Name)
		}
		args := podTemplate(next).Spec.Containers[0].Args
		h.restoresFrom(next, loc)
		newID := h.jobID()
		require.NotEqual(t, id, newID, "a new deploy runs under a new job ID")
		require.Contains(t, strings.Join(args, " "), "--job-id "+newID, "the job ID recorded in the status before the workload was created")
		require.Equal(t, newID, next.GetLabels()[resources.LabelJobID])
		// The new JobManager may have written its own HA ConfigMaps already: none of the old
		// deploy's is left.
		for uid, name := range haConfigMapUIDs(h) {
			require.NotContains(t, oldHA, uid, "the old deploy's HA ConfigMap %s is deleted before the new one starts", name)
		}
		h.waitEvent(corev1.EventTypeNormal, controller.ReasonHAConfigMapsDeleted, "so that the next deploy cannot recover the old job graph")
		id = newID
		require.NotEqual(t, before.CurrentRevision, next.GetLabels()[resources.LabelRevision], "the replacement runs a new revision")
		h.eventually("the new revision recorded", func() bool {
			return h.get().Status.Revision.CurrentRevision == next.GetLabels()[resources.LabelRevision]
		})
		// Deploying the next revision: the real controllers start its pod at once, so the
		// row sees the condition while it deploys or once it is done.
		h.eventually("the next revision deploying or deployed", func() bool {
			c := meta.FindStatusCondition(h.get().Status.Conditions, controller.ConditionUpdating)
			return c != nil && (c.Reason == controller.ConditionReasonDeployingNextRevision && strings.Contains(c.Message, "restoring savepoint "+loc) ||
				c.Reason == controller.ConditionReasonUpToDate && c.Status == metav1.ConditionFalse)
		})
		h.waitEvent(corev1.EventTypeNormal, controller.ReasonJobManagerCreated, "from savepoint "+loc)

		// The new JobManager finds no job graph in HA: main() runs the job under the new ID
		// from the savepoint its Flink configuration names.
		oldPod := pod
		pod, _ = h.runningPod(oldPod.UID)
		fc = h.waitJob(v1beta1.JobStateRunning)
		assert.Equal(t, loc, h.process(pod).RestoredFrom(id), "the new execution restores the final savepoint")
		h.waitCluster(v1beta1.ClusterStateRunning)
		fc = h.get()
		assert.Equal(t, fc.Status.Revision.NextRevision, fc.Status.Revision.CurrentRevision, "revisions converge")
		assert.Equal(t, id, fc.Status.Components.Job.ID)
		assert.Equal(t, loc, fc.Status.Components.Job.FromSavepoint, "the status keeps what the deploy restored")
		h.savepointLeavesConfiguration(next)
		h.waitConditions(steady...)
		assert.Equal(t, "current revision "+fc.Status.Revision.CurrentRevision, h.condition(controller.ConditionUpdating).Message)
		h.waitEvent(corev1.EventTypeNormal, controller.ReasonUpdateFinished, "update to revision "+fc.Status.Revision.CurrentRevision+" finished: job Running")
		wl = next
	}
	h.waitEvent(corev1.EventTypeNormal, controller.ReasonUpdateStarted, "updating from revision")
}

func cancelWithSavepoint(t *testing.T, h *harness) {
	h.runJob()
	h.annotate(v1beta1.ControlNameJobCancel)
	fc := h.waitJob(v1beta1.JobStateCancelled)
	require.NotNil(t, fc.Status.Savepoint)
	assert.Equal(t, controller.SavepointReasonJobCancel, fc.Status.Savepoint.TriggerReason)
	assert.Equal(t, controller.SavepointStateSucceeded, fc.Status.Savepoint.State)
	assert.NotEmpty(t, fc.Status.Components.Job.SavepointLocation)
	assert.True(t, fc.Status.Components.Job.FinalSavepoint)
	assert.Equal(t, 1, h.requests("POST", "/stop"))
	h.eventually("control succeeded", func() bool {
		fc := h.get()
		return fc.Status.Control != nil && fc.Status.Control.State == v1beta1.ControlStateSucceeded
	})
	assert.NotContains(t, h.get().Annotations, v1beta1.ControlAnnotation, "the annotation is consumed")
	h.waitCluster(v1beta1.ClusterStateStopped)
	h.waitConditions("Managed=True/ApplicationMode", "JobManagerReady=False/JobManagerMissing", "Updating=False/UpToDate",
		"DeploymentFailed=False/NoFailure", "Lost=False/JobTracked")
	h.eventually("everything removed (afterJobCancelled DeleteCluster)", h.allGone)
	noResubmission(h, v1beta1.JobStateCancelled, "")
}

func nonStoppingSavepoint(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	h.annotate(v1beta1.ControlNameSavepoint)
	h.eventually("control succeeded", func() bool {
		fc := h.get()
		return fc.Status.Control != nil && fc.Status.Control.State == v1beta1.ControlStateSucceeded
	})
	fc := h.get()
	assert.Equal(t, v1beta1.JobStateRunning, fc.Status.Components.Job.State)
	assert.NotEmpty(t, fc.Status.Components.Job.SavepointLocation)
	assert.False(t, fc.Status.Components.Job.FinalSavepoint, "the snapshot is not final")
	assert.Equal(t, controller.SavepointReasonUser, fc.Status.Savepoint.TriggerReason)
	assert.Equal(t, 1, h.requests("POST", "/savepoints"))
	assert.Equal(t, 0, h.requests("POST", "/stop"))
	assert.Equal(t, flinkclient.JobStateRunning, h.process(pod).JobState(h.jobID()))
	h.eventually("annotation consumed", func() bool { _, ok := h.get().Annotations[v1beta1.ControlAnnotation]; return !ok })
	h.afterReconciles("job Running with the same JobManager workload and pod", func() bool {
		cur := h.workload()
		p := &corev1.Pod{}
		return cur != nil && cur.GetUID() == wl.GetUID() && k8s.Get(h.ctx, client.ObjectKeyFromObject(pod), p) == nil &&
			p.UID == pod.UID && p.DeletionTimestamp == nil && h.jobState() == v1beta1.JobStateRunning &&
			len(missingConditions(h.get(), steady)) == 0
	})
}

func deleteRunningCluster(t *testing.T, h *harness) {
	_, pod := h.runJob()
	h.hold(pod)
	// A checkpoint: Flink's HA keeps its pointer in the job's own ConfigMap, next to the
	// cluster's (leader, job graph).
	require.NotEmpty(t, h.process(pod).CompleteCheckpoint(h.jobID()))
	for _, name := range []string{h.name + "-cluster-config-map", h.name + "-" + h.jobID() + "-config-map"} {
		require.True(t, h.exists(&corev1.ConfigMap{}, name), "Flink's HA ConfigMap %s", name)
	}
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other-cluster-config-map", Namespace: h.ns,
		Labels: map[string]string{"app": "other", "configmap-type": "high-availability"}}}
	require.NoError(t, k8s.Create(h.ctx, other))
	// The manager's cache holds only the controller's own objects: once it has seen a
	// ConfigMap created after the HA ConfigMaps, it has still not seen them. Their cleanup
	// must find them on the API server.
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: h.ns, Labels: map[string]string{resources.LabelApp: resources.AppFlink}}}
	require.NoError(t, k8s.Create(h.ctx, probe))
	h.eventually("the cache saw the probe", func() bool { return cached.Get(h.ctx, client.ObjectKeyFromObject(probe), &corev1.ConfigMap{}) == nil })
	require.True(t, apierrors.IsNotFound(cached.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: h.name + "-cluster-config-map"}, &corev1.ConfigMap{})),
		"HA ConfigMaps are outside the manager's cache")
	require.NoError(t, cached.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: resources.ConfigMapName(h.name)}, &corev1.ConfigMap{}),
		"the cluster's own ConfigMap is in it")

	require.NoError(t, k8s.Delete(h.ctx, h.get()))
	h.eventually("JobManager workload deleted and its pod terminating", func() bool {
		p := &corev1.Pod{}
		return h.workload() == nil && k8s.Get(h.ctx, client.ObjectKeyFromObject(pod), p) == nil && p.DeletionTimestamp != nil
	})
	h.waitConditions("JobManagerReady=False/JobManagerMissing")
	h.afterReconciles("finalizer held while the JobManager pod terminates, no replacement", func() bool {
		fc := &v1beta1.FlinkCluster{}
		return h.exists(fc, h.name) && fc.DeletionTimestamp != nil && h.workload() == nil && len(h.jmPods()) == 1 &&
			len(missingConditions(fc, []string{"JobManagerReady=False/JobManagerMissing"})) == 0
	})
	h.release(pod)
	h.eventually("FlinkCluster gone", func() bool { return !h.exists(&v1beta1.FlinkCluster{}, h.name) })
	h.eventually("owned objects removed", h.allGone)
	list := &corev1.ConfigMapList{}
	require.NoError(t, k8s.List(h.ctx, list, client.InNamespace(h.ns), client.MatchingLabels{"configmap-type": "high-availability"}))
	var names []string
	for _, cm := range list.Items {
		names = append(names, cm.Name)
	}
	assert.Equal(t, []string{"other-cluster-config-map"}, names, "the cluster's HA ConfigMaps are removed, another cluster's are not")
	for _, r := range h.flink.ServiceRequests() {
		assert.False(t, strings.HasPrefix(r, "POST"), "no savepoint on deletion: %s", r)
	}
}

var retriesExhausted = flinkclient.Exception{
	Name:       "org.apache.flink.runtime.JobException",
	StackTrace: "org.apache.flink.runtime.JobException: Recovery is suppressed by FixedDelayRestartBackoffTimeStrategy(maxNumberRestartAttempts=3, backoffTimeMS=1000)\n\tat org.apache.flink.runtime.executiongraph.failover.ExecutionFailureHandler.handleFailure(ExecutionFailureHandler.java:219)",
}

func retriesExhaustedWhileRunning(t *testing.T, h *harness) {
	// In Job mode the JobManager outlives the failed job until the controller, the failure
	// recorded, shuts it down (DELETE /cluster) and afterJobFails removes everything.
	_, pod := h.runJob()
	id := h.jobID()
	jm := h.process(pod)
	require.NotEmpty(t, jm.CompleteCheckpoint(id))
	jm.SetJobState(id, flinkclient.JobStateRestarting)
	h.afterReconciles("Flink retrying within its restart strategy keeps the job Running", func() bool { return h.jobState() == v1beta1.JobStateRunning })
	jm.SetExceptions(id, retriesExhausted)
	jm.SetJobState(id, flinkclient.JobStateFailed)
	fc := h.waitJob(v1beta1.JobStateFailed)
	assert.Contains(t, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"), "Recovery is suppressed by FixedDelayRestartBackoffTimeStrategy")
	assert.Empty(t, missingConditions(fc, []string{"DeploymentFailed=False/NoFailure", "Lost=False/JobTracked"}), "a job failure, not a failed deployment")
	h.waitEvent(corev1.EventTypeWarning, controller.ReasonJobFailed, "Recovery is suppressed")
	h.waitCluster(v1beta1.ClusterStateStopped)
	h.waitConditions("JobManagerReady=False/JobManagerMissing", "DeploymentFailed=False/NoFailure")
	h.eventually("everything removed (afterJobFails DeleteCluster)", h.allGone)
	noResubmission(h, v1beta1.JobStateFailed, "")
}

func retriesExhaustedFromStartup(t *testing.T, h *harness) {
	_, jm := h.runningPod()
	id := h.jobID()
	h.afterReconciles("initializing job is Deploying", func() bool { return h.jobState() == v1beta1.JobStateDeploying })
	jm.SetExceptions(id, flinkclient.Exception{Name: "org.example.ControlledFailureException", StackTrace: "org.example.ControlledFailureException: failure control file says FAIL"}, retriesExhausted)
	jm.SetJobState(id, flinkclient.JobStateFailed)
	fc := h.waitJob(v1beta1.JobStateFailed)
	assert.Contains(t, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"), "ControlledFailureException")
	assert.Empty(t, missingConditions(fc, []string{"DeploymentFailed=False/NoFailure", "Lost=False/JobTracked"}), "a job failure, not a failed deployment")
	h.waitCluster(v1beta1.ClusterStateStopped)
	h.waitConditions("JobManagerReady=False/JobManagerMissing", "DeploymentFailed=False/NoFailure")
	h.eventually("everything removed (afterJobFails DeleteCluster)", h.allGone)
	noResubmission(h, v1beta1.JobStateFailed, "")
}

func deleteJobManagerPodDeployment(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	id := h.jobID()
	require.NotEmpty(t, h.process(pod).CompleteCheckpoint(id))
	// Force deletion skips preStop: the JobManager is gone at once, the REST API with it, and
	// its lease stays in the HA ConfigMap until it expires.
	h.process(pod).Kill()
	require.NoError(t, k8s.Delete(h.ctx, pod, client.GracePeriodSeconds(0)))
	// The ReplicaSet replaces the pod at once (the old harness left it missing until the row
	// started one, so the row saw JobManagerReady=False/PodNotReady; here the replacement is
	// Ready before Flink answers): what stays is that nothing fails while no JobManager leads.
	replacement, jm := h.runningPod(pod.UID)
	require.Equal(t, "ReplicaSet", replacement.OwnerReferences[0].Kind, "the ReplicaSet's replacement")
	// The dead leader's lease holds until it expires on Flink's clock, which other rows move
	// too: the replacement may lead already.
	h.afterReconciles("no premature failure while the replacement takes over", func() bool {
		fc := h.get()
		return fc.Status.Components.Job.State == v1beta1.JobStateRunning && len(fc.Status.Components.Job.FailureReasons) == 0 &&
			len(missingConditions(fc, []string{"Lost=False/JobTracked", "DeploymentFailed=False/NoFailure"})) == 0
	})
	// The dead leader's lease expires: the replacement leads and recovers the job from HA.
	if !jm.Leads() {
		h.flink.Advance(16 * time.Second)
	}
	h.eventually("the replacement leading", func() bool { h.flink.Leader(); return jm.Leads() })
	h.waitConditions(steady...)
	assert.Equal(t, "JobManager pod "+replacement.Name+" is ready", h.condition(controller.ConditionJobManagerReady).Message)
	h.afterReconciles("same job recovered", func() bool {
		fc := h.get()
		cur := h.workload()
		return fc.Status.Components.Job.State == v1beta1.JobStateRunning && fc.Status.Components.Job.ID == id &&
			cur != nil && cur.GetUID() == wl.GetUID() && len(fc.Status.Components.Job.FailureReasons) == 0 &&
			fc.Status.Components.JobManager.Ready == "1/1"
	})
	assert.Equal(t, flinkclient.JobStateRunning, jm.JobState(id))
	assert.Equal(t, "file:/checkpoints/"+id+"/chk-1", jm.RestoredFrom(id), "recovered from its latest checkpoint")
}

func deleteJobManagerPodJob(t *testing.T, h *harness) {
	_, pod := h.runJob()
	require.Contains(t, pod.Finalizers, batchv1.JobTrackingFinalizer)
	h.process(pod).Kill()
	// The kubelet reports the killed container's end (137) before the pod is force-deleted:
	// deleted first, KWOK's stage for a deleted running pod would write a SIGTERM's 143 for
	// a container no one sent one, until the Simulator wrote 137 over it.
	h.eventually("the killed container's end in the pod's status", func() bool {
		p, ok := h.podNow(pod)
		if !ok || len(p.Status.ContainerStatuses) == 0 {
			return false
		}
		end := p.Status.ContainerStatuses[0].State.Terminated
		return end != nil && end.ExitCode == fakeflink.ExitKilled
	})
	// Force-deleted: the tracking finalizer keeps the object until the Job controller counted
	// it as failed. With restartPolicy Never and no retries, it fails the Job.
	require.NoError(t, k8s.Delete(h.ctx, pod, client.GracePeriodSeconds(0)))
	fc := h.waitJob(v1beta1.JobStateFailed)
	// The pod's own end as the kubelet wrote it, or the Job's BackoffLimitExceeded: whichever
	// the controller saw first (the old harness wrote only the Job's, by hand).
	assert.Regexp(t, failedPodOrJob, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"))
	assert.Empty(t, missingConditions(fc, []string{"DeploymentFailed=False/NoFailure", "Lost=False/JobTracked"}))
	h.waitCluster(v1beta1.ClusterStateStopped)
	h.waitConditions("JobManagerReady=False/JobManagerMissing")
	h.eventually("everything removed (afterJobFails DeleteCluster)", h.allGone)
	noResubmission(h, v1beta1.JobStateFailed, "")
}

func deleteJobManagerDeployment(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	id := h.jobID()
	// The old pod is held in its preStop hook: the garbage collector removes the old
	// ReplicaSet, and the controller waits for the pod before it creates the Deployment again.
	h.hold(pod)
	require.NoError(t, k8s.Delete(h.ctx, wl, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	h.waitConditions("JobManagerReady=False/JobManagerMissing", "Lost=False/JobTracked", "Updating=False/UpToDate")
	h.afterReconciles("no Deployment while the old JobManager pod terminates", func() bool {
		p, ok := h.podNow(pod)
		return h.workload() == nil && ok && p.DeletionTimestamp != nil && len(h.jmPods()) == 1 && h.jobState() == v1beta1.JobStatePending
	})
	h.release(pod)
	next := h.waitWorkload(wl.GetUID())
	// Its container ended before the Deployment is created again; KWOK may not have removed
	// the object yet (a terminal pod cannot lead).
	if p, ok := h.podNow(pod); ok {
		require.Contains(t, []corev1.PodPhase{corev1.PodFailed, corev1.PodSucceeded}, p.Status.Phase,
			"the old JobManager pod's container ended before the Deployment is created again")
	}
	h.runningPod(pod.UID)
	fc := h.waitJob(v1beta1.JobStateRunning)
	assert.Equal(t, next.GetUID(), h.workload().GetUID())
	h.waitConditions(steady...)
	assert.Equal(t, id, fc.Status.Components.Job.ID)
	assert.Empty(t, fc.Status.Components.Job.FailureReasons, "no premature failure")
	assert.True(t, h.taskManagerExists(), "no cleanup")
	assert.True(t, h.exists(&corev1.Service{}, resources.JobManagerName(h.name)))
	h.waitEvent(corev1.EventTypeNormal, controller.ReasonJobStateChanged, "JobManager Deployment is missing")
	for _, e := range h.events() {
		assert.NotEqual(t, controller.ReasonJobLost, e.Reason, "never Lost: %s", e.Note)
		assert.NotEqual(t, controller.ReasonCleanup, e.Reason, "no cleanup: %s", e.Note)
	}
}

const mainThrows = "2026-11-30 12:00:01,000 ERROR org.apache.flink.runtime.entrypoint.ClusterEntrypoint - Could not start cluster entrypoint StandaloneApplicationClusterEntryPoint.\n" +
	"org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: For input string: \"not-a-number\"\n" +
	"\tat org.apache.flink.client.program.PackagedProgram.callMainMethod(PackagedProgram.java:373)\n" +
	"Caused by: java.lang.NumberFormatException: For input string: \"not-a-number\"\n" +
	"\tat java.lang.Long.parseLong(Long.java:692)"

// mainThrowsCrashLoop: on Flink 2.2 the entrypoint exits when main() throws; the kubelet
// restarts the container with its back-off (the Simulator writes each exit, the restart count
// and CrashLoopBackOff) until the controller counts a crash loop.
func mainThrowsCrashLoop(t *testing.T, h *harness) {
	h.waitWorkload("")
	// Each crashed JobManager leaves its leader lease behind (fakeflink's main() failure
	// releases nothing), and the restarted one leads, and runs main() again, only once it
	// expired: on Flink's clock, which moves only when a row steps it. Step it once for each
	// restarted JobManager left waiting, as real time would.
	var waited *fakeflink.JobManager
	h.eventually("job state DeployFailed", func() bool {
		if h.jobState() == v1beta1.JobStateDeployFailed {
			return true
		}
		if p := h.flink.Leader(); p == nil {
			for _, jm := range h.flink.Processes() {
				if jm.Alive() && jm != waited {
					waited = jm
					h.flink.Advance(16 * time.Second)
				}
			}
		}
		return false
	})
	fc := h.get()
	assert.Contains(t, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"), `java.lang.NumberFormatException: For input string: "not-a-number"`)
	assert.Empty(t, missingConditions(fc, []string{"DeploymentFailed=True/CrashLoopBackOff"}))
	assert.Contains(t, h.condition(controller.ConditionDeploymentFailed).Message, `java.lang.NumberFormatException: For input string: "not-a-number"`)
	h.waitEvent(corev1.EventTypeWarning, controller.ReasonJobFailed, "NumberFormatException")
	h.waitCluster(v1beta1.ClusterStateStopped)
	h.waitConditions("DeploymentFailed=True/CrashLoopBackOff", "JobManagerReady=False/JobManagerMissing")
	h.eventually("everything removed (afterJobFails DeleteCluster)", h.allGone)
	noResubmission(h, v1beta1.JobStateDeployFailed, "")
}

// mainThrowsJobExits: the entrypoint exits 2 when main() throws; restartPolicy Never makes the
// pod Failed and the Job controller fails the Job (backoffLimit 0).
func mainThrowsJobExits(t *testing.T, h *harness) {
	h.waitWorkload("")
	fc := h.waitJob(v1beta1.JobStateDeployFailed)
	assert.Contains(t, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"), `java.lang.NumberFormatException: For input string: "not-a-number"`)
	assert.Empty(t, missingConditions(fc, []string{"DeploymentFailed=True/ApplicationFailed"}), "the JobManager ran and exited before the job ran: the deploy failed")
	h.waitEvent(corev1.EventTypeWarning, controller.ReasonJobFailed, "NumberFormatException")
	h.waitCluster(v1beta1.ClusterStateStopped)
	h.eventually("everything removed (afterJobFails DeleteCluster)", h.allGone)
	noResubmission(h, v1beta1.JobStateDeployFailed, "")
}

// mainThrowsApplicationFailed: Flink 2.3 marks the application FAILED, lists no job, and
// keeps the JobManager up; neither job state nor a crash loop shows the failure.
func mainThrowsApplicationFailed(t *testing.T, h *harness) {
	// In Job mode the JobManager of the FAILED application stays up too, until the
	// controller, the failure recorded, shuts it down.
	_, jm := h.runningPod()
	h.eventually("the application RUNNING", func() bool { return jm.ApplicationState() == flinkclient.ApplicationStateRunning })
	h.afterReconciles("a running application without jobs yet is Deploying", func() bool { return h.jobState() == v1beta1.JobStateDeploying })
	h.flink.ReleaseMain()
	require.Equal(t, flinkclient.ApplicationStateFailed, jm.ApplicationState())
	fc := h.waitJob(v1beta1.JobStateDeployFailed)
	assert.Contains(t, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"),
		`application failed before submitting a job: org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: For input string: "not-a-number"`)
	assert.Empty(t, missingConditions(fc, []string{"DeploymentFailed=True/ApplicationFailed", "Lost=False/JobTracked"}))
	h.waitCluster(v1beta1.ClusterStateStopped)
	h.eventually("everything removed (afterJobFails DeleteCluster)", h.allGone)
	noResubmission(h, v1beta1.JobStateDeployFailed, "")
}

const classNotFound = "org.apache.flink.util.FlinkException: Could not load the provided entrypoint class.\n" +
	"Caused by: java.lang.ClassNotFoundException: org.example.Missing"

const missingJar = "org.apache.flink.util.FlinkException: Could not load the provided entrypoint class.\n" +
	"Caused by: java.nio.file.NoSuchFileException: /opt/flink/usrlib/job.jar"

// invalidArtifact: the JobManager cannot load the application (missing class or jar) and
// dies at once with log, the termination message, naming the cause.
func invalidArtifact(log, cause string) func(t *testing.T, h *harness) {
	return func(t *testing.T, h *harness) { invalidArtifactRun(t, h, log, cause) }
}

func invalidArtifactRun(t *testing.T, h *harness, log, cause string) {
	// The row's prepare made every start fail with log (startupFails): the Simulator writes the
	// exits, the kubelet's restarts and back-off (Deployment) or the Failed pod (Job).
	_ = log
	wl := h.waitWorkload("")
	fc := h.waitJob(v1beta1.JobStateDeployFailed)
	assert.Contains(t, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"), cause)
	h.waitEvent(corev1.EventTypeWarning, controller.ReasonJobFailed, cause)
	if h.deployment() {
		assert.Empty(t, missingConditions(fc, []string{"DeploymentFailed=True/CrashLoopBackOff"}))
		assert.Contains(t, h.condition(controller.ConditionDeploymentFailed).Message, cause)
		h.eventually("JobManager Deployment scaled to 0", func() bool {
			d := h.workload().(*appsv1.Deployment)
			return ptr.Deref(d.Spec.Replicas, 1) == 0
		})
		h.waitConditions("JobManagerReady=False/ScaledToZero", "DeploymentFailed=True/CrashLoopBackOff")
		// The ReplicaSet controller removes the crash-looping pod.
		h.eventually("the crash-looping pod removed by the ReplicaSet scaled to 0", func() bool { return len(h.jmPods()) == 0 })
	} else {
		// The Job's JobManager exited before the job ran: the deploy failed, as the
		// Deployment's crash loop does.
		h.waitConditions("JobManagerReady=False/PodNotReady", "DeploymentFailed=True/ApplicationFailed")
	}
	h.waitCluster(v1beta1.ClusterStatePartiallyStopped)
	assert.True(t, h.taskManagerExists(), "afterJobFails KeepCluster keeps the TaskManagers")
	noResubmission(h, v1beta1.JobStateDeployFailed, string(wl.GetUID()))
	if h.deployment() {
		assert.Empty(t, h.jmPods(), "no restart loop")
		assert.Equal(t, int32(0), ptr.Deref(h.workload().(*appsv1.Deployment).Spec.Replicas, 1))
	}
}

func finiteApplicationSucceeds(t *testing.T, h *harness) {
	// In Job mode the JobManager outlives the finished job until the controller, the end
	// recorded, shuts it down (DELETE /cluster): it exits 0, the Job completes, then
	// afterJobSucceeds removes everything.
	_, pod := h.runJob()
	h.process(pod).SetJobState(h.jobID(), flinkclient.JobStateFinished)
	fc := h.waitJob(v1beta1.JobStateSucceeded)
	assert.NotNil(t, fc.Status.Components.Job.CompletionTime, "a real completion")
	if !h.deployment() {
		h.waitEvent(corev1.EventTypeNormal, controller.ReasonJobManagerShutdown, "DELETE /cluster")
		h.eventually("the JobManager shut down by the controller", func() bool {
			st, ok := h.process(pod).ExitStatus()
			return ok && st.Code == fakeflink.ExitSucceeded
		})
		assert.Equal(t, 1, h.countRequests("DELETE /cluster"))
	}
	h.waitCluster(v1beta1.ClusterStateStopped)
	h.waitConditions("JobManagerReady=False/JobManagerMissing", "Updating=False/UpToDate", "DeploymentFailed=False/NoFailure", "Lost=False/JobTracked")
	h.eventually("everything removed (afterJobSucceeds DeleteCluster)", h.allGone)
	noResubmission(h, v1beta1.JobStateSucceeded, "")
}

// crashLoopWhileRunning: Flink never ended the job and HA recovers it
// once the cause passes: the job stays non-terminal (Lost, with DeploymentFailed and an
// Event) until the Lost timeout, and is tracked again when the JobManager recovers it.
func crashLoopWhileRunning(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	id := h.jobID()
	// The container crashes and the kubelet restarts it, again and again, each time failing
	// before the REST API is up: the Simulator writes each exit (exit code 1, the message),
	// the restart count and the back-off.
	h.failStartup(&fakeflink.ExitStatus{Code: fakeflink.ExitStartupFailure, Message: "java.lang.IllegalStateException: HA storage directory is not accessible"})
	h.process(pod).Kill()
	fc := h.waitJob(v1beta1.JobStateLost)
	reasons := strings.Join(fc.Status.Components.Job.FailureReasons, "\n")
	assert.Regexp(t, `JobManager container in CrashLoopBackOff after [0-9]+ restarts, exit code 1: java.lang.IllegalStateException: HA storage directory is not accessible`, reasons)
	fc = h.waitConditions("DeploymentFailed=True/CrashLoopBackOff", "Lost=True/JobNotReported")
	assert.Contains(t, h.condition(controller.ConditionDeploymentFailed).Message, "HA storage directory is not accessible")
	h.waitEvent(corev1.EventTypeWarning, controller.ReasonJobLost, "CrashLoopBackOff")
	assert.Equal(t, v1beta1.ClusterStateReconciling, fc.Status.State, "still reconciling, not stopped")
	assert.Equal(t, wl.GetUID(), h.workload().GetUID(), "the JobManager Deployment is kept")
	assert.Equal(t, int32(1), *h.workload().(*appsv1.Deployment).Spec.Replicas, "not scaled down")

	// The storage comes back: the next restart's JobManager takes over once the dead one's
	// lease expired and recovers the job from HA, under the same job ID, in the same pod.
	h.failStartup(nil)
	next := h.recoveredOn(id)
	assert.Equal(t, pod.UID, next.UID, "restarted in place")
	jm := h.process(next)
	assert.Equal(t, flinkclient.JobStateRunning, jm.JobState(id), "recovered, not rerun")
	for _, e := range h.flink.Executions() {
		if e.JobID == id && e.Process == jm.Name() && e.End.IsZero() {
			assert.True(t, e.Recovered, "the running execution came from the job graph store")
		}
	}
	h.waitConditions("DeploymentFailed=False/NoFailure", "Lost=False/JobTracked")
}

// deleteJobManagerDeploymentHALost: the JobManager
// Deployment of a job that ran is gone and so is its HA data: recreating it would restart the
// job from its initial savepoint (or empty state). The deployment fails with a clear reason,
// nothing is created, and the user's restore-from annotation deploys anew.
func deleteJobManagerDeploymentHALost(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	id := h.jobID()
	// The Deployment first, and seen gone by the controller (its pod held Terminating, so
	// that nothing is recreated yet): with the JobManager Deployment still there, the
	// controller would answer the lost HA data with a savepoint (row 8c).
	h.hold(pod)
	require.NoError(t, k8s.Delete(h.ctx, wl, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	h.waitConditions("JobManagerReady=False/JobManagerMissing")
	require.NoError(t, h.flink.LoseHA())
	h.release(pod)
	fc := h.waitConditions("DeploymentFailed=True/HAMetadataMissing", "SavepointRequired=True/HAMetadataMissing")
	assert.Equal(t, v1beta1.JobStateFailed, fc.Status.Components.Job.State)
	assert.Contains(t, h.condition(controller.ConditionSavepointRequired).Message, controller.RestoreAnnotation)
	h.waitEvent(corev1.EventTypeWarning, controller.ReasonHAMetadataMissing, "HA metadata")
	h.waitEvent(corev1.EventTypeWarning, controller.ReasonSavepointRequired, controller.RestoreAnnotation)
	assert.Nil(t, h.workload(), "no JobManager restarted from an old savepoint")
	assert.False(t, h.podExists(pod))

	h.patch(func(fc *v1beta1.FlinkCluster) {
		fc.Annotations = map[string]string{controller.RestoreAnnotation: "file:///savepoints/older"}
	})
	next := h.waitWorkload(wl.GetUID())
	args := strings.Join(podTemplate(next).Spec.Containers[0].Args, " ")
	h.restoresFrom(next, "file:///savepoints/older")
	newID := h.jobID()
	assert.NotEqual(t, id, newID)
	assert.Contains(t, args, "--job-id "+newID)
	h.waitConditions("SavepointRequired=False/NotRequired", "DeploymentFailed=False/NoFailure")
	h.eventually("the restore-from annotation removed", func() bool {
		_, ok := h.get().Annotations[controller.RestoreAnnotation]
		return !ok
	})
	h.waitEvent(corev1.EventTypeWarning, controller.ReasonRestoreAccepted, "file:///savepoints/older")
}

const initialSavepoint = "file:///savepoints/initial"

// initialSavepointLeavesConfiguration: the savepoint of spec.job.fromSavepoint is never in the
// JobManager's pod template, which lives as long as the deploy; it is in the Flink
// configuration until the controller saw the job run, so that a JobManager restarted after
// the HA data vanished cannot rewind the job to it.
func initialSavepointLeavesConfiguration(t *testing.T, h *harness) {
	h.restoresFrom(h.waitWorkload(""), initialSavepoint)
	wl, _ := h.runJob()
	h.savepointLeavesConfiguration(wl)
	assert.Equal(t, initialSavepoint, h.get().Status.Components.Job.FromSavepoint, "the status keeps what the deploy restored")
}

func restartFromSavepoint(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	h.annotate(v1beta1.ControlNameSavepoint)
	h.eventually("savepoint taken", func() bool { return h.get().Status.Components.Job.SavepointLocation != "" })
	loc := h.get().Status.Components.Job.SavepointLocation
	// The JobManager of the failed job stays up: the controller records the failure and
	// replaces the Job with a new deploy from the savepoint.
	h.process(pod).SetJobState(h.jobID(), flinkclient.JobStateFailed)
	next := h.waitWorkload(wl.GetUID())
	h.restoresFrom(next, loc)
	fc := h.get()
	assert.Equal(t, int32(1), fc.Status.Components.Job.RestartCount)
	pod, _ = h.runningPod(pod.UID)
	h.waitJob(v1beta1.JobStateRunning)
	assert.Equal(t, loc, h.process(pod).RestoredFrom(h.jobID()), "the restarted job restores its latest savepoint")
}

func noRestartFromSavepoint(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	h.annotate(v1beta1.ControlNameSavepoint)
	h.eventually("savepoint taken", func() bool { return h.get().Status.Components.Job.SavepointLocation != "" })
	h.process(pod).SetJobState(h.jobID(), flinkclient.JobStateFailed)
	h.waitJob(v1beta1.JobStateFailed)
	h.waitCluster(v1beta1.ClusterStateStopped)
	noResubmission(h, v1beta1.JobStateFailed, "")
	assert.Zero(t, h.get().Status.Components.Job.RestartCount)
	_ = wl
}

func notManaged(t *testing.T, h *harness) {
	h.waitEvent(corev1.EventTypeNormal, controller.ReasonNotManaged, "job mode Detached is not managed")
	h.afterReconciles("nothing created", func() bool {
		fc := h.get()
		return h.workload() == nil && fc.Status.State == "" && !slices.Contains(fc.Finalizers, controller.Finalizer)
	})
	fc := h.waitConditions("Managed=False/NotApplicationMode", "Ready=True/NotApplicationMode")
	assert.Len(t, fc.Status.Conditions, 2, "nothing but Managed and Ready: the cluster is left alone")
	assert.Contains(t, fc.Status.Conditions[0].Message, "job mode Detached is not managed")
	assert.Equal(t, fc.Generation, fc.Status.ObservedGeneration, "kstatus reads the generation seen")
}

// oldLeaderFinishedRace puts an old-revision JobManager that is still Terminating (and
// still the leader, answering FINISHED for the execution it stopped) next to the new
// revision's ready JobManager. The FINISHED must not end the new revision.
func oldLeaderFinishedRace(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	oldID := h.jobID()
	oldRevision := pod.Labels[resources.LabelRevision]
	// The row's own node cordoned: the next revision's pod waits unscheduled, so that the row
	// can put an old-revision JobManager in front of it (the scheduler would start it at once).
	h.cordon(true)
	oldConf := h.process(pod).Config()
	jobResults := h.process(pod).JobResultStorePath()
	h.patch(func(fc *v1beta1.FlinkCluster) { fc.Spec.FlinkProperties["pipeline.name"] = "wordcount-v2" })
	next := h.waitWorkload(wl.GetUID())
	require.Equal(t, flinkclient.JobStateFinished, h.executionState(oldID))
	h.eventually("the next revision's pod waiting for a node", func() bool {
		pods := h.jmPods()
		return len(pods) == 1 && pods[0].Spec.NodeName == "" && pods[0].Labels[resources.LabelRevision] == next.GetLabels()[resources.LabelRevision]
	})

	// An old-revision JobManager (the old workload's pod template, bound to the old node
	// directly, as a late pod of the old workload would be) leads: its main() finds the
	// stopped job's result in its job result store and reports the job FINISHED.
	// Flink lists the job only while the result is dirty (the cleanup of the old JobManager
	// did not finish): a clean one is not listed at all.
	require.True(t, h.flink.MarkResultDirty(jobResults, oldID))
	stray := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "wc-jobmanager-old-leader", Namespace: h.ns, Labels: podTemplate(wl).Labels},
		Spec:       podTemplate(wl).Spec,
	}
	stray.Spec.NodeName = pod.Spec.NodeName
	require.Equal(t, oldRevision, stray.Labels[resources.LabelRevision])
	// Its container runs with the old revision's Flink configuration, as one started before
	// the update would (the row cannot make the real controllers start it that early: they
	// wait for every old pod before they deploy the next revision, and the next revision's
	// configuration replaces the old one).
	configurations.Store(h.ns+"/"+stray.Name, oldConf.Properties)
	t.Cleanup(func() { configurations.Delete(h.ns + "/" + stray.Name) })
	require.NoError(t, k8s.Create(h.ctx, stray))
	_, strayJM := h.runningPod()
	require.Equal(t, stray.Name, strayJM.Name())
	h.eventually("the old JobManager leading", strayJM.Leads)
	require.Equal(t, flinkclient.JobStateFinished, strayJM.JobState(oldID))
	// It is deleted and stays Terminating in its preStop hook, still leading.
	h.hold(stray)
	require.NoError(t, k8s.Delete(h.ctx, stray))
	h.cordon(false)
	_, newJM := h.runningPod(stray.UID)
	require.False(t, newJM.Leads(), "the old JobManager leads")
	h.afterReconciles("the old leader's FINISHED is not taken for the new revision", func() bool {
		fc := h.get()
		return fc.Status.Components.Job.State == v1beta1.JobStateDeploying && strayJM.Leads() &&
			len(missingConditions(fc, []string{"Updating=True/DeployingNextRevision"})) == 0
	})
	// The old JobManager goes and gives up its leadership: the new one leads, restores the
	// savepoint and runs the job.
	h.release(stray)
	h.waitJob(v1beta1.JobStateRunning)
	h.waitConditions(steady...)
	assert.True(t, newJM.Leads())
	assert.Equal(t, h.get().Status.Components.Job.FromSavepoint, newJM.RestoredFrom(h.jobID()))
}

// fixedSpecRedeploys: the failed-deployment error is raised once, so fixing the spec (a new
// revision) deploys again.
func fixedSpecRedeploys(t *testing.T, h *harness) {
	// The first revision's starts fail (startupFails), in a crash loop or a failed Job.
	wl := h.waitWorkload("")
	h.waitJob(v1beta1.JobStateDeployFailed)
	h.waitCluster(v1beta1.ClusterStatePartiallyStopped)
	if h.deployment() {
		h.waitConditions("DeploymentFailed=True/CrashLoopBackOff")
	}

	// The fixed class loads.
	h.failStartup(nil)
	h.patch(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.ClassName = ptr.To("org.example.Job2") })
	next := h.waitWorkload(wl.GetUID())
	assert.Contains(t, strings.Join(podTemplate(next).Spec.Containers[0].Args, " "), "--job-classname org.example.Job2")
	// The real controllers start the next pod at once: the deploy is seen by its Event, and
	// DeploymentFailed cleared by it.
	h.waitEvent(corev1.EventTypeNormal, controller.ReasonJobManagerCreated, "revision "+next.GetLabels()[resources.LabelRevision])
	h.waitConditions("DeploymentFailed=False/NoFailure")
	assert.Zero(t, h.requests("POST", "/stop"), "nothing to stop: the job never ran")
	h.runningPod()
	fc := h.waitJob(v1beta1.JobStateRunning)
	assert.Equal(t, fc.Status.Revision.NextRevision, fc.Status.Revision.CurrentRevision)
	h.waitCluster(v1beta1.ClusterStateRunning)
	h.waitConditions(steady...)
}

// haDeletedBehindRunningJobManager: the job graphs in the cluster's HA ConfigMap of a running
// job are deleted (an edit, a partial cleanup) while its JobManager runs; the job's own
// ConfigMap stays. Nothing fails yet, but the next restart of the JobManager container would
// find no job graph and run main() again from empty state. The controller notices the running
// job without its graph, says so, stops it with a savepoint and deploys the same revision
// again from it under a new job ID.
func haDeletedBehindRunningJobManager(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	id := h.jobID()
	revision := h.get().Status.Revision.CurrentRevision
	require.NotEmpty(t, h.process(pod).CompleteCheckpoint(id))
	// The job graphs only: with its leader ConfigMap deleted the JobManager would exit
	// (KubernetesLeaderElectionDriver), see controller/simulation/ha_test.go; with the job's
	// ConfigMap, no savepoint could be taken (jobConfigMapDeletedBehindRunningJobManager).
	require.NoError(t, h.flink.LoseExecutionPlans())

	h.waitEvent(corev1.EventTypeWarning, controller.ReasonHAMetadataMissing, "the HA metadata of running job "+id+" is gone")
	h.eventually("a stop-with-savepoint of the job", func() bool { return h.countRequests("POST /jobs/"+id+"/stop") == 1 })
	next := h.waitWorkload(wl.GetUID())
	fc := h.get()
	loc := fc.Status.Components.Job.SavepointLocation
	require.NotEmpty(t, loc)
	require.NotNil(t, fc.Status.Savepoint)
	assert.Equal(t, id, fc.Status.Savepoint.JobID)
	assert.Equal(t, controller.SavepointStateSucceeded, fc.Status.Savepoint.State, "the old job's stop-with-savepoint")
	assert.Equal(t, flinkclient.JobStateFinished, h.executionState(id), "the job was stopped, not left to rerun")
	h.restoresFrom(next, loc)
	newID := h.jobID()
	require.NotEqual(t, id, newID, "the redeploy runs under a new job ID")
	assert.Equal(t, revision, next.GetLabels()[resources.LabelRevision], "the same revision")
	assert.Equal(t, revision, fc.Status.Revision.CurrentRevision)
	assert.Contains(t, h.condition(controller.ConditionDeploymentFailed).Message, "created JobManager Deployment")

	pod, _ = h.runningPod(pod.UID)
	h.waitJob(v1beta1.JobStateRunning)
	h.waitConditions(steady...)
	assert.Equal(t, loc, h.process(pod).RestoredFrom(newID), "the new execution restores the savepoint")
	runs := 0
	for _, e := range h.flink.Executions() {
		if e.JobID == id {
			runs++
		}
	}
	assert.Equal(t, 1, runs, "job %s ran once: main() never ran it again from empty state", id)
	cm := &corev1.ConfigMap{}
	require.NoError(t, k8s.Get(h.ctx, types.NamespacedName{Namespace: h.ns, Name: flinkha.ClusterConfigMapName(h.name)}, cm))
	assert.Equal(t, []string{newID}, flinkha.JobGraphs(cm), "the new deploy's job graph is in HA")
}

// jobConfigMapDeletedBehindRunningJobManager: the job graphs and the job's own HA ConfigMap
// are deleted while its JobManager runs. Flink creates that ConfigMap when the JobMaster
// starts and never again, so every checkpoint and savepoint of the job fails from then on
// (its checkpoint ID counter is gone), the stop the controller answers with included. The
// controller says the HA metadata is missing, and the job runs on under its JobManager:
// nothing is redeployed, main() never reruns, nothing is rewound; the stop is tried again.
func jobConfigMapDeletedBehindRunningJobManager(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	id := h.jobID()
	require.NotEmpty(t, h.process(pod).CompleteCheckpoint(id))
	require.NoError(t, h.flink.LoseJobGraphs())

	h.waitEvent(corev1.EventTypeWarning, controller.ReasonHAMetadataMissing, "the HA metadata of running job "+id+" is gone")
	h.eventually("a stop-with-savepoint of the job", func() bool { return h.countRequests("POST /jobs/"+id+"/stop") >= 1 })
	h.waitEvent(corev1.EventTypeWarning, controller.ReasonSavepointFailed, "update savepoint of job "+id+" failed")
	h.afterReconciles("the job runs on under its JobManager", func() bool {
		return h.process(pod).JobState(id) == flinkclient.JobStateRunning && h.workload().GetUID() == wl.GetUID() && h.jobID() == id
	})
	assert.Empty(t, h.executionState(id), "the job never ended")
	runs := 0
	for _, e := range h.flink.Executions() {
		if e.JobID == id {
			runs++
		}
	}
	assert.Equal(t, 1, runs, "job %s ran once", id)
}
