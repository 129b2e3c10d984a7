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

// Last-state redeploys (spec.job.upgradeMode, after the Flink Kubernetes operator's
// UpgradeMode.LAST_STATE): the checkpoint store in Flink's Kubernetes HA ConfigMaps is kept,
// only the job graph is removed, and the next deploy runs under the same job ID, so that its
// JobMaster finds the job's checkpoint store and restores the newest completed checkpoint with
// the new spec (Flink restores the checkpoint store before any savepoint path). The controller
// reads only the store's keys (checkpoint IDs): the values are Flink's serialized handles.

// lastStateView is what Flink's HA store offers a last-state redeploy of the current job.
type lastStateView struct {
	// ok: the store holds a checkpoint of the job that is newer than its savepoints.
	ok bool
	// checkpoint is the newest checkpoint ID stored.
	checkpoint int64
	// newerSavepoint: the job's last savepoint is newer than every stored checkpoint, so it,
	// not the store, holds the newest state.
	newerSavepoint bool
	// why says why ok is false.
	why string
}

// lastState reads what a last-state redeploy of the current job would restore. Savepoints
// and checkpoints of a job take their IDs from the same counter (CheckpointIDCounter), so
// the job's last savepoint is compared by its checkpoint ID; one whose ID is unknown may be
// newer than the store, and makes last-state unavailable.
func (c *cycle) lastState() lastStateView {
	job := c.job()
	clusterID := resources.HAClusterID(c.fc)
	switch {
	case !flinkcluster.LastStateSupported(&c.fc.Spec):
		return lastStateView{why: "last-state needs a JobManager Deployment with Flink's Kubernetes HA"}
	case job.ID == "":
		return lastStateView{why: "no job was deployed"}
	}
	var ids []int64
	for i := range c.obs.ha.configMaps {
		if cm := &c.obs.ha.configMaps[i]; cm.Name == flinkha.JobConfigMapName(clusterID, job.ID) && cm.DeletionTimestamp == nil {
			ids = flinkha.CheckpointIDs(cm)
		}
	}
	if len(ids) == 0 {
		return lastStateView{why: fmt.Sprintf("Flink's HA store holds no completed checkpoint of job %s (ConfigMap %s)",
			job.ID, flinkha.JobConfigMapName(clusterID, job.ID))}
	}
	newest := ids[len(ids)-1]
	v := lastStateView{checkpoint: newest}
	if sp := c.st.Savepoint; sp != nil && sp.JobID == job.ID && sp.TriggerTime != "" &&
		sp.State != SavepointStateSucceeded && sp.State != SavepointStateFailed {
		// A savepoint triggered and not known to have failed may have completed after the
		// newest stored checkpoint.
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
	case sp == 0 && c.savepointOfCurrentJob():
		// A savepoint of this job ID whose checkpoint ID was not learnt. (One of an earlier
		// job ID is older than this job's checkpoints: the job started from it or later.)
		// Judged by the savepoint history, not the savepoint record, which a later trigger
		// (an update's failed stop) replaces.
		v.why = fmt.Sprintf("the checkpoint ID of savepoint %s is unknown: it may be newer than the stored checkpoint %d", job.SavepointLocation, newest)
	default:
		v.ok = true
	}
	return v
}

// planUpdate decides how this update carries the job's state: flinkcluster.PlanUpgrade on
// this reconcile's observation. The checkpoint statistics are read only when the decision
// needs them: last-state under a max checkpoint age, the job running.
func (c *cycle) planUpdate(ctx context.Context) flinkcluster.Upgrade {
	obs := c.upgradeObservation()
	if flinkcluster.NeedsCheckpointTimes(&c.fc.Spec, obs) {
		obs.Checkpoints = c.checkpointTimes(ctx, c.job().ID)
	}
	u := flinkcluster.PlanUpgrade(&c.fc.Spec, c.st, obs, c.now)
	if u.Refused && c.job().State != v1beta1.JobStateUpdating {
		c.event(corev1.EventTypeNormal, ReasonLastStateRefused, "Update", "job %s: %s", c.job().ID, u.Why)
	}
	return u
}

