package controller

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Last-state redeploys (the Flink Kubernetes operator's UpgradeMode.LAST_STATE) keep the job ID
// and the checkpoint store in Flink's HA ConfigMaps, removing only the job graph, so that the
// JobMaster restores the newest checkpoint with the new spec. Only the store's keys (checkpoint
// IDs) are read: the values are Flink's serialized handles.

// lastStateView is what Flink's HA store offers a last-state redeploy of the current job.
type lastStateView struct {
	// ok: the store holds a checkpoint of the job that is newer than its savepoints.
	ok bool
	// checkpoint is the newest checkpoint ID stored.
	checkpoint int64
	// newerSavepoint: the job's last savepoint is newer than every stored checkpoint.
	newerSavepoint bool
	// why says why ok is false.
	why string
}

// lastState reads what a last-state redeploy would restore. A savepoint takes its ID from the
// checkpoints' counter, so it is compared by ID; one of unknown ID may be newer than the store.
func (in flowIn) lastState(st *v1beta1.FlinkClusterStatus) lastStateView {
	job := st.Components.Job
	clusterID := resources.HAClusterID(in.fc)
	switch {
	case !flinkcluster.LastStateSupported(&in.fc.Spec):
		return lastStateView{why: "last-state needs a JobManager Deployment with Flink's Kubernetes HA"}
	case job.ID == "":
		return lastStateView{why: "no job was deployed"}
	}
	var ids []int64
	for i := range in.obs.ha.configMaps {
		if cm := &in.obs.ha.configMaps[i]; cm.Name == flinkha.JobConfigMapName(clusterID, job.ID) && cm.DeletionTimestamp == nil {
			ids = flinkha.CheckpointIDs(cm)
		}
	}
	if len(ids) == 0 {
		return lastStateView{why: fmt.Sprintf("Flink's HA store holds no completed checkpoint of job %s (ConfigMap %s)",
			job.ID, flinkha.JobConfigMapName(clusterID, job.ID))}
	}
	newest := ids[len(ids)-1]
	v := lastStateView{checkpoint: newest}
	if sp := st.Savepoint; sp != nil && sp.JobID == job.ID && sp.TriggerTime != "" &&
		sp.State != SavepointStateSucceeded && sp.State != SavepointStateFailed {
		// Triggered and not known to have failed: it may have completed after the checkpoint.
		v.why = fmt.Sprintf("savepoint trigger %s of job %s may have completed (%s): it may be newer than the stored checkpoint %d", sp.TriggerID, job.ID, sp.State, newest)
		return v
	}
	if job.UnknownSavepointTime != "" {
		v.why = fmt.Sprintf("a savepoint of job %s triggered at %s has an unknown outcome: it may have completed after the stored checkpoint %d (Flink's HA store holds no savepoints)",
			job.ID, job.UnknownSavepointTime, newest)
		return v
	}
	switch sp := job.SavepointCheckpointID; {
	case sp > newest:
		v.newerSavepoint = true
		v.why = fmt.Sprintf("savepoint %s (checkpoint ID %d) is newer than the newest stored checkpoint %d", job.SavepointLocation, sp, newest)
	case sp == 0 && savepointOfCurrentJob(st):
		// Of this job ID (an earlier one's is older than its checkpoints), judged by the history:
		// a later trigger (an update's failed stop) replaces the savepoint record.
		v.why = fmt.Sprintf("the checkpoint ID of savepoint %s is unknown: it may be newer than the stored checkpoint %d", job.SavepointLocation, newest)
	default:
		v.ok = true
	}
	return v
}

// planUpdate asks flinkcluster.PlanUpgrade on this reconcile's observation, reading the
// checkpoint statistics only when it needs them.
func planUpdate(ctx context.Context, a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus) flinkcluster.Upgrade {
	obs := in.upgradeObservation(st)
	if flinkcluster.NeedsCheckpointTimes(&in.fc.Spec, obs) {
		obs.Checkpoints = a.checkpointTimes(ctx, st.Components.Job.ID)
	}
	u := flinkcluster.PlanUpgrade(&in.fc.Spec, st, obs, in.now)
	if u.Refused && st.Components.Job.State != v1beta1.JobStateUpdating {
		a.event(corev1.EventTypeNormal, ReasonLastStateRefused, "Update", "job %s: %s", st.Components.Job.ID, u.Why)
	}
	return u
}

// planRestore asks flinkcluster.PlanRestore on the status as the update's stop left it.
func (in flowIn) planRestore(st *v1beta1.FlinkClusterStatus, u flinkcluster.Upgrade) flinkcluster.Restore {
	return flinkcluster.PlanRestore(&in.fc.Spec, st, in.upgradeObservation(st), u, in.now)
}

// upgradeObservation is this reconcile's observation for the upgrade decision, on the status now.
func (in flowIn) upgradeObservation(st *v1beta1.FlinkClusterStatus) flinkcluster.UpgradeObservation {
	ls := in.lastState(st)
	obs := flinkcluster.UpgradeObservation{
		RestoreChoice:  in.restoreChoice(),
		StopInFlight:   stopInFlight(st, SavepointReasonUpdate),
		FlinkSilence:   in.obs.untrusted,
		JobGraphStored: in.obs.ha.jobGraphStored(st.Components.Job.ID),
		WorkloadOfJob:  in.obs.wl != nil && in.obs.wl.JobID == st.Components.Job.ID,
		LastState:      flinkcluster.LastStateOffer{Available: ls.ok, Checkpoint: ls.checkpoint, NewerSavepoint: ls.newerSavepoint, Why: ls.why},
		WaitBound:      in.opts.WaitBound,
	}
	for _, p := range in.mayLeadPods() {
		obs.MayRunOn = append(obs.MayRunOn, p.Name)
	}
	for i := range in.obs.pods {
		obs.PodMayLead = obs.PodMayLead || state.MayLead(&in.obs.pods[i], in.obs.ha.leader, in.now)
	}
	if f := in.obs.flink; f != nil {
		obs.FlinkAnswered = true
		if f.Job != nil {
			obs.FlinkJobState = f.Job.State
		}
	}
	if cond := meta.FindStatusCondition(st.Conditions, ConditionUpdating); cond != nil && cond.Status == metav1.ConditionTrue {
		obs.UpdatingSince = cond.LastTransitionTime.Time
	}
	return obs
}

// checkpointTimes reads the trigger times of the newest completed checkpoint and of the one in
// progress, as the Flink Kubernetes operator measures a checkpoint's age.
func (c *cycle) checkpointTimes(ctx context.Context, jobID string) *flinkcluster.CheckpointTimes {
	cl, err := c.flinkClient(ctx)
	if err != nil {
		return &flinkcluster.CheckpointTimes{Err: err}
	}
	callCtx, cancel := context.WithTimeout(ctx, flinkCallTimeout)
	defer cancel()
	cps, err := cl.GetCheckpoints(callCtx, jobID)
	if err != nil {
		return &flinkcluster.CheckpointTimes{Err: err}
	}
	var out flinkcluster.CheckpointTimes
	latest := cps.Latest.Completed
	if r := cps.Latest.Restored; r != nil && (latest == nil || r.ID > latest.ID) {
		// Flink hides the restored checkpoint's trigger time; its restore time says nothing of age.
		out.RestoredOnly = true
	} else if latest != nil {
		out.LatestCompleted = time.UnixMilli(latest.TriggerTimestamp)
	}
	if p := cps.InProgress(); p != nil {
		out.Pending = time.UnixMilli(p.TriggerTimestamp)
	}
	return &out
}

// lastStateUpdate replaces the JobManager, keeping the checkpoint store, and deploys last-state.
func lastStateUpdate(ctx context.Context, a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus, out *flowOut, why string) error {
	ready, err := replaceJobManager(ctx, a, in, out, true)
	if err != nil || !ready {
		return err
	}
	st.Revision.CurrentRevision = st.Revision.NextRevision
	return lastStateDeploy(ctx, a, in, st, out, why)
}

// lastStateDeploy deploys under the current job ID, with no savepoint: Flink restores its store.
func lastStateDeploy(ctx context.Context, a flowActs, in flowIn, st *v1beta1.FlinkClusterStatus, out *flowOut, why string) error {
	job := st.Components.Job
	ls := in.lastState(st)
	job.DeployTime, job.StartTime, job.CompletionTime = "", "", nil
	job.FinalSavepoint, job.FailureReasons, job.FromSavepoint, job.FromCheckpoint = false, nil, "", true
	if err := a.setJobState(state.EventLastStateRedeploy, "", "last-state redeploy", in.now); err != nil {
		return fmt.Errorf("recording the last-state redeploy: %w", err)
	}
	a.event(corev1.EventTypeNormal, ReasonLastStateRedeploy, "Deploy",
		"last-state (%s): deploying revision %s as job %s again, restoring its newest checkpoint %d from Flink's HA store",
		why, st.Revision.CurrentRevision, job.ID, ls.checkpoint)
	err := recordedFirst(in.read, st)
	if err == nil {
		if err := out.act(a.createJobManager(ctx, out)); err != nil {
			return fmt.Errorf("creating the last-state JobManager: %w", err)
		}
	}
	out.updateStepf(ConditionReasonDeployingNextRevision, "deploying revision %s as job %s, restoring checkpoint %d from Flink's HA store (last-state: %s)",
		st.Revision.CurrentRevision, job.ID, ls.checkpoint, why)
	return err
}

// removeJobGraphs removes the job graphs from the HA ConfigMaps and keeps the checkpoint stores
// and leader records, as the operator's deleteJobGraphInKubernetesHA; it reports whether none is
// left. An update that lost a race with a writer is tried again, never forced.
func (c *cycle) removeJobGraphs(ctx context.Context, out *flowOut) (bool, error) {
	// Read afresh: a JobManager may have written since; the observation stays as decided by.
	v, err := c.readHA(ctx, c.r.Reader)
	if err != nil {
		return false, err
	}
	var removed []string
	for i := range v.configMaps {
		cm := &v.configMaps[i]
		if cm.DeletionTimestamp != nil {
			continue
		}
		var keys []string
		for k := range cm.Data {
			if flinkha.IsJobGraphKey(k) {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			continue
		}
		edited := cm.DeepCopy()
		for _, k := range keys {
			delete(edited.Data, k)
		}
		// Of the version read: a JobManager that wrote meanwhile wins; the next reconcile retries.
		if err := c.r.Client.Update(ctx, edited); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				ctrl.LoggerFrom(ctx).V(1).Info("removing the job graphs lost a race; trying again", "configMap", cm.Name, "error", err.Error())
				out.lookAgain()
				return false, nil
			}
			return false, fmt.Errorf("removing the job graphs from HA ConfigMap %s: %w", cm.Name, err)
		}
		removed = append(removed, keys...)
	}
	if len(removed) > 0 {
		c.event(corev1.EventTypeNormal, ReasonHAConfigMapsDeleted, "Delete",
			"removed the job graphs %v from the HA ConfigMaps and kept the checkpoints, so that the next deploy restores the newest checkpoint with the new spec", removed)
	}
	if v, err = c.readHA(ctx, c.r.Reader); err != nil {
		return false, err
	}
	return len(v.allJobGraphs()) == 0, nil
}

