package flinkcluster

// Which fields of the spec make a new revision, and so a redeploy of the job: the controller
// names its revisions by them, and the admission policy's upgrade plan tells by them whether
// an update redeploys at all.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// revisionSpec returns spec without the fields that only steer the controller: cancel
// requests, savepoint triggers and disposal, cleanup and restart policies, the savepoint age
// limit, and what is applied in place without touching a pod (TaskManager replicas and
// autoscaler, Ingress, PodDisruptionBudget). The copy is shallow where nothing is cleared, so
// it shares spec's maps and slices: it is only read (marshalled), never changed.
func revisionSpec(spec *v1beta1.FlinkClusterSpec) *v1beta1.FlinkClusterSpec {
	s := *spec
	if spec.Job != nil {
		j := *spec.Job
		j.CancelRequested = nil
		j.SavepointGeneration = 0
		j.AutoSavepointSeconds = nil
		j.SavepointsToKeep = nil
		j.TakeSavepointOnUpdate = nil
		j.RestartPolicy = nil
		j.CleanupPolicy = nil
		j.MaxStateAgeToRestoreSeconds = nil
		s.Job = &j
	}
	// The TaskManager replica count is scaled through the scale subresource or an
	// autoscaler; it is applied in place, not by a new revision.
	if spec.TaskManager != nil {
		tm := *spec.TaskManager
		tm.Replicas = nil
		tm.HorizontalPodAutoscaler = nil
		s.TaskManager = &tm
	}
	// The Ingress, the PodDisruptionBudget and the autoscaler touch no pod: the controller
	// applies them in place and never restarts the job for them.
	if spec.JobManager != nil {
		jm := *spec.JobManager
		jm.Ingress = nil
		s.JobManager = &jm
	}
	s.PodDisruptionBudget = nil
	return &s
}

// revisionBytes is the text a revision is the hash of.
func revisionBytes(spec *v1beta1.FlinkClusterSpec) ([]byte, error) {
	b, err := json.Marshal(revisionSpec(spec))
	if err != nil {
		return nil, fmt.Errorf("hashing the spec: %w", err)
	}
	return b, nil
}

// RevisionHash is the hash that names the spec's revision: two specs that differ only in
// fields that steer the controller (see revisionSpec) have the same one.
func RevisionHash(spec *v1beta1.FlinkClusterSpec) (string, error) {
	b, err := revisionBytes(spec)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:10], nil
}

// RedeployNeeded reports whether the change from old to cur makes a new revision, which the
// controller deploys anew (the job is redeployed); a change of fields that only steer the
// controller needs no redeploy. It compares what RevisionHash hashes. It runs on every
// admitted update of a running job, so it first compares the fields updates change most,
// which revisionSpec keeps whole: a difference there is a different revision (each
// is marshalled as it is, and an absent and an empty flinkProperties both as none), found
// without marshalling two specs.
func RedeployNeeded(old, cur *v1beta1.FlinkClusterSpec) (bool, error) {
	if old.FlinkVersion != cur.FlinkVersion || old.Image.Name != cur.Image.Name || !maps.Equal(old.FlinkProperties, cur.FlinkProperties) {
		return true, nil
	}
	a, err := revisionBytes(old)
	if err != nil {
		return false, err
	}
	b, err := revisionBytes(cur)
	if err != nil {
		return false, err
	}
	return !bytes.Equal(a, b), nil
}