// upgradeObservation is what this reconcile observed, as the upgrade decision reads it.
func (c *cycle) upgradeObservation() flinkcluster.UpgradeObservation {
	ls := c.lastState()
	obs := flinkcluster.UpgradeObservation{
		RestoreChoice: c.restoreChoice(),
		StopInFlight:  c.stopInFlight(SavepointReasonUpdate),
		MayStillRun:   c.obs.flink == nil && len(c.mayLeadPods()) > 0,
		LastState:     flinkcluster.LastStateOffer{Available: ls.ok, Checkpoint: ls.checkpoint, Why: ls.why},
	}
	if f := c.obs.flink; f != nil {
		obs.FlinkAnswered = true
		if f.Job != nil {
			obs.FlinkJobState = f.Job.State
		}
	}
	return obs
}

// checkpointTimes reads the trigger times of the running job's newest completed checkpoint
// and of the one in progress from Flink's checkpoint statistics, as the Flink Kubernetes
// operator measures a checkpoint's age; a job that completed none since its restore says so.
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
		// Nothing completed since the restore: the restored checkpoint's trigger time is not
		// reported, and its restore time says nothing of the state's age.
		out.RestoredOnly = true
	} else if latest != nil {
		out.LatestCompleted = time.UnixMilli(latest.TriggerTimestamp)
	}
	if p := cps.InProgress(); p != nil {
		out.Pending = time.UnixMilli(p.TriggerTimestamp)
	}
	return &out
}

// lastStateUpdate replaces the JobManager keeping the checkpoint store and deploys the next
// revision under the same job ID.
func (c *cycle) lastStateUpdate(ctx context.Context, why string) error {
	ready, err := c.replaceJobManager(ctx, true)
	if err != nil || !ready {
		return err
	}
	c.st.Revision.CurrentRevision = c.st.Revision.NextRevision
	return c.lastStateDeploy(ctx, why)
}

// lastStateDeploy creates the JobManager of the current revision under the current job ID,
// with no savepoint: the JobMaster restores the newest checkpoint of the job's store.
func (c *cycle) lastStateDeploy(ctx context.Context, why string) error {
	job := c.job()
	ls := c.lastState()
	job.DeployTime, job.StartTime, job.CompletionTime = "", "", nil
	job.FinalSavepoint, job.FailureReasons, job.FromSavepoint, job.FromCheckpoint = false, nil, "", true
	if err := c.setJobState(state.EventLastStateRedeploy, "", "last-state redeploy", c.now); err != nil {
		return fmt.Errorf("recording the last-state redeploy: %w", err)
	}
	c.event(corev1.EventTypeNormal, ReasonLastStateRedeploy, "Deploy",
		"last-state (%s): deploying revision %s as job %s again, restoring its newest checkpoint %d from Flink's HA store",
		why, c.st.Revision.CurrentRevision, job.ID, ls.checkpoint)
	err := c.recordedBeforeActing()
	if err == nil {
		if err := c.act(c.createJobManager(ctx)); err != nil {
			return fmt.Errorf("creating the last-state JobManager: %w", err)
		}
	}
	c.updateStepf(ConditionReasonDeployingNextRevision, "deploying revision %s as job %s, restoring checkpoint %d from Flink's HA store (last-state: %s)",
		c.st.Revision.CurrentRevision, job.ID, ls.checkpoint, why)
	return err
}