// allJobGraphs lists the job IDs whose graphs any HA ConfigMap of the view stores.
func (v haView) allJobGraphs() []string {
	var ids []string
	for i := range v.configMaps {
		ids = append(ids, flinkha.JobGraphs(&v.configMaps[i])...)
	}
	return ids
}

// recoverableFromHA reports whether a job past its Lost timeout can still resume from HA (not
// ended by the timeout): no leader answers (a crash loop, a pod not pulled) and its graph or
// checkpoints are kept, for its JobManager or a last-state update. Stateless chose no state.
func (c *cycle) recoverableFromHA() (bool, string) {
	job := c.job()
	if job.ID == "" || !flinkcluster.KeepsState(c.fc.Spec.Job) || !flinkcluster.LastStateSupported(&c.fc.Spec) {
		return false, ""
	}
	if c.obs.flink != nil {
		// A leader that answers without the job had its chance: waiting brings nothing back.
		return false, ""
	}
	if c.obs.ha.jobGraphStored(job.ID) {
		return true, fmt.Sprintf("its job graph is kept in Flink's HA store: its JobManager recovers it when it starts again, and an update redeploys it from its newest checkpoint (last-state)")
	}
	if ls := c.flowIn().lastState(c.st); ls.ok {
		return true, fmt.Sprintf("its checkpoint %d is kept in Flink's HA store: an update redeploys it from there (last-state)", ls.checkpoint)
	}
	return false, ""
}

