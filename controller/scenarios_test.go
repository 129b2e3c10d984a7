package controller_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/fakeflink"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

const (
	jobMode = v1beta1.JobManagerDeploymentTypeJob
	depMode = v1beta1.JobManagerDeploymentTypeDeployment
)

// scenario is one row of the table for one deployment type.
type scenario struct {
	mode  v1beta1.JobManagerDeploymentType
	name  string
	build func(w *builder.FlinkClusterWrapper)
	run   func(t *testing.T, h *harness)
}

func scenarios() []scenario {
	keepOnFailure := func(w *builder.FlinkClusterWrapper) {
		w.CleanupPolicy(v1beta1.CleanupActionDeleteCluster, v1beta1.CleanupActionKeepCluster, v1beta1.CleanupActionDeleteCluster)
	}
	flink23 := func(w *builder.FlinkClusterWrapper) { w.FlinkVersion("2.3") }
	return []scenario{
		{depMode, "1 regular update twice: restores the final savepoint under a new job ID, HA data deleted first, no replacement while old JM pod terminating (old-leader FINISHED race fixed)", nil, updateTwice},
		{jobMode, "1 regular update twice: restores the final savepoint under a new job ID, revisions converge", nil, updateTwice},
		{depMode, "2 cancel with savepoint: Cancelled, cancellation cleanup, no resubmission", nil, cancelWithSavepoint},
		{jobMode, "2 cancel with savepoint: Cancelled, cancellation cleanup, no resubmission", nil, cancelWithSavepoint},
		{depMode, "3 non-stopping savepoint: job stays Running, workload and pod UIDs unchanged", nil, nonStoppingSavepoint},
		{jobMode, "3 non-stopping savepoint: job stays Running, workload and pod UIDs unchanged", nil, nonStoppingSavepoint},
		{depMode, "4 delete running cluster: finalizer held while JM pod terminates, no replacement, HA ConfigMaps removed, no savepoint", nil, deleteRunningCluster},
		{jobMode, "4 delete running cluster: finalizer held while JM pod terminates, no replacement, HA ConfigMaps removed, no savepoint", nil, deleteRunningCluster},
		{depMode, "5a Flink retries exhausted after a checkpoint: Failed, cleanup to Stopped, no resubmission", nil, retriesExhaustedWhileRunning},
		{jobMode, "5a Flink retries exhausted after a checkpoint: Failed, cleanup to Stopped, no resubmission", nil, retriesExhaustedWhileRunning},
		{depMode, "5b Flink retries exhausted from startup: Failed, cleanup to Stopped, no resubmission", nil, retriesExhaustedFromStartup},
		{jobMode, "5b Flink retries exhausted from startup: Failed, cleanup to Stopped, no resubmission", nil, retriesExhaustedFromStartup},
		{depMode, "7 delete JM pod: replacement pod, same job ID recovered, no premature failure", nil, deleteJobManagerPodDeployment},
		{jobMode, "7 delete JM pod: Failed, failure cleanup, no resubmission", nil, deleteJobManagerPodJob},
		{depMode, "8 delete JM Deployment: recreated, same job recovered, no premature cleanup", nil, deleteJobManagerDeployment},
		{depMode, "8b delete JM Deployment with its HA data gone (hole 3, seed 000 example 4): Failed with HAMetadataMissing, nothing restarted, user's restore-from deploys", nil, deleteJobManagerDeploymentHALost},
		{depMode, "8c HA data deleted behind a running JM (issue 8, left item 5): stopped with a savepoint and redeployed from it under a new job ID, main() never rerun from empty state", nil, haDeletedBehindRunningJobManager},
		{depMode, "9 exception in main() on Flink 2.2: crash loop gives DeployFailed with the cause, cleanup, no resubmission", nil, mainThrowsCrashLoop},
		{depMode, "9 exception in main() on Flink 2.3: application FAILED with empty job list gives DeployFailed with the cause, cleanup, no resubmission", flink23, mainThrowsApplicationFailed},
		{jobMode, "9 exception in main() on Flink 2.2: JM exits, DeployFailed with the cause, cleanup, no resubmission", nil, mainThrowsJobExits},
		{jobMode, "9 exception in main() on Flink 2.3: application FAILED with empty job list gives DeployFailed with the cause, cleanup, no resubmission", flink23, mainThrowsApplicationFailed},
		{depMode, "11 invalid entry class: DeployFailed, Deployment scaled to 0 and kept, no restart loop", keepOnFailure, invalidArtifact(classNotFound, "java.lang.ClassNotFoundException: org.example.Missing")},
		{jobMode, "11 invalid entry class: DeployFailed, failed Job kept, no restart loop", keepOnFailure, invalidArtifact(classNotFound, "java.lang.ClassNotFoundException: org.example.Missing")},
		{depMode, "11 missing jar: DeployFailed, Deployment scaled to 0 and kept, no restart loop", keepOnFailure, invalidArtifact(missingJar, "java.nio.file.NoSuchFileException: /opt/flink/usrlib/job.jar")},
		{jobMode, "11 missing jar: DeployFailed, failed Job kept, no restart loop", keepOnFailure, invalidArtifact(missingJar, "java.nio.file.NoSuchFileException: /opt/flink/usrlib/job.jar")},
		{depMode, "12 finite application succeeds: Succeeded, afterJobSucceeds cleanup, no resubmission", nil, finiteApplicationSucceeds},
		{jobMode, "12 finite application succeeds: Succeeded, afterJobSucceeds cleanup, no resubmission", nil, finiteApplicationSucceeds},
		{depMode, "+ old-leader FINISHED race: a Terminating old-revision JM next to the new ready JM, FINISHED ignored", nil, oldLeaderFinishedRace},
		{jobMode, "+ old-leader FINISHED race: a Terminating old-revision JM next to the new ready JM, FINISHED ignored", nil, oldLeaderFinishedRace},
		{depMode, "+ crash loop of a Running job's JM (hole 5): not terminal, DeploymentFailed with the reason, recovered when it passes", nil, crashLoopWhileRunning},
		{depMode, "+ DeployFailed, then a fixed spec: the next revision deploys and runs", keepOnFailure, fixedSpecRedeploys},
		{jobMode, "+ DeployFailed, then a fixed spec: the next revision deploys and runs", keepOnFailure, fixedSpecRedeploys},
		{jobMode, "+ restartPolicy FromSavepointOnFailure: failed job restored from its latest savepoint", func(w *builder.FlinkClusterWrapper) { w.RestartFromSavepoint(3600) }, restartFromSavepoint},
		{depMode, "+ restartPolicy FromSavepointOnFailure is ignored: a failed job is never restored from a savepoint", func(w *builder.FlinkClusterWrapper) { w.RestartFromSavepoint(3600) }, noRestartFromSavepoint},
		{depMode, "+ initial fromSavepoint: restored through the Flink configuration, taken out of it once the job runs, pod template never changed", func(w *builder.FlinkClusterWrapper) { w.FromSavepoint(initialSavepoint) }, initialSavepointLeavesConfiguration},
		{jobMode, "+ initial fromSavepoint: restored through the Flink configuration, taken out of it once the job runs, pod template never changed", func(w *builder.FlinkClusterWrapper) { w.FromSavepoint(initialSavepoint) }, initialSavepointLeavesConfiguration},
		{depMode, "+ session or non-Application mode: left alone with an Event", func(w *builder.FlinkClusterWrapper) { w.JobMode(v1beta1.JobModeDetached).DeploymentType("") }, notManaged},
	}
}

