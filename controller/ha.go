package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// haView is what the controller read of the cluster's Flink HA ConfigMaps.
type haView struct {
	// configMaps are the HA ConfigMaps of the cluster ID (leader election, job graphs,
	// checkpoints), read from the API server.
	configMaps []corev1.ConfigMap
	// leader is the JobManager the HA leader information names.
	leader state.Leader
	// dispatcherHost is the host of the dispatcher leader's RPC address: the leading pod's IP
	// (-Djobmanager.rpc.address) even when rest.address makes the REST leader address name something else.
	dispatcherHost string
}

// jobGraphStored reports whether a JobManager with the cluster ID would recover the job from
// HA: its job graph (execution plan) is in the HA store.
func (v haView) jobGraphStored(jobID string) bool {
	for i := range v.configMaps {
		if slices.Contains(flinkha.JobGraphs(&v.configMaps[i]), jobID) {
			return true
		}
	}
	return false
}

// endedInHA says what, in the cluster's Kubernetes HA ConfigMaps, shows that the current
// deploy's job ended globally; "" when nothing does (state.Input.EndedInHA; the rule in
// package state decides when it counts: past the HA recovery grace, for a job that ran, not
// listed by the leading JobManager).
//
// Flink removes a job's graph (the cluster ConfigMap's executionPlan-/jobGraph- key) and its
// checkpoint ConfigMap <cluster-id>-<job-id>-config-map only when the job ended globally
// (FINISHED, FAILED, CANCELED: the Dispatcher's cleanup of a job with a result in the job
// result store, KubernetesHaServices' job cleanup); a running, suspended or restarting job
// keeps both, and a JobManager that starts recovers every graph it finds. Both could also be
// gone because someone deleted the HA ConfigMaps; then the leader's election ConfigMap went
// too and the JobManager that runs now created it again after it started (Flink's leader
// election driver exits when its ConfigMap is deleted). So the cluster ConfigMap must be
// older than the JobManager's current container: the HA data the job's end left.
func (c *cycle) endedInHA() string {
	g, ok := c.jobHAGone()
	if !ok || !g.cluster.CreationTimestamp.Time.Before(g.started) {
		return ""
	}
	return fmt.Sprintf("Flink removed its job graph and checkpoint ConfigMap %s from HA, which it does once a job ended globally, while ConfigMap %s (created %s, before JobManager pod %s started at %s) was kept",
		g.jobConfigMap, g.cluster.Name, g.cluster.CreationTimestamp.UTC().Format(time.RFC3339), c.obs.pod.Name, g.started.UTC().Format(time.RFC3339))
}

// jobHAGoneView is what jobHAGone read.
type jobHAGoneView struct {
	// cluster is the cluster ConfigMap, not being deleted.
	cluster *corev1.ConfigMap
	// jobConfigMap is the name of the job's checkpoint ConfigMap, which is gone.
	jobConfigMap string
	// started is when the selected JobManager pod's current container started.
	started time.Time
}

// jobHAGone reads the evidence endedInHA and haMetadataGone tell apart: with Kubernetes HA
// and a selected JobManager pod, the HA store holds neither the current job's graph nor its
// checkpoint ConfigMap, while the cluster ConfigMap exists. ok is false otherwise.
func (c *cycle) jobHAGone() (jobHAGoneView, bool) {
	pod, id := c.obs.pod, c.jobID()
	if !c.kubernetesHA() || pod == nil || id == "" || c.obs.ha.jobGraphStored(id) {
		return jobHAGoneView{}, false
	}
	clusterID := resources.HAClusterID(c.fc)
	v := jobHAGoneView{jobConfigMap: flinkha.JobConfigMapName(clusterID, id), started: state.StartTime(pod)}
	for i := range c.obs.ha.configMaps {
		switch cm := &c.obs.ha.configMaps[i]; cm.Name {
		case v.jobConfigMap:
			return jobHAGoneView{}, false
		case flinkha.ClusterConfigMapName(clusterID):
			v.cluster = cm
		}
	}
	if v.cluster == nil || v.cluster.DeletionTimestamp != nil {
		return jobHAGoneView{}, false
	}
	return v, true
}