// keepRecoverableLostJob keeps a job that can resume from HA Lost, its condition saying why and
// what resumes it, instead of afterJobFails applying.
func (c *cycle) keepRecoverableLostJob() {
	if !c.derived.lostTimedOut {
		return
	}
	if l := meta.FindStatusCondition(c.st.Conditions, ConditionLost); l != nil && l.Status == metav1.ConditionTrue && l.Reason == ConditionReasonLostTimeout {
		// The timeout was applied (afterJobFails under way): its cleanup is not undone.
		return
	}
	ok, how := c.recoverableFromHA()
	if !ok {
		return
	}
	c.derived.lostTimedOut = false
	note := fmt.Sprintf("job %s not reported again within %s, but %s; afterJobFails does not apply", c.job().ID, c.r.Options.LostTimeout, how)
	if c.setCondition(condition(ConditionLost, metav1.ConditionTrue, ConditionReasonLostRecoverable, note)) {
		c.event(corev1.EventTypeWarning, ReasonJobLost, "Recover", "%s", note)
	}
}

// noteSavepointCheckpointID learns the recorded savepoint's checkpoint ID, which lastState
// compares stored checkpoints with; a failed read leaves it unknown (0).
func (c *cycle) noteSavepointCheckpointID(ctx context.Context) {
	job := c.job()
	if job.SavepointCheckpointID != 0 || !savepointOfCurrentJob(c.st) || !flinkcluster.LastStateSupported(&c.fc.Spec) {
		return
	}
	cl, err := c.flinkClient(ctx)
	if err != nil {
		return
	}
	callCtx, cancel := context.WithTimeout(ctx, flinkCallTimeout)
	defer cancel()
	cps, err := cl.GetCheckpoints(callCtx, job.ID)
	if err != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("reading the savepoint's checkpoint ID", "error", err.Error())
		return
	}
	if l := cps.LatestSavepoint(); l != nil && l.ExternalPath == job.SavepointLocation {
		job.SavepointCheckpointID = l.ID
	}
}

// savepointOfCurrentJob reports whether the history records the last savepoint of this job ID.
func savepointOfCurrentJob(st *v1beta1.FlinkClusterStatus) bool {
	job := st.Components.Job
	if job.SavepointLocation == "" || job.ID == "" {
		return false
	}
	for _, r := range st.SavepointHistory {
		if r.Location == job.SavepointLocation && r.JobID == job.ID {
			return true
		}
	}
	return false
}

// mayLeadPods are the JobManager pods that may still run the job (state.MayLead) with a running
// container, or being deleted. One whose container does not run (a crash loop's back-off, an
// image not pulled) runs nothing, even while its dead process's lease lasts.
func (in flowIn) mayLeadPods() []corev1.Pod {
	var out []corev1.Pod
	for i := range in.obs.pods {
		p := &in.obs.pods[i]
		if !state.MayLead(p, in.obs.ha.leader, in.now) {
			continue
		}
		running := false
		for _, cs := range p.Status.ContainerStatuses {
			running = running || cs.State.Running != nil
		}
		// One being deleted may run on where the kubelet cannot be asked (a lost node).
		if running || state.Deleting(p) {
			out = append(out, *p)
		}
	}
	return out
}
