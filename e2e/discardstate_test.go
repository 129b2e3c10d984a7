package e2e

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/policy"
)

// TestStateLossNeedsConfirmation: `kubectl apply` of a change that switches a cluster whose
// job runs (by its stored status) to upgradeMode stateless is denied, with the job and the
// annotation that confirms it; a confirmation copied from another cluster is denied too; once
// the cluster is annotated with the running job's ID, the same manifest is admitted with the
// empty-state plan.
func TestStateLossNeedsConfirmation(t *testing.T) {
	const (
		jobID     = "4f3c0d5e9a8b7c6d5e4f3a2b1c0d9e8f"
		savepoint = "s3://flink-state/statemachine/savepoints/savepoint-4f3c0d-1"
	)
	ns := newNamespace(t, nil)
	fc := readSample(t, "deployment-mode.yaml")
	require.Equal(t, 0, kubectl(t, "apply", "-n", ns, "-f", manifest(t, fc)).exitCode, "created")
	// What the controller records once the job runs.
	status := fmt.Sprintf(`{"status":{"state":"Running","components":{"jobManagerService":{"name":"statemachine-jobmanager","state":"Ready"},"job":{"id":%q,"state":%q,"flinkVersion":%q,"savepointLocation":%q,"savepointTime":"2026-01-01T00:00:00Z"}}}}`,
		jobID, v1beta1.JobStateRunning, fc.Spec.FlinkVersion, savepoint)
	require.Equal(t, 0, kubectl(t, "patch", "-n", ns, "flinkcluster", fc.Name, "--subresource=status", "--type=merge", "-p", status).exitCode,
		"status recorded")
	storedMode := func() string {
		t.Helper()
		r := kubectl(t, "get", "-n", ns, "flinkcluster", fc.Name, "-o", "jsonpath={.spec.job.upgradeMode}")
		require.Equal(t, 0, r.exitCode, r)
		return r.stdout
	}

	stateless := v1beta1.UpgradeModeStateless
	fc.Spec.Job.UpgradeMode = &stateless
	fc.Spec.Job.Parallelism = ptrTo(int32(4))
	losing := manifest(t, fc)
	confirm := policy.DiscardStateAnnotation + "=" + jobID

	r := kubectl(t, "apply", "-n", ns, "-f", losing)
	require.NotEqual(t, 0, r.exitCode, "refused: %s", r)
	assert.Contains(t, r.stderr, "metadata.annotations["+policy.DiscardStateAnnotation+"]: Required value")
	assert.Contains(t, r.stderr, "running job "+jobID+" from empty state")
	assert.Contains(t, r.stderr, savepoint, "what would be lost")
	assert.Contains(t, r.stderr, "to confirm, annotate the cluster with "+confirm)
	assert.Empty(t, storedMode(), "a refused write stores nothing")

	copied := fc.DeepCopy()
	copied.Annotations = map[string]string{policy.DiscardStateAnnotation: "0123456789abcdef0123456789abcdef"}
	r = kubectl(t, "apply", "-n", ns, "-f", manifest(t, copied))
	require.NotEqual(t, 0, r.exitCode, "a confirmation from another cluster is refused: %s", r)
	assert.Contains(t, r.stderr, "metadata.annotations["+policy.DiscardStateAnnotation+"]: Invalid value")
	assert.Contains(t, r.stderr, policy.MessageDiscardStateOtherJob)
	assert.Empty(t, storedMode())

	r = kubectl(t, "annotate", "-n", ns, "flinkcluster", fc.Name, confirm)
	require.Equal(t, 0, r.exitCode, "annotated: %s", r)
	r = kubectl(t, "apply", "-n", ns, "-f", losing)
	require.Equal(t, 0, r.exitCode, "confirmed: %s", r)
	assert.Contains(t, r.stderr, "Warning: "+policy.WarningPlanStateless)
	assert.Equal(t, string(stateless), storedMode())
}
