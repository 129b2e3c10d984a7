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
	// configMaps are the cluster ID's HA ConfigMaps, read from the API server.
	configMaps []corev1.ConfigMap
	// leader is the JobManager the HA leader information names.
	leader state.Leader
	// dispatcherHost is the leading pod's IP (-Djobmanager.rpc.address), even when rest.address
	// names something else.
	dispatcherHost string
}

// jobGraphStored reports whether a JobManager with the cluster ID would recover the job from HA.
func (v haView) jobGraphStored(jobID string) bool {
	for i := range v.configMaps {
		if slices.Contains(flinkha.JobGraphs(&v.configMaps[i]), jobID) {
			return true
		}
	}
	return false
}

// endedInHA says what in the HA ConfigMaps shows that the current job ended globally; "" when
// nothing does. Flink removes a job's graph and checkpoint ConfigMap only then; someone who
// deletes the HA ConfigMaps deletes the cluster ConfigMap too, which the running JobManager
// recreates after its container started: the cluster ConfigMap must be older.
func (c *cycle) endedInHA() string {
	g, ok := c.jobHAGone()
	if !ok || !g.cluster.CreationTimestamp.Time.Before(g.started) {
		return ""
	}
	return fmt.Sprintf("Flink removed its job graph and checkpoint ConfigMap %s from HA, which it does once a job ended globally, while ConfigMap %s (created %s, before JobManager pod %s started at %s) was kept",
		g.jobConfigMap, g.cluster.Name, g.cluster.CreationTimestamp.UTC().Format(time.RFC3339), c.obs.pod.Name, g.started.UTC().Format(time.RFC3339))
}

type jobHAGoneView struct {
	cluster      *corev1.ConfigMap
	jobConfigMap string
	started      time.Time
}

// jobHAGone reads the evidence endedInHA and haMetadataGone tell apart: Kubernetes HA holds
// neither the job's graph nor its checkpoint ConfigMap, while the cluster ConfigMap exists.
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

// haMetadataGone says why the current job's HA metadata was deleted behind it, "" when nothing
// says so: endedInHA's other half, a cluster ConfigMap created after the JobManager container
// started, so by it. Both times are in whole seconds: one created in the same second says nothing.
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

// leaseGrace is how long a JobManager pod being deleted may still hold the HA lease. A lease
// duration Flink could not read falls back to the default: the JobManager would not start.
func leaseGrace(fc *v1beta1.FlinkCluster) time.Duration {
	lease, err := flinkha.LeaseDuration(fc.Spec.FlinkProperties)
	if err != nil {
		return state.LeaseGrace
	}
	return state.LeaseGraceFor(lease)
}

// kubernetesHA reports whether the cluster runs Flink's Kubernetes HA, whose metadata the
// controller reads and deletes (other HA: see unsupportedHA).
func (c *cycle) kubernetesHA() bool {
	return flinkcluster.KubernetesHA(c.fc.Spec.FlinkProperties)
}

// unsupportedHA reports whether a Deployment cluster runs HA the controller cannot check.
func (c *cycle) unsupportedHA() bool {
	return c.mode == v1beta1.JobManagerDeploymentTypeDeployment && flinkcluster.HAEnabled(c.fc.Spec.FlinkProperties) && !c.kubernetesHA()
}

// noteUnsupportedHA says on DeploymentFailed that the controller cannot see this Deployment
// cluster's HA metadata, so it neither checks recovery nor deletes old job graphs. A failure
// observed this reconcile keeps its own reason.
func (c *cycle) noteUnsupportedHA(context.Context) error {
	if !c.unsupportedHA() || c.derived.deploymentFailed {
		return nil
	}
	msg := fmt.Sprintf("deploymentType Deployment with high-availability.type %s: the controller reads and cleans up only Flink's Kubernetes HA ConfigMaps, so it cannot check that a restarted JobManager recovers job %s nor remove old job graphs before a new deploy; the job runs on (a JobManager started again without its HA data fails instead of starting empty). Recreate the cluster with high-availability.type kubernetes, or with deploymentType Job",
		flinkcluster.HAType(c.fc.Spec.FlinkProperties), c.jobID())
	if c.setCondition(condition(ConditionDeploymentFailed, metav1.ConditionTrue, ConditionReasonUnsupportedHA, msg)) {
		c.event(corev1.EventTypeWarning, ReasonUnsupportedHA, "Observe", "%s", msg)
	}
	return nil
}

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
	// Flink 2 labels its HA ConfigMaps with labels other Flink ConfigMaps carry too.
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

// haMetadataLost reports whether the HA metadata of the running job was deleted behind its
// JobManager: Flink reports it RUNNING with no job graph in HA. The next JobManager restart
// would run main() again from empty state, losing the acknowledged state without a word.
// A job submitted between this reconcile's HA read and its REST read is RUNNING with its graph
// just written, so the HA ConfigMaps are read again, then the job.
func (c *cycle) haMetadataLost(ctx context.Context) (bool, error) {
	job := c.job()
	if c.mode != v1beta1.JobManagerDeploymentTypeDeployment || !c.kubernetesHA() ||
		job.ID == "" || job.State != v1beta1.JobStateRunning || !flinkReportsRunning(c.obs) ||
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

// redeployWithoutHA answers haMetadataLost: the job is stopped with a savepoint and the current
// revision deployed again from it through the update flow, which deletes the HA ConfigMaps first
// and stops with SavepointRequired when no savepoint can be taken.
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

func redeployingWithoutHA(st *v1beta1.FlinkClusterStatus) bool {
	cond := meta.FindStatusCondition(st.Conditions, ConditionDeploymentFailed)
	return st.Components.Job.State == v1beta1.JobStateUpdating && cond != nil && cond.Status == metav1.ConditionTrue &&
		cond.Reason == ConditionReasonHAMetadataMissing
}

// deleteHAConfigMaps deletes the cluster's HA ConfigMaps and reports whether none is left.
// Nothing else removes them, and a new JobManager would recover an old job graph it finds,
// whatever its command line says.
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

// noteRestoreRefused answers a job that FAILED restoring ResumeFromHAOnly: its HA data was
// gone, so its JobManager ran main() again, and Flink failed it rather than start empty.
// SavepointRequired asks the user which savepoint to deploy it again from.
func (c *cycle) noteRestoreRefused(context.Context) error {
	job := c.job()
	if f := c.obs.flink; f == nil || !f.RestoreRefused || job.State != v1beta1.JobStateFailed {
		return nil
	}
	reason := fmt.Sprintf("the JobManager of job %s ran main() again without the job's HA metadata (no job graph in the ConfigMaps of cluster ID %s: deleted under the running JobManager?); the restore path %s made the job fail instead of starting from empty state",
		job.ID, resources.HAClusterID(c.fc), ResumeFromHAOnly)
	if c.setCondition(condition(ConditionDeploymentFailed, metav1.ConditionTrue, ConditionReasonHAMetadataMissing, reason)) {
		c.event(corev1.EventTypeWarning, ReasonHAMetadataMissing, "Observe", "%s", reason)
	}
	c.out.requireSavepoint(ConditionReasonHAMetadataMissing, "%s", reason)
	return nil
}
