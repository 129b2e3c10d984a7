package policy_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/policy"
)

// TestUpgradePlanWarning: an admitted update of a cluster whose job runs (by the stored
// status) says, as its last warning, what the controller's upgrade decision will do to the
// job's state; nothing is said of a job that does not run, a session cluster or a refused
// update.
func TestUpgradePlanWarning(t *testing.T) {
	const dir = "s3://bucket/savepoints/app"
	// running is a cluster whose stored status records job j1 running on the builder's Flink.
	running := func(w *builder.FlinkClusterWrapper) *builder.FlinkClusterWrapper {
		return w.JobStatus(v1beta1.JobStateRunning).JobRecord(func(j *v1beta1.JobStatus) {
			j.ID = "j1"
			j.FlinkVersion = builder.FlinkVersion
		})
	}
	lastState := func() *builder.FlinkClusterWrapper {
		return running(withUpgradeMode(deploymentFC(), v1beta1.UpgradeModeLastState))
	}
	fallbackStop := fmt.Sprintf(policy.WarningPlanFallbackStopFormat, dir)
	longDir := "s3://bucket/" + strings.Repeat("deep/", 60) + "savepoints"
	cases := []struct {
		name     string
		old, new *builder.FlinkClusterWrapper
		// plan is the plan warning expected last; "" for none.
		plan string
	}{
		{
			name: "savepoint: the running job is stopped with a savepoint into savepointsDir",
			old:  running(makeFC("app")), new: slots(running(makeFC("app"))),
			plan: fmt.Sprintf(policy.WarningPlanSavepointFormat, dir, "upgradeMode savepoint"),
		},
		{
			name: "savepoint: takeSavepointOnUpdate false restores the newest savepoint",
			old:  running(makeFC("app")).TakeSavepointOnUpdate(false).MaxStateAge(600).JobSavepoint("s3://sp/1", now.Add(-1)),
			new:  slots(running(makeFC("app")).TakeSavepointOnUpdate(false).MaxStateAge(600).JobSavepoint("s3://sp/1", now.Add(-1))),
			plan: fmt.Sprintf(policy.WarningPlanNoStopFormat, "s3://sp/1"),
		},
		{
			name: "savepoint: the restore-from annotation answers empty state (confirmed)",
			old:  running(makeFC("app")),
			new: slots(running(makeFC("app"))).Annotation(flinkcluster.RestoreAnnotation, flinkcluster.RestoreEmptyState).
				Annotation(policy.DiscardStateAnnotation, "j1"),
			plan: fmt.Sprintf(policy.WarningPlanRestoreChoiceFormat, "empty state", flinkcluster.RestoreAnnotation),
		},
		{
			name: "savepoint: the restore-from annotation names a savepoint",
			old:  running(makeFC("app")),
			new:  slots(running(makeFC("app"))).Annotation(flinkcluster.RestoreAnnotation, "s3://sp/old"),
			plan: fmt.Sprintf(policy.WarningPlanRestoreChoiceFormat, "s3://sp/old", flinkcluster.RestoreAnnotation),
		},
		{
			// The controller updates a running job for a new revision only: the annotation
			// answers a stop, it starts no update.
			name: "no redeploy: the restore-from annotation beside a change that makes no new revision",
			old:  running(makeFC("app")).TaskManagerReplicas(2),
			new:  running(makeFC("app")).TaskManagerReplicas(7).Annotation(flinkcluster.RestoreAnnotation, "s3://sp/old"),
			plan: policy.WarningPlanNoRedeploy,
		},
		{
			name: "last-state: redeployed from the latest checkpoint if the HA store holds one, else a savepoint",
			old:  lastState(), new: slots(lastState()),
			plan: fmt.Sprintf(policy.WarningPlanLastStateFormat, "", fallbackStop),
		},
		{
			name: "last-state with a max checkpoint age: the bound is part of the condition",
			old:  lastState().FlinkProperty(flinkcluster.PropertyLastStateMaxCheckpointAge, "10 min"),
			new:  slots(lastState().FlinkProperty(flinkcluster.PropertyLastStateMaxCheckpointAge, "10 min")),
			plan: fmt.Sprintf(policy.WarningPlanLastStateFormat, fmt.Sprintf(policy.WarningPlanLastStateBoundFormat, "10m0s"), fallbackStop),
		},
		{
			name: "last-state with takeSavepointOnUpdate false: the fallback is the newest savepoint",
			old:  lastState().TakeSavepointOnUpdate(false), new: slots(lastState().TakeSavepointOnUpdate(false)),
			plan: fmt.Sprintf(policy.WarningPlanLastStateFormat, "", policy.WarningPlanFallbackNoStop),
		},
		{
			name: "last-state with a new fromSavepoint: the fallback restores it without a stop",
			old:  lastState(), new: slots(lastState()).FromSavepoint("s3://sp/named"),
			plan: fmt.Sprintf(policy.WarningPlanLastStateFormat, "", fmt.Sprintf(policy.WarningPlanFallbackFromSavepointFormat, "s3://sp/named")),
		},
		{
			name: "last-state across a Flink minor version: a savepoint, and why",
			old:  lastState().JobRecord(func(j *v1beta1.JobStatus) { j.FlinkVersion = "1.20.1" }),
			new:  slots(lastState().JobRecord(func(j *v1beta1.JobStatus) { j.FlinkVersion = "1.20.1" })),
			plan: fmt.Sprintf(policy.WarningPlanSavepointFormat, dir,
				fmt.Sprintf("upgradeMode last-state, but flinkVersion changes from 1.20.1 to %s", builder.FlinkVersion)),
		},
		{
			name: "stateless: the job starts from empty state",
			old:  running(withUpgradeMode(makeFC("app"), v1beta1.UpgradeModeStateless)),
			new:  slots(running(withUpgradeMode(makeFC("app"), v1beta1.UpgradeModeStateless))),
			plan: policy.WarningPlanStateless,
		},
		{
			name: "no redeploy: a TaskManager replica change leaves the job running",
			old:  running(makeFC("app")).TaskManagerReplicas(2), new: running(makeFC("app")).TaskManagerReplicas(7),
			plan: policy.WarningPlanNoRedeploy,
		},
		{
			name: "no redeploy: a scheduled savepoint interval leaves the job running",
			old:  running(makeFC("app")), new: running(makeFC("app")).Job(func(j *v1beta1.JobSpec) { j.AutoSavepointSeconds = ptr.To[int32](300) }),
			plan: policy.WarningPlanNoRedeploy,
		},
		{
			name: "long savepointsDir: shortened, the warning stays within the API server's limit",
			old:  running(makeFC("app")).SavepointsDir(longDir), new: slots(running(makeFC("app")).SavepointsDir(longDir)),
			plan: fmt.Sprintf(policy.WarningPlanSavepointFormat, longDir[:23]+"…"+longDir[len(longDir)-23:], "upgradeMode savepoint"),
		},
		{
			name: "long savepointsDir with last-state and an age bound: within the limit too",
			old:  lastState().SavepointsDir(longDir).FlinkProperty(flinkcluster.PropertyLastStateMaxCheckpointAge, "90 min"),
			new:  slots(lastState().SavepointsDir(longDir).FlinkProperty(flinkcluster.PropertyLastStateMaxCheckpointAge, "90 min")),
			plan: fmt.Sprintf(policy.WarningPlanLastStateFormat, fmt.Sprintf(policy.WarningPlanLastStateBoundFormat, "1h30m0s"),
				fmt.Sprintf(policy.WarningPlanFallbackStopFormat, longDir[:23]+"…"+longDir[len(longDir)-23:])),
		},
		{name: "no plan: the job is not running", old: makeFC("app").JobStatus(v1beta1.JobStateCancelled).FinalSavepoint(true),
			new: slots(makeFC("app").JobStatus(v1beta1.JobStateCancelled).FinalSavepoint(true))},
		{name: "no plan: no job status", old: makeFC("app"), new: slots(makeFC("app"))},
		{name: "no plan: a session cluster", old: makeFC("app").SessionCluster(), new: slots(makeFC("app").SessionCluster())},
		{name: "no plan: a metadata-only update", old: running(makeFC("app")), new: running(makeFC("app")).Label("team", "data")},
		{
			name: "no plan: a refused update",
			old:  running(makeFC("app")), new: running(makeFC("app")).SavepointsDir(""),
		},
	}
	v := policy.Validator{Clock: clocktesting.NewFakePassiveClock(now)}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := v.ValidateUpdate(tc.old.Obj(), tc.new.Obj())
			var plans []string
			for _, w := range warnings {
				if strings.HasPrefix(w, policy.WarningPlanPrefix) {
					plans = append(plans, w)
				}
			}
			if tc.plan == "" {
				assert.Empty(t, plans)
				return
			}
			assert.Equal(t, field.ErrorList(nil), errs)
			require.Equal(t, []string{tc.plan}, plans)
			assert.Equal(t, tc.plan, warnings[len(warnings)-1], "the plan comes last")
			assert.LessOrEqual(t, utf8.RuneCountInString(tc.plan), 240, "well within the API server's 256 runes a warning")
		})
	}
}
