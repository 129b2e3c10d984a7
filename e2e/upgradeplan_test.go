package e2e

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
	"github.com/flink-admission/flink-admission/policy"
)

// TestDryRunShowsUpgradePlan: `kubectl apply --dry-run=server` of a spec change to a
// cluster whose job runs (by its stored status) prints the upgrade plan the controller will
// follow, and stores nothing.
func TestDryRunShowsUpgradePlan(t *testing.T) {
	const dir = "s3://flink-state/statemachine/savepoints"
	cases := []struct {
		name string
		edit func(*v1beta1.FlinkCluster)
		want string
	}{
		{
			name: "savepoint: stopped with a savepoint into savepointsDir",
			edit: func(*v1beta1.FlinkCluster) {},
			want: fmt.Sprintf(policy.WarningPlanSavepointFormat, dir, "upgradeMode savepoint"),
		},
		{
			name: "last-state with a max checkpoint age: the latest checkpoint if the HA store holds one",
			edit: func(fc *v1beta1.FlinkCluster) {
				m := v1beta1.UpgradeModeLastState
				fc.Spec.Job.UpgradeMode = &m
				fc.Spec.FlinkProperties[flinkcluster.PropertyLastStateMaxCheckpointAge] = "10 min"
			},
			want: fmt.Sprintf(policy.WarningPlanLastStateFormat, fmt.Sprintf(policy.WarningPlanLastStateBoundFormat, "10m0s"),
				fmt.Sprintf(policy.WarningPlanFallbackStopFormat, dir)),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t, nil)
			fc := readSample(t, "deployment-mode.yaml")
			tc.edit(fc)
			stored := manifest(t, fc)
			require.Equal(t, 0, kubectl(t, "apply", "-n", ns, "-f", stored).exitCode, "created")
			// What the controller records once the job runs.
			status := fmt.Sprintf(`{"status":{"state":"Running","components":{"jobManagerService":{"name":"statemachine-jobmanager","state":"Ready"},"job":{"id":"4f3c0d5e9a8b7c6d5e4f3a2b1c0d9e8f","state":%q,"flinkVersion":%q}}}}`,
				v1beta1.JobStateRunning, fc.Spec.FlinkVersion)
			r := kubectl(t, "patch", "-n", ns, "flinkcluster", fc.Name, "--subresource=status", "--type=merge", "-p", status)
			require.Equal(t, 0, r.exitCode, "status recorded")

			fc.Spec.Job.Parallelism = ptrTo(int32(4))
			r = kubectl(t, "apply", "--dry-run=server", "-n", ns, "-f", manifest(t, fc))
			require.Equal(t, 0, r.exitCode, "admitted")
			assert.Contains(t, r.stderr, "Warning: "+tc.want)

			get := kubectl(t, "get", "-n", ns, "flinkcluster", fc.Name, "-o", "jsonpath={.spec.job.parallelism}")
			require.Equal(t, 0, get.exitCode)
			assert.Equal(t, "2", get.stdout, "a dry run stores nothing")
		})
	}
}

// manifest writes fc as a manifest and returns its path.
func manifest(t *testing.T, fc *v1beta1.FlinkCluster) string {
	t.Helper()
	raw, err := yaml.Marshal(fc)
	require.NoError(t, err)
	return writeManifest(t, "cluster.yaml", string(raw))
}