// haMetadataGone says why the HA metadata of the current job was deleted behind it, "" when
// nothing says so: in Deployment mode with Kubernetes HA, the HA store holds neither the
// job's graph nor its checkpoint ConfigMap, and the cluster ConfigMap was created after the
// selected JobManager container started — by that container, so the one before it lost its
// ConfigMaps. It is endedInHA's other half: a job that ended globally loses its graph and
// checkpoint ConfigMap too, but keeps the cluster ConfigMap from before the container. Both
// times are the cluster's (the API server's and the kubelet's), in whole seconds: one
// created in the second the container started says nothing. Whether the job ran is the
// rule's to check (state.Input.HAMetadataGone).
func (c *cycle) haMetadataGone() string {
	if c.mode != v1beta1.JobManagerDeploymentTypeDeployment {
		return ""
	}
	g, ok := c.jobHAGone()
	if !ok || !g.cluster.CreationTimestamp.Time.After(g.started) {
		return ""
	}
	return fmt.Sprintf("Flink's HA store holds neither the graph nor the checkpoint ConfigMap %s of job %s, and ConfigMap %s was created at %s, after JobManager pod %s's container started at %s: the HA ConfigMaps were deleted behind the job",
		g.jobConfigMap, c.jobID(), g.cluster.Name, g.cluster.CreationTimestamp.UTC().Format(time.RFC3339), c.obs.pod.Name, g.started.UTC().Format(time.RFC3339))
}

// leaderOf reads the leader from the cluster ConfigMap: known only while its lease runs.
func leaderOf(cm *corev1.ConfigMap, clusterID string, now time.Time) state.Leader {
	if cm.Name != flinkha.ClusterConfigMapName(clusterID) {
		return state.Leader{}
	}
	l, ok := flinkha.Leader(cm)
	if !ok || l.Expired(now) || l.Host() == "" {
		return state.Leader{}
	}
	return state.Leader{Known: true, Address: l.Host()}
}

// leaseGrace is how long a JobManager pod being deleted may still hold the HA lease, from
// the cluster's configured lease duration (state.LeaseGraceFor). A lease duration Flink
// could not read either falls back to the default grace: the JobManager would not start.
func leaseGrace(fc *v1beta1.FlinkCluster) time.Duration {
	lease, err := flinkha.LeaseDuration(fc.Spec.FlinkProperties)
	if err != nil {
		return state.LeaseGrace
	}
	return state.LeaseGraceFor(lease)
}

// kubernetesHA reports whether the cluster runs Flink's Kubernetes HA services, whose
// metadata the controller reads and deletes. A Deployment cluster with other HA services
// (ZooKeeper, a factory class: denied by the webhook and the CRD since issue 17, but stored
// before) is not HA-checked: see unsupportedHA.
func (c *cycle) kubernetesHA() bool {
	return flinkcluster.KubernetesHA(c.fc.Spec.FlinkProperties)
}

// unsupportedHA reports whether the cluster is a Deployment cluster with HA services the
// controller cannot check (rule deployment-requires-kubernetes-ha).
func (c *cycle) unsupportedHA() bool {
	return c.mode == v1beta1.JobManagerDeploymentTypeDeployment && flinkcluster.HAEnabled(c.fc.Spec.FlinkProperties) && !c.kubernetesHA()
}

// noteUnsupportedHA says, on DeploymentFailed (reason UnsupportedHA), that the controller
// runs a Deployment cluster whose HA metadata it cannot see: it keeps the job running and
// deploys updates, but it neither checks that a restarted JobManager recovers the job
// (haMetadataLost, resume) nor deletes old job graphs before a new deploy. A failure the
// observation found this reconcile (a crash loop) keeps its own reason.
func (c *cycle) noteUnsupportedHA() {
	if !c.unsupportedHA() {
		return
	}
	if c.derived.deploymentFailed {
		return
	}
	msg := fmt.Sprintf("deploymentType Deployment with high-availability.type %s: the controller reads and cleans up only Flink's Kubernetes HA ConfigMaps, so it cannot check that a restarted JobManager recovers job %s nor remove old job graphs before a new deploy; the job runs on (a JobManager started again without its HA data fails instead of starting empty). Recreate the cluster with high-availability.type kubernetes, or with deploymentType Job",
		flinkcluster.HAType(c.fc.Spec.FlinkProperties), c.jobID())
	if c.setCondition(condition(ConditionDeploymentFailed, metav1.ConditionTrue, ConditionReasonUnsupportedHA, msg)) {
		c.event(corev1.EventTypeWarning, ReasonUnsupportedHA, "Observe", "%s", msg)
	}
}