func TestScenarios(t *testing.T) {
	for _, s := range scenarios() {
		t.Run(string(s.mode)+"/"+s.name, func(t *testing.T) {
			t.Parallel()
			s.run(t, newHarness(t, s.mode, s.build))
		})
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

func updateTwice(t *testing.T, h *harness) {
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
				return h.workload() == nil && fc.Status.Components.Job.State == v1beta1.JobStateUpdating &&
					fc.Status.State == v1beta1.ClusterStateUpdating && h.podExists(pod)
			})
			h.waitEvent(corev1.EventTypeNormal, controller.ReasonWaitingForPods, pod.Name)
			h.release(pod)
		}

		next := h.waitWorkload(wl.GetUID())
		require.Empty(t, h.jmPods(), "the next revision starts after every old JobManager pod is gone")
		args := podTemplate(next).Spec.Containers[0].Args
		h.restoresFrom(next, loc)
		newID := h.jobID()
		require.NotEqual(t, id, newID, "a new deploy runs under a new job ID (hole 1)")
		require.Contains(t, strings.Join(args, " "), "--job-id "+newID, "the job ID recorded in the status before the workload was created")
		require.Equal(t, newID, next.GetLabels()[resources.LabelJobID])
		cms := &corev1.ConfigMapList{}
		require.NoError(t, k8s.List(h.ctx, cms, client.InNamespace(h.ns), client.MatchingLabels(flinkha.Labels(h.name))))
		require.Empty(t, cms.Items, "the old deploy's HA ConfigMaps are deleted before the new one starts (hole 2)")
		id = newID
		require.NotEqual(t, before.CurrentRevision, next.GetLabels()[resources.LabelRevision], "the replacement runs a new revision")
		h.eventually("the new revision recorded", func() bool {
			return h.get().Status.Revision.CurrentRevision == next.GetLabels()[resources.LabelRevision]
		})
		h.waitConditions("Updating=True/DeployingNextRevision", "JobManagerReady=False/PodNotReady")
		assert.Contains(t, h.condition(controller.ConditionUpdating).Message, "restoring savepoint "+loc)

		// The new JobManager finds no job graph in HA: main() runs the job under the new ID
		// from the savepoint its Flink configuration names.
		pod = h.startPod(next)
		assert.Equal(t, loc, h.process(pod).RestoredFrom(id), "the new execution restores the final savepoint")
		fc = h.waitJob(v1beta1.JobStateRunning)
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