// removeJobGraphs removes the job graph entries from the cluster ConfigMap and keeps the
// rest (the job ConfigMaps with the checkpoint stores, the leader records), as the Flink
// Kubernetes operator's FlinkUtils.deleteJobGraphInKubernetesHA does. It reports whether no
// job graph is left; an update that lost a race with a writer is tried again on the next
// reconcile, never forced.
func (c *cycle) removeJobGraphs(ctx context.Context) (bool, error) {
	// Read afresh, not from the observation: a JobManager may have written since, and the
	// observation stays what this reconcile decided by.
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
		// An update of the version read: a JobManager that wrote meanwhile wins, and the
		// next reconcile looks again.
		if err := c.r.Client.Update(ctx, edited); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				ctrl.LoggerFrom(ctx).V(1).Info("removing the job graphs lost a race; trying again", "configMap", cm.Name, "error", err.Error())
				c.poll()
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

// recoverableFromHA reports whether a job past its Lost timeout can still resume from HA:
// with Kubernetes HA and a JobManager Deployment, no leading JobManager answers (a crash
// loop, a pod that cannot be created or pulled) and the job's graph or checkpoint store is
// kept, so that its JobManager recovers it once it starts again,
// and an update redeploys it last-state. Such a job is not ended by the Lost timeout
// (upgradeMode stateless excepted: it chose no state).
func (c *cycle) recoverableFromHA() (bool, string) {
	job := c.job()
	if job.ID == "" || !flinkcluster.KeepsState(c.fc.Spec.Job) || !flinkcluster.LastStateSupported(&c.fc.Spec) {
		return false, ""
	}
	if c.obs.flink != nil {
		// A leader answers and does not list the job: it had its chance to recover it, and
		// waiting longer brings nothing back.
		return false, ""
	}
	if c.obs.ha.jobGraphStored(job.ID) {
		return true, fmt.Sprintf("its job graph is kept in Flink's HA store: its JobManager recovers it when it starts again, and an update redeploys it from its newest checkpoint (last-state)")
	}
	if ls := c.lastState(); ls.ok {
		return true, fmt.Sprintf("its checkpoint %d is kept in Flink's HA store: an update redeploys it from there (last-state)", ls.checkpoint)
	}
	return false, ""
}

// keepRecoverableLostJob stops the Lost timeout from ending a job that can resume from HA
// (recoverableFromHA): the job stays Lost, with the Lost condition saying why and what
// resumes it, instead of afterJobFails applying.
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

// noteSavepointCheckpointID learns the checkpoint ID of a savepoint recorded in this
// reconcile (or recorded earlier without one) from the job's checkpoint statistics: what
// lastState compares stored checkpoints with. A failed read leaves it unknown (0).
func (c *cycle) noteSavepointCheckpointID(ctx context.Context) {
	job := c.job()
	if job.SavepointCheckpointID != 0 || !c.savepointOfCurrentJob() || !flinkcluster.LastStateSupported(&c.fc.Spec) {
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

// savepointOfCurrentJob reports whether the job's last savepoint (status.components.job's
// savepointLocation) was taken of the current job ID, as the savepoint history records it.
func (c *cycle) savepointOfCurrentJob() bool {
	job := c.job()
	if job.SavepointLocation == "" || job.ID == "" {
		return false
	}
	for _, r := range c.st.SavepointHistory {
		if r.Location == job.SavepointLocation && r.JobID == job.ID {
			return true
		}
	}
	return false
}

// mayLeadPods are the JobManager pods that may still run the job: a pod whose container runs
// (it may lead, or be about to), or one being deleted that may still lead (state.MayLead: the
// HA leader, or within the lease grace while nobody is known to lead). A pod whose container
// does not run (a crash loop's back-off, an image that cannot be pulled) runs nothing, even
// while its dead process's lease lasts.
func (c *cycle) mayLeadPods() []corev1.Pod {
	var out []corev1.Pod
	for i := range c.obs.pods {
		p := &c.obs.pods[i]
		if !state.MayLead(p, c.obs.ha.leader, c.now) {
			continue
		}
		running := false
		for _, cs := range p.Status.ContainerStatuses {
			running = running || cs.State.Running != nil
		}
		// A lease holder whose container does not run is dead (its lease outlives it); one
		// being deleted may run on where the kubelet cannot be asked (a lost node).
		if running || state.Deleting(p) {
			out = append(out, *p)
		}
	}
	return out
}