// haConfigMapSelector selects the HA ConfigMaps Flink's Kubernetes HA services create for a
// cluster ID.
func haConfigMapSelector(fc *v1beta1.FlinkCluster) client.MatchingLabels {
	return client.MatchingLabels(flinkha.Labels(resources.HAClusterID(fc)))
}

// readHA reads the HA ConfigMaps from from and the leader they name. The checks that confirm
// a graph gone (before a job is declared to have lost its HA data, before a deploy that
// needs the old data removed) read from the API server: a stale list could claim that the
// old job graph is gone before it is.
func (c *cycle) readHA(ctx context.Context, from client.Reader) (haView, error) {
	list := &corev1.ConfigMapList{}
	if err := from.List(ctx, list, client.InNamespace(c.fc.Namespace), haConfigMapSelector(c.fc)); err != nil {
		return haView{}, fmt.Errorf("listing HA ConfigMaps: %w", err)
	}
	// Flink 2 labels its HA ConfigMaps with its common labels alone, which other Flink
	// ConfigMaps carry too: keep those named as HA ConfigMaps.
	list.Items = slices.DeleteFunc(list.Items, func(cm corev1.ConfigMap) bool {
		return !flinkha.IsHAConfigMap(&cm, resources.HAClusterID(c.fc))
	})
	v := haView{configMaps: list.Items, leader: state.Leader{Grace: leaseGrace(c.fc)}}
	for i := range list.Items {
		if l := leaderOf(&list.Items[i], resources.HAClusterID(c.fc), c.now); l.Known {
			l.Grace = v.leader.Grace
			v.leader = l
			v.dispatcherHost = flinkha.DispatcherHost(&list.Items[i])
		}
	}
	return v, nil
}

// haMetadataLost reports whether the HA metadata of the current deploy's running job was
// deleted behind its JobManager (a user's or a namespace cleanup's kubectl delete): Flink
// reports the job RUNNING while its job graph is in none of the cluster ID's HA ConfigMaps.
// The job runs on, but the next restart of its JobManager container would find nothing to
// recover and run main() again from empty state (or the deploy's savepoint): the state
// acknowledged since would be lost without a word.
//
// Flink stores a job's graph before it lists the job and removes it only once the job ended,
// but this reconcile read the HA ConfigMaps before the REST API: a job submitted in between
// is RUNNING with its graph just written. So a missing graph is confirmed by reading the HA
// ConfigMaps again, then the job: still RUNNING after a read without its graph means the
// graph was deleted.
func (c *cycle) haMetadataLost(ctx context.Context) (bool, error) {
	job := c.job()
	if c.mode != v1beta1.JobManagerDeploymentTypeDeployment || !c.kubernetesHA() ||
		job.ID == "" || job.State != v1beta1.JobStateRunning || !c.flinkReportsRunning() ||
		c.obs.wl == nil || c.obs.wl.Deleting || c.obs.ha.jobGraphStored(job.ID) {
		return false, nil
	}
	again, err := c.readHA(ctx, c.r.Reader)
	if err != nil || again.jobGraphStored(job.ID) {
		return false, err
	}
	cl, err := c.flinkClient(ctx)
	if err != nil {
		return false, err
	}
	callCtx, cancel := context.WithTimeout(ctx, flinkCallTimeout)
	defer cancel()
	j, err := cl.GetJob(callCtx, job.ID)
	if err != nil {
		// Not confirmed: the next reconcile looks again.
		ctrl.LoggerFrom(ctx).V(1).Info("confirming the job's state after its HA job graph was not found", "error", err.Error())
		c.poll()
		return false, nil
	}
	return j.State == flinkclient.JobStateRunning, nil
}

