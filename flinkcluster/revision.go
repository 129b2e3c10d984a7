package flinkcluster

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// revisionSpec returns spec without the fields that only steer the controller or are applied
// in place. The copy is shallow, sharing spec's maps and slices: it is only read.
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
	if spec.TaskManager != nil {
		tm := *spec.TaskManager
		tm.Replicas = nil
		tm.HorizontalPodAutoscaler = nil
		s.TaskManager = &tm
	}
	if spec.JobManager != nil {
		jm := *spec.JobManager
		jm.Ingress = nil
		s.JobManager = &jm
	}
	s.PodDisruptionBudget = nil
	return &s
}

func revisionBytes(spec *v1beta1.FlinkClusterSpec) ([]byte, error) {
	b, err := json.Marshal(revisionSpec(spec))
	if err != nil {
		return nil, fmt.Errorf("hashing the spec: %w", err)
	}
	return b, nil
}

// RevisionHash names the spec's revision; specs that differ only where revisionSpec clears share it.
func RevisionHash(spec *v1beta1.FlinkClusterSpec) (string, error) {
	b, err := revisionBytes(spec)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:10], nil
}

// RedeployNeeded reports whether the change from old to cur makes a new revision. It runs on
// every update of a running job, so the fields updates change most are compared first.
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
