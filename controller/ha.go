package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/state"
)

// haView is what the controller read of the cluster's Flink HA ConfigMaps.
type haView struct {
	// configMaps are the HA ConfigMaps of the cluster ID (leader election, job graphs,
	// checkpoints), read from the API server.
	configMaps []corev1.ConfigMap
	// leader is the JobManager the HA leader information names.
	leader state.Leader
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

// haConfigMapSelector selects the HA ConfigMaps Flink's Kubernetes HA services create for a
// cluster ID.
func haConfigMapSelector(fc *v1beta1.FlinkCluster) client.MatchingLabels {
	return client.MatchingLabels(flinkha.Labels(resources.HAClusterID(fc)))
}

// observeHA reads the HA ConfigMaps from the API server (never a cache: a stale list could
// claim that the old job graph is gone before it is) and the leader they name.
func (c *cycle) observeHA(ctx context.Context) error {
	list := &corev1.ConfigMapList{}
	if err := c.r.Reader.List(ctx, list, client.InNamespace(c.fc.Namespace), haConfigMapSelector(c.fc)); err != nil {
		return fmt.Errorf("listing HA ConfigMaps: %w", err)
	}
	c.obs.ha = haView{configMaps: list.Items}
	for i := range list.Items {
		if l := leaderOf(&list.Items[i], resources.HAClusterID(c.fc), c.now); l.Known {
			c.obs.ha.leader = l
		}
	}
	return nil
}

// deleteHAConfigMaps deletes the cluster's HA ConfigMaps and reports whether none was left.
// Flink does not own them to the FlinkCluster, so nothing else removes them; a new deploy
// must not find the old job graph (the new JobManager would recover it, whatever its command
// line says).
func (c *cycle) deleteHAConfigMaps(ctx context.Context) (bool, error) {
	if err := c.observeHA(ctx); err != nil {
		return false, err
	}
	if len(c.obs.ha.configMaps) == 0 {
		return true, nil
	}
	names := make([]string, 0, len(c.obs.ha.configMaps))
	for i := range c.obs.ha.configMaps {
		cm := &c.obs.ha.configMaps[i]
		if err := c.r.Client.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("deleting HA ConfigMap %s: %w", cm.Name, err)
		}
		names = append(names, cm.Name)
	}
	c.event(corev1.EventTypeNormal, ReasonHAConfigMapsDeleted, "Delete", "deleted the HA ConfigMaps %v so that the next deploy cannot recover the old job graph", names)
	if err := c.observeHA(ctx); err != nil {
		return false, err
	}
	return len(c.obs.ha.configMaps) == 0, nil
}