// redeployWithoutHA answers HA metadata deleted behind a running job (haMetadataLost): the
// job is stopped with a savepoint and the current revision deployed again from it, under a
// new job ID, through the update flow — which deletes what is left of the HA ConfigMaps
// first, and stops with SavepointRequired when the savepoint cannot be taken. Until the new
// deploy runs, DeploymentFailed says why (reason HAMetadataMissing), with a Warning Event.
func (c *cycle) redeployWithoutHA() error {
	job := c.job()
	reason := fmt.Sprintf("the HA metadata of running job %s is gone (no job graph in the ConfigMaps of cluster ID %s): a restart of its JobManager would run main() again from empty state; stopping the job with a savepoint to deploy revision %s again from it",
		job.ID, resources.HAClusterID(c.fc), c.st.Revision.CurrentRevision)
	c.setCondition(condition(ConditionDeploymentFailed, metav1.ConditionTrue, ConditionReasonHAMetadataMissing, reason))
	c.event(corev1.EventTypeWarning, ReasonHAMetadataMissing, "Redeploy", "%s", reason)
	if ctl := c.st.Control; controlInFlight(ctl) && ctl.Name == v1beta1.ControlNameSavepoint {
		c.controlDone(v1beta1.ControlStateFailed, "superseded by a redeploy: the job's HA metadata is gone")
	}
	if err := c.setJobState(state.EventHAMetadataGone, "", "its HA metadata is gone", c.now); err != nil {
		return err
	}
	c.requestSavepoint(SavepointReasonUpdate)
	return nil
}

// redeployingWithoutHA reports whether the update in progress is redeployWithoutHA's.
func (c *cycle) redeployingWithoutHA() bool {
	cond := meta.FindStatusCondition(c.st.Conditions, ConditionDeploymentFailed)
	return c.job().State == v1beta1.JobStateUpdating && cond != nil && cond.Status == metav1.ConditionTrue &&
		cond.Reason == ConditionReasonHAMetadataMissing
}

// deleteHAConfigMaps deletes the cluster's HA ConfigMaps and reports whether none was left.
// Flink does not own them to the FlinkCluster, so nothing else removes them; a new deploy
// must not find the old job graph (the new JobManager would recover it, whatever its command
// line says).
func (c *cycle) deleteHAConfigMaps(ctx context.Context) (bool, error) {
	// Read afresh, not from the observation: a JobManager may have written since, and the
	// observation stays what this reconcile decided by.
	v, err := c.readHA(ctx, c.r.Reader)
	if err != nil {
		return false, err
	}
	if len(v.configMaps) == 0 {
		return true, nil
	}
	names := make([]string, 0, len(v.configMaps))
	for i := range v.configMaps {
		cm := &v.configMaps[i]
		if err := c.r.Client.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("deleting HA ConfigMap %s: %w", cm.Name, err)
		}
		names = append(names, cm.Name)
	}
	c.event(corev1.EventTypeNormal, ReasonHAConfigMapsDeleted, "Delete", "deleted the HA ConfigMaps %v so that the next deploy cannot recover the old job graph", names)
	if v, err = c.readHA(ctx, c.r.Reader); err != nil {
		return false, err
	}
	return len(v.configMaps) == 0, nil
}

// noteRestoreRefused answers a job that FAILED restoring ResumeFromHAOnly: its JobManager
// ran main() again because the HA data of the job was gone (deleted under the running
// JobManager, which then exits: Flink's leader election driver treats its ConfigMap deleted
// externally as a fatal error). Flink did not start the job from empty state; the job is
// Failed, DeploymentFailed says why (reason HAMetadataMissing) and SavepointRequired asks
// the user which savepoint to deploy it again from.
func (c *cycle) noteRestoreRefused() {
	job := c.job()
	if f := c.obs.flink; f == nil || !f.RestoreRefused || job.State != v1beta1.JobStateFailed {
		return
	}
	reason := fmt.Sprintf("the JobManager of job %s ran main() again without the job's HA metadata (no job graph in the ConfigMaps of cluster ID %s: deleted under the running JobManager?); the restore path %s made the job fail instead of starting from empty state",
		job.ID, resources.HAClusterID(c.fc), ResumeFromHAOnly)
	if c.setCondition(condition(ConditionDeploymentFailed, metav1.ConditionTrue, ConditionReasonHAMetadataMissing, reason)) {
		c.event(corev1.EventTypeWarning, ReasonHAMetadataMissing, "Observe", "%s", reason)
	}
	c.requireSavepoint(ConditionReasonHAMetadataMissing, "%s", reason)
}
