package policy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/policy"
)

// TestValidateDiscardState: an update whose upgrade plan newly starts a running job from
// empty state is refused unless flink-admission.dev/discard-state names the running job (by
// the stored status); a cluster already stateless, a job that does not run and an update that
// keeps the state need no confirmation.
func TestValidateDiscardState(t *testing.T) {
	const jobID = "4f3c0d5e9a8b7c6d5e4f3a2b1c0d9e8f"
	pathConfirm := path("metadata", "annotations").Key(policy.DiscardStateAnnotation)
	// running is a cluster whose stored status records job jobID running, with a savepoint.
	running := func(w *builder.FlinkClusterWrapper) *builder.FlinkClusterWrapper {
		return w.JobStatus(v1beta1.JobStateRunning).JobSavepoint("s3://bucket/savepoints/app/savepoint-1", now.Add(-1)).
			JobRecord(func(j *v1beta1.JobStatus) {
				j.ID = jobID
				j.FlinkVersion = builder.FlinkVersion
			})
	}
	stateless := func(w *builder.FlinkClusterWrapper) *builder.FlinkClusterWrapper {
		return withUpgradeMode(w, v1beta1.UpgradeModeStateless)
	}
	lastState := func() *builder.FlinkClusterWrapper {
		return running(withUpgradeMode(deploymentFC(), v1beta1.UpgradeModeLastState))
	}
	refused := field.ErrorList{required(pathConfirm, policy.RuleDiscardStateUnconfirmed)}
	otherJob := func(v string) field.ErrorList {
		return field.ErrorList{invalid(pathConfirm, v, policy.RuleDiscardStateUnconfirmed)}
	}
	cases := []struct {
		name     string
		old, new *builder.FlinkClusterWrapper
		want     field.ErrorList
		// plan is the plan warning expected last when admitted; "" for none.
		plan string
		// unused: the warning that the confirmation confirmed nothing.
		unused bool
	}{
		{
			name: "deny: switching a running savepoint job to stateless with a redeploying change",
			old:  running(makeFC("app")), new: stateless(slots(running(makeFC("app")))),
			want: refused,
		},
		{
			name: "deny: switching to stateless alone (the upgrade mode makes a new revision)",
			old:  running(makeFC("app")), new: stateless(running(makeFC("app"))),
			want: refused,
		},
		{
			name: "deny: switching a running last-state job to stateless",
			old:  lastState(), new: stateless(slots(lastState())),
			want: refused,
		},
		{
			name: "deny: the restore-from annotation answering empty-state beside a redeploying change",
			old:  running(makeFC("app")),
			new:  slots(running(makeFC("app"))).Annotation(flinkcluster.RestoreAnnotation, flinkcluster.RestoreEmptyState),
			want: refused,
		},
		{
			// The controller removes the annotation once it acted on it: one on a running job
			// (put back by a GitOps sync) is no standing choice.
			name: "deny: a stored restore-from empty-state is no standing choice",
			old:  running(makeFC("app")).Annotation(flinkcluster.RestoreAnnotation, flinkcluster.RestoreEmptyState),
			new:  slots(running(makeFC("app"))).Annotation(flinkcluster.RestoreAnnotation, flinkcluster.RestoreEmptyState),
			want: refused,
		},
		{
			name: "allow: confirmed with the running job's ID",
			old:  running(makeFC("app")),
			new:  stateless(slots(running(makeFC("app")))).Annotation(policy.DiscardStateAnnotation, jobID),
			plan: policy.WarningPlanStateless,
		},
		{
			name: "allow: confirmed by an annotation stored before the change (kubectl annotate, then apply)",
			old:  running(makeFC("app")).Annotation(policy.DiscardStateAnnotation, jobID),
			new:  stateless(slots(running(makeFC("app")))).Annotation(policy.DiscardStateAnnotation, jobID),
			plan: policy.WarningPlanStateless,
		},
		{
			name: "deny: a confirmation copied from another cluster names another job",
			old:  running(makeFC("app")),
			new:  stateless(slots(running(makeFC("app")))).Annotation(policy.DiscardStateAnnotation, "0123456789abcdef0123456789abcdef"),
			want: otherJob("0123456789abcdef0123456789abcdef"),
		},
		{
			// After the confirmed redeploy the job runs under a new ID: the annotation left in
			// the manifest confirms no later loss.
			name: "deny: a confirmation left from an earlier loss names the job that redeploy replaced",
			old:  running(makeFC("app")).JobRecord(func(j *v1beta1.JobStatus) { j.ID = "99999999999999999999999999999999" }).Annotation(policy.DiscardStateAnnotation, jobID),
			new: stateless(slots(running(makeFC("app")).JobRecord(func(j *v1beta1.JobStatus) { j.ID = "99999999999999999999999999999999" }))).
				Annotation(policy.DiscardStateAnnotation, jobID),
			want: otherJob(jobID),
		},
		{
			name: "deny: an empty confirmation",
			old:  running(makeFC("app")),
			new:  stateless(slots(running(makeFC("app")))).Annotation(policy.DiscardStateAnnotation, ""),
			want: otherJob(""),
		},
		{
			name: "deny: a running job whose status records no ID cannot be confirmed by an empty value",
			old:  running(makeFC("app")).JobRecord(func(j *v1beta1.JobStatus) { j.ID = "" }),
			new:  stateless(slots(running(makeFC("app")).JobRecord(func(j *v1beta1.JobStatus) { j.ID = "" }))).Annotation(policy.DiscardStateAnnotation, ""),
			want: otherJob(""),
		},
		{
			name: "allow: a cluster already stateless is its owner's standing choice",
			old:  stateless(running(makeFC("app"))), new: stateless(slots(running(makeFC("app")))),
			plan: policy.WarningPlanStateless,
		},
		{
			name: "allow: a job that does not run needs no confirmation",
			old:  makeFC("app").JobStatus(v1beta1.JobStateCancelled).FinalSavepoint(true),
			new:  stateless(slots(makeFC("app").JobStatus(v1beta1.JobStateCancelled).FinalSavepoint(true))),
		},
		{
			name: "allow: a job not deployed yet needs no confirmation",
			old:  makeFC("app"), new: stateless(slots(makeFC("app"))),
		},
		{
			name: "allow: a session cluster has no job state to lose",
			old:  makeFC("app").SessionCluster().JobStatus(v1beta1.JobStateRunning),
			new:  makeFC("app").SessionCluster().JobStatus(v1beta1.JobStateRunning).TaskManagerReplicas(7),
		},
		{
			name: "allow: switching savepoint to last-state keeps the state",
			old:  running(deploymentFC()), new: slots(lastState()),
			plan: fmt.Sprintf(policy.WarningPlanLastStateFormat, "", fmt.Sprintf(policy.WarningPlanFallbackStopFormat, "s3://bucket/savepoints/app")),
		},
		{
			name: "allow: the restore-from annotation naming a savepoint restores it",
			old:  running(makeFC("app")),
			new:  slots(running(makeFC("app"))).Annotation(flinkcluster.RestoreAnnotation, "s3://sp/old"),
			plan: fmt.Sprintf(policy.WarningPlanRestoreChoiceFormat, "s3://sp/old", flinkcluster.RestoreAnnotation),
		},
		{
			// The plan keeps stopping the job with a savepoint (Flink's state.savepoints.dir
			// or a failed stop that asks the user): the removal is its own rule's to refuse,
			// and the confirmation lifts no other rule.
			name:   "deny: removing savepointsDir from a running savepoint job is savepoints-dir-removed's, confirmed or not",
			old:    running(makeFC("app")),
			new:    running(makeFC("app")).SavepointsDir("").Annotation(policy.DiscardStateAnnotation, jobID),
			want:   field.ErrorList{required(path("spec", "job", "savepointsDir"), policy.RuleSavepointsDirRemoved)},
			unused: true,
		},
		{
			name: "deny: removing savepointsDir while switching to stateless: both rules",
			old:  running(makeFC("app")), new: stateless(running(makeFC("app")).SavepointsDir("")),
			want: append(field.ErrorList{required(path("spec", "job", "savepointsDir"), policy.RuleSavepointsDirRemoved)}, refused...),
		},
		{
			name: "warn: a confirmation naming the running job on an update that keeps its state",
			old:  running(makeFC("app")), new: slots(running(makeFC("app"))).Annotation(policy.DiscardStateAnnotation, jobID),
			plan:   fmt.Sprintf(policy.WarningPlanSavepointFormat, "s3://bucket/savepoints/app", "upgradeMode savepoint"),
			unused: true,
		},
		{
			name: "allow: a confirmation naming a replaced job on an update that keeps the state is silent",
			old:  running(makeFC("app")), new: slots(running(makeFC("app"))).Annotation(policy.DiscardStateAnnotation, "0123456789abcdef0123456789abcdef"),
			plan: fmt.Sprintf(policy.WarningPlanSavepointFormat, "s3://bucket/savepoints/app", "upgradeMode savepoint"),
		},
	}
	v := policy.Validator{Clock: clocktesting.NewFakePassiveClock(now)}
	unusedWarning := fmt.Sprintf(policy.WarningDiscardStateUnusedFormat, policy.DiscardStateAnnotation, jobID)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := v.ValidateUpdate(tc.old.Obj(), tc.new.Obj())
			checkErrors(t, tc.want, errs)
			var plans []string
			for _, w := range warnings {
				if strings.HasPrefix(w, policy.WarningPlanPrefix) {
					plans = append(plans, w)
				}
			}
			if tc.plan == "" {
				assert.Empty(t, plans)
			} else {
				assert.Equal(t, []string{tc.plan}, plans)
			}
			if tc.unused {
				assert.Contains(t, warnings, unusedWarning)
			} else {
				assert.NotContains(t, warnings, unusedWarning)
			}
		})
	}
}

