package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// Revision names the spec revision of a cluster: "<name>-<hash>". Fields that only steer the
// controller (cancel requests, savepoint triggers, cleanup and restart policies, the savepoint
// age limit) are left out, so changing them is not an update and never restarts the job.
func Revision(fc *v1beta1.FlinkCluster) (string, error) {
	spec := fc.Spec.DeepCopy()
	if j := spec.Job; j != nil {
		j.CancelRequested = nil
		j.SavepointGeneration = 0
		j.AutoSavepointSeconds = nil
		j.TakeSavepointOnUpdate = nil
		j.RestartPolicy = nil
		j.CleanupPolicy = nil
		j.MaxStateAgeToRestoreSeconds = nil
	}
	// The TaskManager replica count is scaled through the scale subresource or an
	// autoscaler; it is applied in place, not by a new revision.
	if spec.TaskManager != nil {
		spec.TaskManager.Replicas = nil
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return "", fmt.Errorf("hashing the spec: %w", err)
	}
	sum := sha256.Sum256(b)
	return fc.Name + "-" + hex.EncodeToString(sum[:])[:10], nil
}

// JobID is the fixed Flink job ID of an application cluster. It is derived from the
// FlinkCluster's UID so that every revision, and every JobManager that recovers the job from
// HA metadata, runs the job under the same ID, and two clusters never share one.
func JobID(fc *v1beta1.FlinkCluster) string {
	sum := sha256.Sum256([]byte("flink-job/" + string(fc.UID)))
	return hex.EncodeToString(sum[:16])
}
