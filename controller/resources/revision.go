package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// Revision names the spec revision of a cluster: "<name>-<hash>". Fields that only steer the
// controller (cancel requests, savepoint triggers and disposal, cleanup and restart policies,
// the savepoint age limit) are left out, so changing them is not an update and never restarts the job.
func Revision(fc *v1beta1.FlinkCluster) (string, error) {
	spec := fc.Spec.DeepCopy()
	if j := spec.Job; j != nil {
		j.CancelRequested = nil
		j.SavepointGeneration = 0
		j.AutoSavepointSeconds = nil
		j.SavepointsToKeep = nil
		j.TakeSavepointOnUpdate = nil
		j.RestartPolicy = nil
		j.CleanupPolicy = nil
		j.MaxStateAgeToRestoreSeconds = nil
	}
	// The TaskManager replica count is scaled through the scale subresource or an
	// autoscaler; it is applied in place, not by a new revision.
	if spec.TaskManager != nil {
		spec.TaskManager.Replicas = nil
		spec.TaskManager.HorizontalPodAutoscaler = nil
	}
	// The Ingress, the PodDisruptionBudget and the autoscaler touch no pod: they are
	// applied in place (applyExtras) and never restart the job.
	if spec.JobManager != nil {
		spec.JobManager.Ingress = nil
	}
	spec.PodDisruptionBudget = nil
	b, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("hashing the spec: %w", err)
	}
	sum := sha256.Sum256(b)
	return fc.Name + "-" + hex.EncodeToString(sum[:])[:10], nil
}

// Deploy is one deploy of the job: the spec revision its objects are built from, the job ID
// it runs under and the savepoint it restores. Every deploy that does not resume from HA
// metadata gets a new job ID, so that no job result or job graph of an earlier deploy is ever
// taken for it (FLINK-27569), and a JobManager that recovers from HA keeps the ID.
type Deploy struct {
	Revision      string
	JobID         string
	FromSavepoint string
}