// TestDiscardStateDenialSaysWhatIsLost: the denial names the running job, its latest savepoint
// as the stored status records it, what empties the state, and the exact annotation that
// confirms; without a recorded job ID it says why no confirmation can be given yet.
func TestDiscardStateDenialSaysWhatIsLost(t *testing.T) {
	const jobID = "4f3c0d5e9a8b7c6d5e4f3a2b1c0d9e8f"
	running := func(w *builder.FlinkClusterWrapper) *builder.FlinkClusterWrapper {
		return w.JobStatus(v1beta1.JobStateRunning).JobSavepoint("s3://bucket/savepoints/app/savepoint-1", now.Add(-1)).
			JobRecord(func(j *v1beta1.JobStatus) { j.ID = jobID })
	}
	v := policy.Validator{Clock: clocktesting.NewFakePassiveClock(now)}
	detail := func(t *testing.T, old, fc *builder.FlinkClusterWrapper) string {
		t.Helper()
		errs, _ := v.ValidateUpdate(old.Obj(), fc.Obj())
		if len(errs) != 1 || policy.RuleOf(errs[0]) != policy.RuleDiscardStateUnconfirmed {
			t.Fatalf("want one %s error, got %v", policy.RuleDiscardStateUnconfirmed, errs)
		}
		return errs[0].Detail
	}
	savepoint := "s3://bucket/savepoints/app/savepoint-1 of " + now.Add(-1).UTC().Format("2006-01-02T15:04:05Z")

	t.Run("upgradeMode stateless", func(t *testing.T) {
		got := detail(t, running(makeFC("app")), withUpgradeMode(slots(running(makeFC("app"))), v1beta1.UpgradeModeStateless))
		assert.Equal(t, fmt.Sprintf(policy.MessageDiscardStateFormat, jobID, "spec.job.upgradeMode stateless", savepoint,
			policy.DiscardStateAnnotation, jobID), got)
	})
	t.Run("restore-from empty-state", func(t *testing.T) {
		got := detail(t, running(makeFC("app")), slots(running(makeFC("app"))).Annotation(flinkcluster.RestoreAnnotation, flinkcluster.RestoreEmptyState))
		assert.Contains(t, got, "annotation "+flinkcluster.RestoreAnnotation+"="+flinkcluster.RestoreEmptyState)
		assert.Contains(t, got, policy.DiscardStateAnnotation+"="+jobID)
	})
	t.Run("a copied confirmation says it names another job", func(t *testing.T) {
		got := detail(t, running(makeFC("app")),
			withUpgradeMode(slots(running(makeFC("app"))), v1beta1.UpgradeModeStateless).Annotation(policy.DiscardStateAnnotation, "other"))
		assert.True(t, strings.HasPrefix(got, policy.MessageDiscardStateOtherJob), got)
		assert.Contains(t, got, policy.DiscardStateAnnotation+"="+jobID)
	})
	t.Run("no savepoint recorded", func(t *testing.T) {
		old := makeFC("app").JobStatus(v1beta1.JobStateRunning).JobRecord(func(j *v1beta1.JobStatus) { j.ID = jobID })
		got := detail(t, old, withUpgradeMode(slots(old.Clone()), v1beta1.UpgradeModeStateless))
		assert.Contains(t, got, "latest savepoint (none recorded)")
	})
	t.Run("no job ID recorded", func(t *testing.T) {
		old := running(makeFC("app")).JobRecord(func(j *v1beta1.JobStatus) { j.ID = "" })
		got := detail(t, old, withUpgradeMode(slots(old.Clone()), v1beta1.UpgradeModeStateless))
		assert.Equal(t, fmt.Sprintf(policy.MessageDiscardStateNoJobIDFormat, "spec.job.upgradeMode stateless"), got)
	})
}
