package policy_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/policy"
)

func withUpgradeMode(w *builder.FlinkClusterWrapper, m v1beta1.UpgradeMode) *builder.FlinkClusterWrapper {
	return w.Job(func(j *v1beta1.JobSpec) { j.UpgradeMode = &m })
}

// TestValidateUpgradeMode covers spec.job.upgradeMode and the last-state checkpoint age bound
// on create.
func TestValidateUpgradeMode(t *testing.T) {
	pathMode := path("spec", "job", "upgradeMode")
	pathAge := pathFlinkProps.Key(flinkcluster.PropertyLastStateMaxCheckpointAge)
	cases := []struct {
		name string
		obj  *v1beta1.FlinkCluster
		want field.ErrorList
	}{
		{name: "allow: upgradeMode unset (savepoint)", obj: makeFC("c").Obj()},
		{name: "allow: stateless on a Job JobManager", obj: withUpgradeMode(makeFC("c"), v1beta1.UpgradeModeStateless).Obj()},
		{name: "allow: last-state on a Deployment with Kubernetes HA", obj: withUpgradeMode(deploymentFC(), v1beta1.UpgradeModeLastState).Obj()},
		{
			name: "deny: an upgradeMode outside the enum",
			obj:  withUpgradeMode(makeFC("c"), "last-checkpoint").Obj(),
			want: field.ErrorList{notSupported(pathMode, v1beta1.UpgradeMode("last-checkpoint"), policy.RuleUpgradeMode)},
		},
		{
			name: "deny: last-state with ZooKeeper HA",
			obj:  withUpgradeMode(deploymentFC(), v1beta1.UpgradeModeLastState).FlinkProperty(policy.PropertyHAType, "zookeeper").Obj(),
			// Both rules: a Deployment JobManager needs Kubernetes HA, and so does last-state.
			want: field.ErrorList{
				invalid(field.NewPath("spec", "flinkProperties").Key(policy.PropertyHAType), "zookeeper", policy.RuleDeploymentRequiresKubernetesHA),
				invalid(pathMode, "last-state", policy.RuleLastStateRequiresKubernetesHA),
			},
		},
		{
			name: "deny: last-state on a Job JobManager with Kubernetes HA",
			obj:  withUpgradeMode(makeFC("c").HA(), v1beta1.UpgradeModeLastState).Obj(),
			want: field.ErrorList{invalid(pathMode, "last-state", policy.RuleLastStateRequiresKubernetesHA)},
		},
		{
			name: "allow: a checkpoint age bound in Flink's duration syntax",
			obj: withUpgradeMode(deploymentFC(), v1beta1.UpgradeModeLastState).
				FlinkProperty(flinkcluster.PropertyLastStateMaxCheckpointAge, "10 min").Obj(),
		},
		{
			name: "allow: a checkpoint age bound in ISO-8601",
			obj:  makeFC("c").FlinkProperty(flinkcluster.PropertyLastStateMaxCheckpointAge, "PT10M").Obj(),
		},
		{
			name: "deny: a checkpoint age bound that is no duration",
			obj:  makeFC("c").FlinkProperty(flinkcluster.PropertyLastStateMaxCheckpointAge, "ten minutes").Obj(),
			want: field.ErrorList{invalid(pathAge, "ten minutes", policy.RuleLastStateMaxCheckpointAge)},
		},
	}
	v := policy.Validator{Clock: clocktesting.NewFakePassiveClock(now)}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, _ := v.ValidateCreate(tc.obj)
			checkErrors(t, tc.want, errs)
		})
	}
}

// TestValidateUpdateUpgradeMode: last-state and stateless updates need no savepoint, since
// they carry the state in Flink's HA store or carry none on purpose.
func TestValidateUpdateUpgradeMode(t *testing.T) {
	stopped := func(m v1beta1.UpgradeMode) *builder.FlinkClusterWrapper {
		return withUpgradeMode(deploymentFC(), m).JobStatus(v1beta1.JobStateLost)
	}
	runUpdateCases(t, []updateCase{
		{
			name: "deny: update of a Lost job in savepoint mode without a savepoint",
			old:  stopped(v1beta1.UpgradeModeSavepoint).Obj(),
			new:  slots(stopped(v1beta1.UpgradeModeSavepoint)).Obj(),
			want: field.ErrorList{forbidden(path("spec", "job"), policy.RuleJobUpdateRequiresRecentSavepoint)},
		},
		{name: "allow: update of a Lost job in last-state mode", old: stopped(v1beta1.UpgradeModeLastState).Obj(), new: slots(stopped(v1beta1.UpgradeModeLastState)).Obj()},
		{name: "allow: update of a Lost job in stateless mode", old: stopped(v1beta1.UpgradeModeStateless).Obj(), new: slots(stopped(v1beta1.UpgradeModeStateless)).Obj()},
		{
			name: "allow: a last-state cluster created without savepointsDir can be updated",
			old:  withUpgradeMode(deploymentFC().SavepointsDir(""), v1beta1.UpgradeModeLastState).Obj(),
			new:  slots(withUpgradeMode(deploymentFC().SavepointsDir(""), v1beta1.UpgradeModeLastState)).Obj(),
		},
	})
}

// TestParseFlinkDuration reads durations as Flink's TimeUtils does.
func TestParseFlinkDuration(t *testing.T) {
	for in, want := range map[string]string{"600000": "10m0s", "10 min": "10m0s", "600s": "10m0s", "1h": "1h0m0s", "PT10M": "10m0s", "P1DT1H": "25h0m0s", " 2 d ": "48h0m0s"} {
		d, err := flinkcluster.ParseFlinkDuration(in)
		if err != nil || d.String() != want {
			t.Errorf("ParseFlinkDuration(%q) = %v, %v; want %s", in, d, err, want)
		}
	}
	for _, in := range []string{"", "ten", "10 fortnights", "-5s", "PT", "P1H"} {
		if d, err := flinkcluster.ParseFlinkDuration(in); err == nil {
			t.Errorf("ParseFlinkDuration(%q) = %v, want an error", in, d)
		}
	}
}