// jobManagerExits ends the JobManager in Job mode after the job ended, as Flink does with
// execution.shutdown-on-application-finish (the default there).
func (h *harness) jobManagerExits(wl client.Object, pod *corev1.Pod, exitCode int32, message string) {
	h.t.Helper()
	if h.deployment() {
		return
	}
	if p := h.flink.Process(pod.Name); p != nil {
		// With execution.shutdown-on-application-finish (Flink's default) the JobManager of an
		// ended application cleans up its HA data and exits.
		p.Exit()
	}
	// The controller may already be removing the pod and the Job (cleanup or restart).
	h.trySetPodStatus(pod, func(p *corev1.Pod) { builder.SetTerminated(p, fakeClock.Now(), exitCode, message) })
	if exitCode == 0 {
		h.setJobCondition(wl, true, "Completed", "")
	} else {
		h.setJobCondition(wl, false, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
	}
}

func retriesExhaustedWhileRunning(t *testing.T, h *harness) {
	wl, pod := h.runJob()
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
	h.jobManagerExits(wl, pod, 1443, "org.apache.flink.runtime.JobException: Recovery is suppressed")
	h.waitCluster(v1beta1.ClusterStateStopped)
	h.waitConditions("JobManagerReady=False/JobManagerMissing", "DeploymentFailed=False/NoFailure")
	h.eventually("everything removed (afterJobFails DeleteCluster)", h.allGone)
	noResubmission(h, v1beta1.JobStateFailed, "")
}

func retriesExhaustedFromStartup(t *testing.T, h *harness) {
	// The job fails over from its first start on: it never gets past INITIALIZING.
	h.flink.SetProgram(fakeflink.Program{JobName: "wordcount", InitialState: flinkclient.JobStateInitializing})
	wl := h.waitWorkload("")
	pod := h.startPod(wl)
	id := h.jobID()
	jm := h.process(pod)
	h.afterReconciles("initializing job is Deploying", func() bool { return h.jobState() == v1beta1.JobStateDeploying })
	jm.SetExceptions(id, flinkclient.Exception{Name: "org.example.ControlledFailureException", StackTrace: "org.example.ControlledFailureException: failure control file says FAIL"}, retriesExhausted)
	jm.SetJobState(id, flinkclient.JobStateFailed)
	fc := h.waitJob(v1beta1.JobStateFailed)
	assert.Contains(t, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"), "ControlledFailureException")
	assert.Empty(t, missingConditions(fc, []string{"DeploymentFailed=False/NoFailure", "Lost=False/JobTracked"}), "a job failure, not a failed deployment")
	h.jobManagerExits(wl, pod, 1443, "org.example.ControlledFailureException")
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
	h.waitConditions("JobManagerReady=False/PodNotReady", "Lost=False/JobTracked")
	h.afterReconciles("no premature failure while the JobManager is down", func() bool {
		fc := h.get()
		return fc.Status.Components.Job.State == v1beta1.JobStateRunning && len(fc.Status.Components.Job.FailureReasons) == 0 &&
			len(missingConditions(fc, []string{"JobManagerReady=False/PodNotReady", "Lost=False/JobTracked", "DeploymentFailed=False/NoFailure"})) == 0
	})
	replacement := h.startPod(wl) // the ReplicaSet's replacement
	require.NotEqual(t, pod.UID, replacement.UID)
	jm := h.process(replacement)
	h.afterReconciles("the restarted JobManager waiting for the leadership keeps the job Running", func() bool { return h.jobState() == v1beta1.JobStateRunning })
	// The dead leader's lease expires: the replacement leads and recovers the job from HA.
	h.flink.Advance(16 * time.Second)
	require.True(t, jm.Leads())
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
	assert.Equal(t, "file:///checkpoints/"+id+"/chk-1", jm.RestoredFrom(id), "recovered from its latest checkpoint")
}

func deleteJobManagerPodJob(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	h.process(pod).Kill()
	require.NoError(t, k8s.Delete(h.ctx, pod, client.GracePeriodSeconds(0)))
	// With restartPolicy Never and no retries, the Job controller fails the Job.
	h.setJobCondition(wl, false, "BackoffLimitExceeded", "Job has reached the specified backoff limit")
	fc := h.waitJob(v1beta1.JobStateFailed)
	assert.Contains(t, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"), "BackoffLimitExceeded")
	assert.Empty(t, missingConditions(fc, []string{"DeploymentFailed=False/NoFailure", "Lost=False/JobTracked"}))
	h.waitCluster(v1beta1.ClusterStateStopped)
	h.waitConditions("JobManagerReady=False/JobManagerMissing")
	h.eventually("everything removed (afterJobFails DeleteCluster)", h.allGone)
	noResubmission(h, v1beta1.JobStateFailed, "")
}

func deleteJobManagerDeployment(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	id := h.jobID()
	require.NoError(t, k8s.Delete(h.ctx, wl, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	// envtest has no garbage collector: the old pod stays until the controller removes it,
	// and the Deployment is created again only then.
	next := h.waitWorkload(wl.GetUID())
	require.False(t, h.podExists(pod), "the old JobManager pod is gone before the Deployment is created again")
	fc := h.get()
	assert.Contains(t, []string{v1beta1.JobStateDeploying, v1beta1.JobStatePending}, fc.Status.Components.Job.State)
	h.waitConditions("JobManagerReady=False/PodNotReady", "Lost=False/JobTracked", "Updating=False/UpToDate")
	h.startPod(next)
	fc = h.waitJob(v1beta1.JobStateRunning)
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

func mainThrowsCrashLoop(t *testing.T, h *harness) {
	wl := h.waitWorkload("")
	pod := h.createPod(wl)
	h.setPodStatus(pod, func(p *corev1.Pod) { builder.SetCrashLoop(p, fakeClock.Now(), 3, 0, 1, mainThrows) })
	fc := h.waitJob(v1beta1.JobStateDeployFailed)
	assert.Contains(t, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"), `java.lang.NumberFormatException: For input string: "not-a-number"`)
	assert.Empty(t, missingConditions(fc, []string{"DeploymentFailed=True/CrashLoopBackOff"}))
	assert.Contains(t, h.condition(controller.ConditionDeploymentFailed).Message, `java.lang.NumberFormatException: For input string: "not-a-number"`)
	h.waitEvent(corev1.EventTypeWarning, controller.ReasonJobFailed, "NumberFormatException")
	h.waitCluster(v1beta1.ClusterStateStopped)
	h.waitConditions("DeploymentFailed=True/CrashLoopBackOff", "JobManagerReady=False/JobManagerMissing")
	h.eventually("everything removed (afterJobFails DeleteCluster)", h.allGone)
	noResubmission(h, v1beta1.JobStateDeployFailed, "")
}

func mainThrowsJobExits(t *testing.T, h *harness) {
	wl := h.waitWorkload("")
	pod := h.createPod(wl)
	h.jobManagerExits(wl, pod, 1, mainThrows)
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
	// main() takes a while, then throws before it submits the job.
	h.flink.SetProgram(fakeflink.Program{JobName: "wordcount", BlockBeforeExecute: true,
		Throw: `org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: For input string: "not-a-number"`})
	wl := h.waitWorkload("")
	pod := h.startPod(wl)
	h.eventually("the application RUNNING", func() bool { return h.process(pod).ApplicationState() == flinkclient.ApplicationStateRunning })
	h.afterReconciles("a running application without jobs yet is Deploying", func() bool { return h.jobState() == v1beta1.JobStateDeploying })
	h.flink.ReleaseMain()
	require.Equal(t, flinkclient.ApplicationStateFailed, h.process(pod).ApplicationState())
	fc := h.waitJob(v1beta1.JobStateDeployFailed)
	assert.Contains(t, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"),
		`application failed before submitting a job: org.apache.flink.client.program.ProgramInvocationException: The main method caused an error: For input string: "not-a-number"`)
	assert.Empty(t, missingConditions(fc, []string{"DeploymentFailed=True/ApplicationFailed", "Lost=False/JobTracked"}))
	h.jobManagerExits(wl, pod, 1, mainThrows)
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
	wl := h.waitWorkload("")
	pod := h.createPod(wl)
	if h.deployment() {
		h.setPodStatus(pod, func(p *corev1.Pod) { builder.SetCrashLoop(p, fakeClock.Now(), 3, 0, 1, log) })
	} else {
		h.jobManagerExits(wl, pod, 1, log)
	}
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
		require.NoError(t, k8s.Delete(h.ctx, pod))
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
	wl, pod := h.runJob()
	h.process(pod).SetJobState(h.jobID(), flinkclient.JobStateFinished)
	fc := h.waitJob(v1beta1.JobStateSucceeded)
	assert.NotNil(t, fc.Status.Components.Job.CompletionTime, "a real completion")
	h.jobManagerExits(wl, pod, 0, "")
	h.waitCluster(v1beta1.ClusterStateStopped)
	h.waitConditions("JobManagerReady=False/JobManagerMissing", "Updating=False/UpToDate", "DeploymentFailed=False/NoFailure", "Lost=False/JobTracked")
	h.eventually("everything removed (afterJobSucceeds DeleteCluster)", h.allGone)
	noResubmission(h, v1beta1.JobStateSucceeded, "")
}

// crashLoopWhileRunning: hole 5 of issue 8. Flink never ended the job and HA recovers it
// once the cause passes: the job stays non-terminal (Lost, with DeploymentFailed and an
// Event) until the Lost timeout, and is tracked again when the JobManager recovers it.
func crashLoopWhileRunning(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	id := h.jobID()
	// The container crashes: its process is gone and the kubelet restarts it, again and
	// again, each time failing before the REST API is up.
	h.process(pod).Kill()
	h.setPodStatus(pod, func(p *corev1.Pod) {
		builder.SetCrashLoop(p, fakeClock.Now(), 3, 0, 1, "java.lang.IllegalStateException: HA storage directory is not accessible")
	})
	fc := h.waitJob(v1beta1.JobStateLost)
	assert.Contains(t, strings.Join(fc.Status.Components.Job.FailureReasons, "\n"),
		"JobManager container in CrashLoopBackOff after 3 restarts, exit code 1: java.lang.IllegalStateException: HA storage directory is not accessible")
	fc = h.waitConditions("DeploymentFailed=True/CrashLoopBackOff", "Lost=True/JobNotReported")
	assert.Contains(t, h.condition(controller.ConditionDeploymentFailed).Message, "HA storage directory is not accessible")
	h.waitEvent(corev1.EventTypeWarning, controller.ReasonJobLost, "CrashLoopBackOff")
	assert.Equal(t, v1beta1.ClusterStateReconciling, fc.Status.State, "still reconciling, not stopped")
	assert.Equal(t, wl.GetUID(), h.workload().GetUID(), "the JobManager Deployment is kept")
	assert.Equal(t, int32(1), *h.workload().(*appsv1.Deployment).Spec.Replicas, "not scaled down")

	// The storage comes back: the restarted container's JobManager takes over once the dead
	// one's lease expired and recovers the job from HA, under the same job ID.
	jm := h.startProcess(pod, pod.Status.PodIP)
	h.flink.Advance(16 * time.Second)
	require.True(t, jm.Leads())
	h.setPodStatus(pod, func(p *corev1.Pod) { builder.SetRunning(p, fakeClock.Now()) })
	h.waitJob(v1beta1.JobStateRunning)
	assert.Equal(t, flinkclient.JobStateRunning, jm.JobState(id), "recovered, not rerun")
	h.waitConditions("DeploymentFailed=False/NoFailure", "Lost=False/JobTracked")
}

// deleteJobManagerDeploymentHALost: hole 3 of issue 8 (seed 000, example 4). The JobManager
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
	h.process(pod).SetJobState(h.jobID(), flinkclient.JobStateFailed)
	h.jobManagerExits(wl, pod, 1443, "job failed")
	next := h.waitWorkload(wl.GetUID())
	h.restoresFrom(next, loc)
	fc := h.get()
	assert.Equal(t, int32(1), fc.Status.Components.Job.RestartCount)
	pod = h.startPod(next)
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
	fc := h.waitConditions("Managed=False/NotApplicationMode")
	assert.Len(t, fc.Status.Conditions, 1, "nothing but Managed: the cluster is left alone")
	assert.Contains(t, fc.Status.Conditions[0].Message, "job mode Detached is not managed")
}

// oldLeaderFinishedRace puts an old-revision JobManager that is still Terminating (and
// still the leader, answering FINISHED for the execution it stopped) next to the new
// revision's ready JobManager. The FINISHED must not end the new revision.
func oldLeaderFinishedRace(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	oldID := h.jobID()
	oldRevision := pod.Labels[resources.LabelRevision]
	h.patch(func(fc *v1beta1.FlinkCluster) { fc.Spec.FlinkProperties["pipeline.name"] = "wordcount-v2" })
	oldConf := h.process(pod).Config()
	next := h.waitWorkload(wl.GetUID())
	require.Equal(t, flinkclient.JobStateFinished, h.executionState(oldID))

	// An old-revision JobManager, Terminating, leads: its main() finds the stopped job's
	// result in its job result store and reports the job FINISHED. Flink lists the job only
	// while the result is dirty (the cleanup of the old JobManager did not finish): a clean
	// one is not listed at all.
	require.True(t, h.flink.MarkResultDirty(h.process(pod).JobResultStorePath(), oldID))
	stray := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "wc-jobmanager-old-leader", Namespace: h.ns, Labels: pod.Labels, Finalizers: []string{holdFinalizer}},
		Spec:       pod.Spec,
	}
	require.Equal(t, oldRevision, stray.Labels[resources.LabelRevision])
	require.NoError(t, k8s.Create(h.ctx, stray))
	strayJM := h.runProcess(stray.Name, "10.0.9.9", oldConf.Properties)
	require.True(t, strayJM.Leads())
	require.Equal(t, flinkclient.JobStateFinished, strayJM.JobState(oldID))
	h.setPodStatus(stray, func(p *corev1.Pod) {
		builder.SetRunning(p, fakeClock.Now())
		p.Status.PodIP = "10.0.9.9"
	})
	require.NoError(t, k8s.Delete(h.ctx, stray))
	newJM := h.process(h.startPod(next))
	require.False(t, newJM.Leads(), "the old JobManager leads")
	h.afterReconciles("the old leader's FINISHED is not taken for the new revision", func() bool {
		fc := h.get()
		return fc.Status.Components.Job.State == v1beta1.JobStateDeploying &&
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
	wl := h.waitWorkload("")
	pod := h.createPod(wl)
	if h.deployment() {
		h.setPodStatus(pod, func(p *corev1.Pod) { builder.SetCrashLoop(p, fakeClock.Now(), 3, 0, 1, classNotFound) })
	} else {
		h.jobManagerExits(wl, pod, 1, classNotFound)
	}
	h.waitJob(v1beta1.JobStateDeployFailed)
	h.waitCluster(v1beta1.ClusterStatePartiallyStopped)
	if h.deployment() {
		h.waitConditions("DeploymentFailed=True/CrashLoopBackOff")
	}

	h.patch(func(fc *v1beta1.FlinkCluster) { fc.Spec.Job.ClassName = ptr.To("org.example.Job2") })
	next := h.waitWorkload(wl.GetUID())
	assert.Contains(t, strings.Join(podTemplate(next).Spec.Containers[0].Args, " "), "--job-classname org.example.Job2")
	h.waitConditions("Updating=True/DeployingNextRevision", "DeploymentFailed=False/NoFailure")
	assert.Zero(t, h.requests("POST", "/stop"), "nothing to stop: the job never ran")
	h.startPod(next)
	fc := h.waitJob(v1beta1.JobStateRunning)
	assert.Equal(t, fc.Status.Revision.NextRevision, fc.Status.Revision.CurrentRevision)
	h.waitCluster(v1beta1.ClusterStateRunning)
	h.waitConditions(steady...)
}

// haDeletedBehindRunningJobManager: the HA ConfigMaps of a running job are deleted (a user's
// kubectl delete, a namespace cleanup) while its JobManager runs. Nothing fails yet, but the
// next restart of the JobManager container would find no job graph and run main() again from
// empty state. The controller notices the running job without its graph, says so, stops it
// with a savepoint and deploys the same revision again from it under a new job ID.
func haDeletedBehindRunningJobManager(t *testing.T, h *harness) {
	wl, pod := h.runJob()
	id := h.jobID()
	revision := h.get().Status.Revision.CurrentRevision
	require.NotEmpty(t, h.process(pod).CompleteCheckpoint(id))
	// The job graphs only: with its leader ConfigMap deleted the JobManager would exit
	// (KubernetesLeaderElectionDriver), see controller/simulation/holes17ha_test.go.
	require.NoError(t, h.flink.LoseJobGraphs())

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

	pod = h.startPod(next)
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
