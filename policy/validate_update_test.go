package policy_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/policy"
)

// now is the fake clock's time in the update tests.
var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// slots changes a harmless Flink property: an update that touches nothing a rule looks at.
func slots(w *builder.FlinkClusterWrapper) *builder.FlinkClusterWrapper {
	return w.FlinkProperty("taskmanager.numberOfTaskSlots", "4")
}

type updateCase struct {
	name     string
	old, new *v1beta1.FlinkCluster
	want     field.ErrorList
	warnings []string
}

func runUpdateCases(t *testing.T, cases []updateCase) {
	t.Helper()
	v := policy.Validator{Clock: clocktesting.NewFakePassiveClock(now)}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, warnings := v.ValidateUpdate(tc.old, tc.new)
			checkErrors(t, tc.want, errs)
			checkWarnings(t, tc.warnings, warnings)
		})
	}
}

func TestValidateUpdateTransitions(t *testing.T) {
	withHA := func() *builder.FlinkClusterWrapper { return makeFC("app").HA() }
	runUpdateCases(t, []updateCase{
		{
			name: "deny: deploymentType unset to Deployment",
			old:  withHA().Obj(),
			new:  withHA().DeploymentType(deployment).Obj(),
			want: field.ErrorList{forbidden(path("spec", "jobManager", "deploymentType"), policy.RuleDeploymentTypeImmutable)},
		},
		{
			name: "deny: deploymentType unset (nil jobManager) to Deployment",
			old:  withHA().NilJobManager().Obj(),
			new:  withHA().DeploymentType(deployment).Obj(),
			want: field.ErrorList{forbidden(path("spec", "jobManager", "deploymentType"), policy.RuleDeploymentTypeImmutable)},
		},
		{
			name: "deny: deploymentType Deployment to unset (nil jobManager)",
			old:  withHA().DeploymentType(deployment).Obj(),
			new:  withHA().NilJobManager().Obj(),
			want: field.ErrorList{forbidden(path("spec", "jobManager", "deploymentType"), policy.RuleDeploymentTypeImmutable)},
		},
		{
			name: "deny: deploymentType Job to Deployment",
			old:  withHA().DeploymentType(jobType).Obj(),
			new:  withHA().DeploymentType(deployment).Obj(),
			want: field.ErrorList{forbidden(path("spec", "jobManager", "deploymentType"), policy.RuleDeploymentTypeImmutable)},
		},
		{
			name: "deny: deploymentType Deployment to Job",
			old:  withHA().DeploymentType(deployment).Obj(),
			new:  withHA().DeploymentType(jobType).Obj(),
			want: field.ErrorList{forbidden(path("spec", "jobManager", "deploymentType"), policy.RuleDeploymentTypeImmutable)},
		},
		{name: "allow: deploymentType unset to Job", old: makeFC("app").NilJobManager().Obj(), new: makeFC("app").DeploymentType(jobType).Obj()},
		{name: "allow: deploymentType Job to unset", old: makeFC("app").DeploymentType(jobType).Obj(), new: makeFC("app").DeploymentType("").Obj()},
		{
			name: "deny: taskManager deploymentType unset (nil taskManager) to Deployment",
			old:  makeFC("app").NilTaskManager().Obj(),
			new:  makeFC("app").TaskManagerDeploymentType(v1beta1.TaskManagerDeploymentTypeDeployment).Obj(),
			want: field.ErrorList{forbidden(path("spec", "taskManager", "deploymentType"), policy.RuleTaskManagerDeploymentTypeImmutable)},
		},
		{
			name: "deny: taskManager deploymentType Deployment to StatefulSet",
			old:  makeFC("app").TaskManagerDeploymentType(v1beta1.TaskManagerDeploymentTypeDeployment).Obj(),
			new:  makeFC("app").TaskManagerDeploymentType(v1beta1.TaskManagerDeploymentTypeStatefulSet).Obj(),
			want: field.ErrorList{forbidden(path("spec", "taskManager", "deploymentType"), policy.RuleTaskManagerDeploymentTypeImmutable)},
		},
		{name: "allow: taskManager deploymentType unset to StatefulSet", old: makeFC("app").Obj(), new: makeFC("app").TaskManagerDeploymentType(v1beta1.TaskManagerDeploymentTypeStatefulSet).Obj()},
		{name: "allow: taskManager deploymentType StatefulSet to unset", old: makeFC("app").TaskManagerDeploymentType(v1beta1.TaskManagerDeploymentTypeStatefulSet).Obj(), new: makeFC("app").NilTaskManager().Obj()},
		{
			name: "deny: session cluster to job cluster",
			old:  makeFC("app").SessionCluster().Obj(),
			new:  makeFC("app").Obj(),
			want: field.ErrorList{forbidden(path("spec", "job"), policy.RuleClusterTypeImmutable)},
		},
		{
			name: "deny: job cluster to session cluster also removes savepointsDir",
			old:  makeFC("app").Obj(),
			new:  makeFC("app").SessionCluster().Obj(),
			want: field.ErrorList{
				forbidden(path("spec", "job"), policy.RuleClusterTypeImmutable),
				required(path("spec", "job", "savepointsDir"), policy.RuleSavepointsDirRemoved),
			},
		},
		{
			name: "deny: session cluster to job cluster with cancelRequested true (a new job, as in CEL)",
			old:  makeFC("app").SessionCluster().Obj(),
			new:  makeFC("app").CancelRequested(true).Obj(),
			want: field.ErrorList{
				forbidden(path("spec", "job"), policy.RuleClusterTypeImmutable),
				forbidden(path("spec", "job", "cancelRequested"), policy.RuleCancelOnCreate),
			},
		},
		{
			name: "deny: savepointsDir removed",
			old:  makeFC("app").Obj(),
			new:  makeFC("app").SavepointsDir("").Obj(),
			want: field.ErrorList{required(path("spec", "job", "savepointsDir"), policy.RuleSavepointsDirRemoved)},
		},
		{
			name: "deny: savepointsDir emptied",
			old:  makeFC("app").Obj(),
			new:  makeFC("app").Job(func(j *v1beta1.JobSpec) { j.SavepointsDir = new(string) }).Obj(),
			want: field.ErrorList{required(path("spec", "job", "savepointsDir"), policy.RuleSavepointsDirRemoved)},
		},
		{name: "allow: savepointsDir changed", old: makeFC("app").Obj(), new: makeFC("app").SavepointsDir("s3://other/savepoints").Obj()},
		{
			name: "deny: cancelRequested true to false",
			old:  makeFC("app").CancelRequested(true).Obj(),
			new:  makeFC("app").CancelRequested(false).Obj(),
			want: field.ErrorList{forbidden(path("spec", "job", "cancelRequested"), policy.RuleCancelIrreversible)},
		},
		{
			name: "deny: cancelRequested true to unset",
			old:  makeFC("app").CancelRequested(true).Obj(),
			new:  makeFC("app").Job(func(j *v1beta1.JobSpec) { j.CancelRequested = nil }).Obj(),
			want: field.ErrorList{forbidden(path("spec", "job", "cancelRequested"), policy.RuleCancelIrreversible)},
		},
		{name: "allow: cancelRequested stays true on another change", old: makeFC("app").CancelRequested(true).Obj(), new: slots(makeFC("app").CancelRequested(true)).Obj()},
		{
			name: "deny: HA switched on",
			old:  makeFC("app").Obj(),
			new:  makeFC("app").HA().Obj(),
			want: field.ErrorList{forbidden(pathFlinkProps, policy.RuleHAImmutable)},
		},
		{
			name: "deny: HA switched off by setting the type to None",
			old:  makeFC("app").HA().Obj(),
			new:  makeFC("app").HA().FlinkProperty(policy.PropertyHAType, "None").Obj(),
			want: field.ErrorList{forbidden(pathFlinkProps, policy.RuleHAImmutable)},
		},
		{name: "allow: HA type changed from kubernetes to zookeeper", old: makeFC("app").HA().Obj(), new: makeFC("app").HA().FlinkProperty(policy.PropertyHAType, "zookeeper").Obj()},
		{
			name:     "allow: HA moved from the legacy key to high-availability.type",
			old:      makeFC("app").FlinkProperty(policy.PropertyHALegacy, "zookeeper").Obj(),
			new:      makeFC("app").FlinkProperty(policy.PropertyHAType, "zookeeper").Obj(),
			warnings: nil,
		},
		{name: "allow: HA none spelt differently", old: makeFC("app").FlinkProperty(policy.PropertyHAType, "NONE").Obj(), new: makeFC("app").FlinkProperty(policy.PropertyHAType, "none").Obj()},
	})
}

func TestValidateUpdateRatcheting(t *testing.T) {
	long := "a" + strings.Repeat("b", 55)
	noHA := func() *builder.FlinkClusterWrapper { return makeFC("app").DeploymentType(deployment) }
	haType := required(pathHAType, policy.RuleDeploymentRequiresHA)
	haDir := required(pathHAStorageDir, policy.RuleDeploymentRequiresHAStorageDir)
	runUpdateCases(t, []updateCase{
		{
			name:     "warn: deploymentType Deployment without HA that predates the rule stays editable",
			old:      noHA().Obj(),
			new:      slots(noHA()).Obj(),
			warnings: []string{existing(haType), existing(haDir)},
		},
		{
			name: "warn: allowNonRestoredState on Flink 2.2 in a stored Deployment without HA still has no effect",
			old:  noHA().FlinkVersion("2.2.1").AllowNonRestoredState(true).Obj(),
			new:  slots(noHA().FlinkVersion("2.2.1").AllowNonRestoredState(true)).Obj(),
			warnings: []string{existing(haType), existing(haDir),
				fmt.Sprintf(policy.WarningAllowNonRestoredStateIgnoredFormat, "2.2.1")},
		},
		{
			name: "deny: HA storageDir removed from a Deployment cluster",
			old:  deploymentFC().Obj(),
			new:  deploymentFC().DeleteFlinkProperty(policy.PropertyHAStorageDir).Obj(),
			want: field.ErrorList{haDir},
		},
		{
			name:     "warn: deploymentType Deployment with a detached job that predates the rule",
			old:      deploymentFC().JobMode(v1beta1.JobModeDetached).JarFile("job.jar").Obj(),
			new:      slots(deploymentFC().JobMode(v1beta1.JobModeDetached).JarFile("job.jar")).Obj(),
			warnings: []string{existing(invalid(path("spec", "job", "mode"), "Detached", policy.RuleDeploymentRequiresApplicationMode))},
		},
		{
			name: "deny: job mode changed from Application to Detached on a Deployment cluster",
			old:  deploymentFC().JarFile("job.jar").Obj(),
			new:  deploymentFC().JobMode(v1beta1.JobModeDetached).JarFile("job.jar").Obj(),
			want: field.ErrorList{invalid(path("spec", "job", "mode"), "Detached", policy.RuleDeploymentRequiresApplicationMode)},
		},
		{
			// The CEL rules ratchet on the old object's job mode and HA alone, whatever
			// its deploymentType; the transition rule still rejects the switch.
			name: "deny: switch to Deployment ratchets the Deployment rules as CEL does",
			old:  makeFC("app").JobMode(v1beta1.JobModeDetached).JarFile("job.jar").Obj(),
			new:  makeFC("app").DeploymentType(deployment).JobMode(v1beta1.JobModeDetached).JarFile("job.jar").Obj(),
			want: field.ErrorList{forbidden(path("spec", "jobManager", "deploymentType"), policy.RuleDeploymentTypeImmutable)},
			warnings: []string{
				existing(invalid(path("spec", "job", "mode"), "Detached", policy.RuleDeploymentRequiresApplicationMode)),
				existing(haType), existing(haDir),
			},
		},
		{
			name:     "warn: deploymentType Deployment with 2 JobManager replicas that predates the rule",
			old:      deploymentFC().JobManagerReplicas(2).Obj(),
			new:      slots(deploymentFC().JobManagerReplicas(2)).Obj(),
			warnings: []string{existing(invalid(path("spec", "jobManager", "replicas"), int32(2), policy.RuleDeploymentRequiresSingleJobManager))},
		},
		{
			name: "deny: JobManager replicas raised to 2 on a Deployment cluster",
			old:  deploymentFC().Obj(),
			new:  deploymentFC().JobManagerReplicas(2).Obj(),
			want: field.ErrorList{invalid(path("spec", "jobManager", "replicas"), int32(2), policy.RuleDeploymentRequiresSingleJobManager)},
		},
		{
			name:     "warn: shutdown-on-application-finish true that predates the rule (any case)",
			old:      deploymentFC().FlinkProperty(policy.PropertyShutdownOnApplicationFinish, "TRUE").Obj(),
			new:      deploymentFC().FlinkProperty(policy.PropertyShutdownOnApplicationFinish, "True").Obj(),
			warnings: []string{existing(forbidden(pathShutdown, policy.RuleDeploymentForbidsShutdownOnFinish))},
		},
		{
			name: "deny: shutdown-on-application-finish set to true on a Deployment cluster",
			old:  deploymentFC().FlinkProperty(policy.PropertyShutdownOnApplicationFinish, "false").Obj(),
			new:  deploymentFC().FlinkProperty(policy.PropertyShutdownOnApplicationFinish, "true").Obj(),
			want: field.ErrorList{forbidden(pathShutdown, policy.RuleDeploymentForbidsShutdownOnFinish)},
		},
		{
			name:     "warn: parallelism 0 that predates the rule",
			old:      makeFC("app").Parallelism(0).Obj(),
			new:      slots(makeFC("app").Parallelism(0)).Obj(),
			warnings: []string{existing(invalid(path("spec", "job", "parallelism"), int32(0), policy.RuleJobParallelism))},
		},
		{
			name: "deny: parallelism set to 0",
			old:  makeFC("app").Parallelism(1).Obj(),
			new:  makeFC("app").Parallelism(0).Obj(),
			want: field.ErrorList{invalid(path("spec", "job", "parallelism"), int32(0), policy.RuleJobParallelism)},
		},
		{
			name:     "warn: a name longer than 48 characters that predates the rule",
			old:      makeFC(long).Obj(),
			new:      slots(makeFC(long)).Obj(),
			warnings: []string{existing(invalid(path("metadata", "name"), long, policy.RuleNameTooLong))},
		},
		{
			name: "deny: a new violation next to a ratcheted one",
			old:  makeFC("app").TaskManagerPorts(80, 6122, 6125).Obj(),
			new:  makeFC("app").TaskManagerPorts(80, 6122, 6125).Parallelism(0).Obj(),
			want: field.ErrorList{invalid(path("spec", "job", "parallelism"), int32(0), policy.RuleJobParallelism)},
			warnings: []string{
				existing(invalid(path("spec", "taskManager", "ports", "data"), int32(80), policy.RulePort)),
			},
		},
		{
			name: "deny: a second rule on the same field does not ratchet on the first",
			old:  makeFC("app").RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).Obj(),
			new:  makeFC("app").RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).TakeSavepointOnUpdate(false).Obj(),
			want: field.ErrorList{required(path("spec", "job", "maxStateAgeToRestoreSeconds"), policy.RuleSkipSavepointRequiresMaxStateAge)},
			warnings: []string{
				existing(required(path("spec", "job", "maxStateAgeToRestoreSeconds"), policy.RuleRestartRequiresMaxStateAge)),
			},
		},
		{
			name: "allow: an unchanged spec skips all spec rules, even on a broken old object",
			old:  makeFC("Bad_Name").Parallelism(0).DeploymentType(deployment).Obj(),
			new:  makeFC("Bad_Name").Parallelism(0).DeploymentType(deployment).Label("team", "data").Obj(),
		},
		{
			name: "allow: cancelRequested true on an existing job",
			old:  makeFC("app").Obj(),
			new:  makeFC("app").CancelRequested(true).Obj(),
		},
	})
}

func TestValidateUpdateCommands(t *testing.T) {
	running := func() *builder.FlinkClusterWrapper { return makeFC("app").JobStatus(v1beta1.JobStateRunning) }
	runUpdateCases(t, []updateCase{
		{
			name: "allow: cancelRequested false to true alone, even on a broken object",
			old:  makeFC("app").Parallelism(0).Obj(),
			new:  makeFC("app").Parallelism(0).CancelRequested(true).Obj(),
		},
		{
			name: "allow: cancelRequested alone while the mutating webhook filled in defaults",
			old:  makeFC("app").Obj(),
			new:  defaulted(makeFC("app").CancelRequested(true).Obj()),
		},
		{
			name: "allow: savepointGeneration alone while the mutating webhook filled in defaults",
			old:  makeFC("app").Obj(),
			new:  defaulted(makeFC("app").SavepointGeneration(1).Obj()),
		},
		{
			name: "deny: cancelRequested false to true with another change",
			old:  makeFC("app").CancelRequested(false).Obj(),
			new:  slots(makeFC("app").CancelRequested(true)).Obj(),
			want: field.ErrorList{forbidden(path("spec", "job", "cancelRequested"), policy.RuleCancelAlone)},
		},
		{
			name: "allow: savepointGeneration raised to status + 1 alone",
			old:  makeFC("app").SavepointGeneration(2).StatusSavepointGeneration(2).Obj(),
			new:  makeFC("app").SavepointGeneration(3).StatusSavepointGeneration(2).Obj(),
		},
		{
			name: "allow: first savepointGeneration without a job status",
			old:  makeFC("app").Obj(),
			new:  makeFC("app").SavepointGeneration(1).Obj(),
		},
		{
			name: "deny: savepointGeneration skipping ahead",
			old:  makeFC("app").StatusSavepointGeneration(2).Obj(),
			new:  makeFC("app").SavepointGeneration(5).StatusSavepointGeneration(2).Obj(),
			want: field.ErrorList{invalid(path("spec", "job", "savepointGeneration"), int32(5), policy.RuleSavepointGeneration)},
		},
		{
			name: "deny: savepointGeneration with another change",
			old:  makeFC("app").Obj(),
			new:  slots(makeFC("app").SavepointGeneration(1)).Obj(),
			want: field.ErrorList{forbidden(path("spec", "job", "savepointGeneration"), policy.RuleSavepointGenerationAlone)},
		},
		{
			name: "deny: savepointGeneration skipping ahead with another change reports both",
			old:  makeFC("app").Obj(),
			new:  slots(makeFC("app").SavepointGeneration(7)).Obj(),
			want: field.ErrorList{
				invalid(path("spec", "job", "savepointGeneration"), int32(7), policy.RuleSavepointGeneration),
				forbidden(path("spec", "job", "savepointGeneration"), policy.RuleSavepointGenerationAlone),
			},
		},
		{
			name: "deny: cancelRequested and savepointGeneration together",
			old:  makeFC("app").Obj(),
			new:  makeFC("app").CancelRequested(true).SavepointGeneration(1).Obj(),
			want: field.ErrorList{
				forbidden(path("spec", "job", "cancelRequested"), policy.RuleCancelAlone),
				forbidden(path("spec", "job", "savepointGeneration"), policy.RuleSavepointGenerationAlone),
			},
		},

		// user-control annotation
		{name: "allow: savepoint requested on a running job", old: running().Obj(), new: running().UserControl("savepoint").Obj()},
		{name: "allow: job-cancel requested on a running job", old: running().Obj(), new: running().UserControl("job-cancel").Obj()},
		{
			name: "deny: unknown user control",
			old:  running().Obj(),
			new:  running().UserControl("restart").Obj(),
			want: field.ErrorList{notSupported(pathUserControl, "restart", policy.RuleUserControlValue)},
		},
		{
			name: "deny: user control changed while a control is in progress",
			old:  running().UserControl("savepoint").ControlStatus("savepoint", v1beta1.ControlStateInProgress).Obj(),
			new:  running().UserControl("job-cancel").ControlStatus("savepoint", v1beta1.ControlStateInProgress).Obj(),
			want: field.ErrorList{forbidden(pathUserControl, policy.RuleUserControlInProgress)},
		},
		{
			name: "allow: unchanged user control is not judged again",
			old:  makeFC("app").JobStatus(v1beta1.JobStateSucceeded).UserControl("savepoint").ControlStatus("savepoint", v1beta1.ControlStateInProgress).Obj(),
			new:  makeFC("app").JobStatus(v1beta1.JobStateSucceeded).UserControl("savepoint").Label("x", "y").Obj(),
		},
		{name: "allow: user control set after the last one finished", old: running().ControlStatus("savepoint", v1beta1.ControlStateSucceeded).Obj(), new: running().UserControl("savepoint").Obj()},
		{
			name: "deny: savepoint on a session cluster",
			old:  running().SessionCluster().Obj(),
			new:  running().SessionCluster().UserControl("savepoint").Obj(),
			want: field.ErrorList{forbidden(pathUserControl, policy.RuleUserControlNotApplicable)},
		},
		{
			name: "deny: job-cancel on a session cluster",
			old:  makeFC("app").SessionCluster().Obj(),
			new:  makeFC("app").SessionCluster().UserControl("job-cancel").Obj(),
			want: field.ErrorList{forbidden(pathUserControl, policy.RuleUserControlNotApplicable)},
		},
		{
			name: "deny: savepoint without savepointsDir",
			old:  running().SavepointsDir("").Obj(),
			new:  running().SavepointsDir("").UserControl("savepoint").Obj(),
			want: field.ErrorList{forbidden(pathUserControl, policy.RuleUserControlNotApplicable)},
		},
		{
			name: "deny: savepoint before the job started",
			old:  makeFC("app").Obj(),
			new:  makeFC("app").UserControl("savepoint").Obj(),
			want: field.ErrorList{forbidden(pathUserControl, policy.RuleUserControlNotApplicable)},
		},
		{
			name: "deny: savepoint on a cancelled job",
			old:  makeFC("app").JobStatus(v1beta1.JobStateCancelled).Obj(),
			new:  makeFC("app").JobStatus(v1beta1.JobStateCancelled).UserControl("savepoint").Obj(),
			want: field.ErrorList{forbidden(pathUserControl, policy.RuleUserControlNotApplicable)},
		},
		{
			name: "deny: job-cancel before the job started",
			old:  makeFC("app").Obj(),
			new:  makeFC("app").UserControl("job-cancel").Obj(),
			want: field.ErrorList{forbidden(pathUserControl, policy.RuleUserControlNotApplicable)},
		},
		{
			name: "deny: job-cancel on a failed job that will not restart",
			old:  makeFC("app").JobStatus(v1beta1.JobStateFailed).Obj(),
			new:  makeFC("app").JobStatus(v1beta1.JobStateFailed).UserControl("job-cancel").Obj(),
			want: field.ErrorList{forbidden(pathUserControl, policy.RuleUserControlNotApplicable)},
		},
		{
			name: "allow: job-cancel on a failed job the operator will restart from a recent savepoint",
			old: makeFC("app").RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).MaxStateAge(600).
				JobStatus(v1beta1.JobStateFailed).JobSavepoint("s3://sp/1", now.Add(-5*time.Minute)).JobCompletionTime(now.Add(-time.Minute)).Obj(),
			new: makeFC("app").RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).MaxStateAge(600).
				JobStatus(v1beta1.JobStateFailed).JobSavepoint("s3://sp/1", now.Add(-5*time.Minute)).JobCompletionTime(now.Add(-time.Minute)).
				UserControl("job-cancel").Obj(),
		},
		{
			// With a JobManager Deployment the controller never restores a
			// failed job from a savepoint (flinkcluster.ShouldRestart), so the job has terminated.
			name: "deny: job-cancel on a failed job with restartPolicy FromSavepointOnFailure and a recent savepoint, deploymentType Deployment",
			old: deploymentFC().RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).MaxStateAge(600).
				JobStatus(v1beta1.JobStateFailed).JobSavepoint("s3://sp/1", now.Add(-5*time.Minute)).JobCompletionTime(now.Add(-time.Minute)).Obj(),
			new: deploymentFC().RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).MaxStateAge(600).
				JobStatus(v1beta1.JobStateFailed).JobSavepoint("s3://sp/1", now.Add(-5*time.Minute)).JobCompletionTime(now.Add(-time.Minute)).
				UserControl("job-cancel").Obj(),
			want: field.ErrorList{forbidden(pathUserControl, policy.RuleUserControlNotApplicable)},
		},
		{
			name: "allow: job-cancel on a failed job with restartPolicy FromSavepointOnFailure and a recent savepoint, deploymentType Job set explicitly",
			old: makeFC("app").DeploymentType(v1beta1.JobManagerDeploymentTypeJob).RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).MaxStateAge(600).
				JobStatus(v1beta1.JobStateFailed).JobSavepoint("s3://sp/1", now.Add(-5*time.Minute)).JobCompletionTime(now.Add(-time.Minute)).Obj(),
			new: makeFC("app").DeploymentType(v1beta1.JobManagerDeploymentTypeJob).RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).MaxStateAge(600).
				JobStatus(v1beta1.JobStateFailed).JobSavepoint("s3://sp/1", now.Add(-5*time.Minute)).JobCompletionTime(now.Add(-time.Minute)).
				UserControl("job-cancel").Obj(),
		},
		{
			name: "allow: job-cancel on a running job, deploymentType Deployment",
			old:  deploymentFC().JobStatus(v1beta1.JobStateRunning).Obj(),
			new:  deploymentFC().JobStatus(v1beta1.JobStateRunning).UserControl("job-cancel").Obj(),
		},
		{
			name: "deny: job-cancel on a failed job that will not restart, deploymentType Deployment",
			old:  deploymentFC().JobStatus(v1beta1.JobStateFailed).Obj(),
			new:  deploymentFC().JobStatus(v1beta1.JobStateFailed).UserControl("job-cancel").Obj(),
			want: field.ErrorList{forbidden(pathUserControl, policy.RuleUserControlNotApplicable)},
		},
	})
}

func TestValidateUpdateJob(t *testing.T) {
	skip := func() *builder.FlinkClusterWrapper {
		return makeFC("app").TakeSavepointOnUpdate(false).MaxStateAge(600).JobStatus(v1beta1.JobStateRunning)
	}
	runUpdateCases(t, []updateCase{
		{
			name: "deny: update of a job cluster created without savepointsDir",
			old:  makeFC("app").SavepointsDir("").Obj(),
			new:  makeFC("app").SavepointsDir("").TaskManagerReplicas(5).Obj(),
			want: field.ErrorList{forbidden(path("spec", "job"), policy.RuleJobUpdateRequiresSavepointsDir)},
		},
		{
			name: "deny: adding savepointsDir to a job cluster created without it",
			old:  makeFC("app").SavepointsDir("").Obj(),
			new:  makeFC("app").Obj(),
			want: field.ErrorList{forbidden(path("spec", "job"), policy.RuleJobUpdateRequiresSavepointsDir)},
		},
		{
			name: "allow: a spec that differs only by defaults is no update, even without savepointsDir",
			old:  makeFC("app").SavepointsDir("").NoJobMode().JarFile("job.jar").Obj(),
			new:  defaulted(makeFC("app").SavepointsDir("").NoJobMode().JarFile("job.jar").Label("team", "data").Obj()),
		},
		{
			name: "deny: a real change next to defaults on a job cluster without savepointsDir",
			old:  makeFC("app").SavepointsDir("").Obj(),
			new:  defaulted(makeFC("app").SavepointsDir("").Parallelism(3).Obj()),
			want: field.ErrorList{forbidden(path("spec", "job"), policy.RuleJobUpdateRequiresSavepointsDir)},
		},
		{
			name: "deny: a change of a defaulted field next to defaults on a job cluster without savepointsDir",
			old:  makeFC("app").SavepointsDir("").Obj(),
			new:  defaulted(makeFC("app").SavepointsDir("").TaskManagerReplicas(5).Obj()),
			want: field.ErrorList{forbidden(path("spec", "job"), policy.RuleJobUpdateRequiresSavepointsDir)},
		},
		{
			name: "allow: dropping a defaulted Flink property is no update (Default puts it back)",
			old:  defaulted(deploymentFC().SavepointsDir("").Obj()),
			new: func() *v1beta1.FlinkCluster {
				fc := defaulted(deploymentFC().SavepointsDir("").Obj())
				delete(fc.Spec.FlinkProperties, policy.PropertyShutdownOnApplicationFinish)
				return fc
			}(),
		},
		{
			name: "deny: changing a defaulted Flink property is an update",
			old:  defaulted(deploymentFC().SavepointsDir("").Obj()),
			new:  defaulted(deploymentFC().SavepointsDir("").FlinkProperty(policy.PropertySubmitFailedJobOnApplicationError, "false").Obj()),
			want: field.ErrorList{forbidden(path("spec", "job"), policy.RuleJobUpdateRequiresSavepointsDir)},
		},
		{name: "allow: update of a session cluster without savepointsDir", old: makeFC("app").SessionCluster().Obj(), new: slots(makeFC("app").SessionCluster()).Obj()},
		{name: "allow: update of a running job that takes a savepoint first", old: makeFC("app").JobStatus(v1beta1.JobStateRunning).Obj(), new: slots(makeFC("app").JobStatus(v1beta1.JobStateRunning)).Obj(),
			warnings: []string{fmt.Sprintf(policy.WarningPlanSavepointFormat, "s3://bucket/savepoints/app", "upgradeMode savepoint")}},
		{name: "allow: update without a job status", old: makeFC("app").Obj(), new: slots(makeFC("app")).Obj()},
		{
			name:     "allow: update skipping the savepoint with a recent one",
			old:      skip().JobSavepoint("s3://sp/1", now.Add(-9*time.Minute)).Obj(),
			new:      slots(skip().JobSavepoint("s3://sp/1", now.Add(-9*time.Minute))).Obj(),
			warnings: []string{fmt.Sprintf(policy.WarningPlanNoStopFormat, "s3://sp/1")},
		},
		{
			name: "deny: update skipping the savepoint with a stale one",
			old:  skip().JobSavepoint("s3://sp/1", now.Add(-11*time.Minute)).Obj(),
			new:  slots(skip().JobSavepoint("s3://sp/1", now.Add(-11*time.Minute))).Obj(),
			want: field.ErrorList{forbidden(path("spec", "job"), policy.RuleJobUpdateRequiresRecentSavepoint)},
		},
		{
			name:     "allow: update skipping the savepoint from an explicit savepoint",
			old:      skip().Obj(),
			new:      slots(skip().FromSavepoint("s3://sp/0")).Obj(),
			warnings: []string{fmt.Sprintf(policy.WarningPlanFromSavepointFormat, "s3://sp/0")},
		},
		{
			// The controller restores only a fromSavepoint the update
			// changes, so the rule counts no other.
			name: "deny: update skipping the savepoint with fromSavepoint left as the running revision has it",
			old: func() *v1beta1.FlinkCluster {
				fc := skip().FromSavepoint("s3://sp/0").Obj()
				fc.Status.Components.Job.SpecFromSavepoint = "s3://sp/0"
				return fc
			}(),
			new: func() *v1beta1.FlinkCluster {
				fc := slots(skip().FromSavepoint("s3://sp/0")).Obj()
				fc.Status.Components.Job.SpecFromSavepoint = "s3://sp/0"
				return fc
			}(),
			want: field.ErrorList{forbidden(path("spec", "job"), policy.RuleJobUpdateRequiresRecentSavepoint)},
		},
		{
			name: "allow: update skipping the savepoint with fromSavepoint changed",
			old: func() *v1beta1.FlinkCluster {
				fc := skip().FromSavepoint("s3://sp/0").Obj()
				fc.Status.Components.Job.SpecFromSavepoint = "s3://sp/0"
				return fc
			}(),
			new:      slots(skip().FromSavepoint("s3://sp/1")).Obj(),
			warnings: []string{fmt.Sprintf(policy.WarningPlanFromSavepointFormat, "s3://sp/1")},
		},
		{
			name: "deny: update of a stopped job without a savepoint",
			old:  makeFC("app").JobStatus(v1beta1.JobStateCancelled).Obj(),
			new:  slots(makeFC("app").JobStatus(v1beta1.JobStateCancelled)).Obj(),
			want: field.ErrorList{forbidden(path("spec", "job"), policy.RuleJobUpdateRequiresRecentSavepoint)},
		},
		{
			name: "allow: update of a stopped job with a final savepoint",
			old:  makeFC("app").JobStatus(v1beta1.JobStateCancelled).FinalSavepoint(true).Obj(),
			new:  slots(makeFC("app").JobStatus(v1beta1.JobStateCancelled).FinalSavepoint(true)).Obj(),
		},
		{
			name: "allow: update of a failed job with a savepoint recent at its end",
			old:  skip().JobStatus(v1beta1.JobStateFailed).JobSavepoint("s3://sp/1", now.Add(-2*time.Hour)).JobCompletionTime(now.Add(-2*time.Hour + time.Minute)).Obj(),
			new:  slots(skip().JobStatus(v1beta1.JobStateFailed).JobSavepoint("s3://sp/1", now.Add(-2*time.Hour)).JobCompletionTime(now.Add(-2*time.Hour + time.Minute))).Obj(),
		},
		{
			name: "allow: update while the job is updating and the savepoint is skipped",
			old:  skip().JobStatus(v1beta1.JobStateUpdating).Obj(),
			new:  slots(skip().JobStatus(v1beta1.JobStateUpdating)).Obj(),
		},
		{
			name: "deny: nil old object fails closed",
			old:  nil,
			new:  makeFC("app").Obj(),
			want: field.ErrorList{{Type: field.ErrorTypeInternal, Origin: policy.RuleNoObject}},
		},
		{
			name: "deny: nil new object fails closed",
			old:  makeFC("app").Obj(),
			new:  nil,
			want: field.ErrorList{{Type: field.ErrorTypeInternal, Origin: policy.RuleNoObject}},
		},
	})
}

func TestValidateUpdateMalformedSavepointTime(t *testing.T) {
	old := makeFC("app").TakeSavepointOnUpdate(false).MaxStateAge(600).JobStatus(v1beta1.JobStateRunning).Obj()
	old.Status.Components.Job.SavepointLocation = "s3://sp/1"
	old.Status.Components.Job.SavepointTime = "yesterday"
	fc := old.DeepCopy()
	fc.Spec.FlinkProperties = map[string]string{"taskmanager.numberOfTaskSlots": "4"}

	errs, _ := policy.Validator{Clock: clocktesting.NewFakePassiveClock(now)}.ValidateUpdate(old, fc)
	checkErrors(t, field.ErrorList{forbidden(path("spec", "job"), policy.RuleJobUpdateRequiresRecentSavepoint)}, errs)
}

// TestValidateUpdateUsesTheClock proves the job-update rule reads the injected clock: the
// same objects pass before the savepoint ages out and fail after.
func TestValidateUpdateUsesTheClock(t *testing.T) {
	taken := now.Add(-5 * time.Minute)
	w := makeFC("app").TakeSavepointOnUpdate(false).MaxStateAge(600).JobStatus(v1beta1.JobStateRunning).JobSavepoint("s3://sp/1", taken)
	old, fc := w.Obj(), slots(w.Clone()).Obj()

	clock := clocktesting.NewFakePassiveClock(taken.Add(10 * time.Minute))
	v := policy.Validator{Clock: clock}
	if errs, _ := v.ValidateUpdate(old, fc); len(errs) != 0 {
		t.Fatalf("savepoint exactly maxStateAgeToRestoreSeconds old: got %v, want no errors", errs)
	}
	clock.SetTime(taken.Add(10*time.Minute + time.Second))
	errs, _ := v.ValidateUpdate(old, fc)
	checkErrors(t, field.ErrorList{forbidden(path("spec", "job"), policy.RuleJobUpdateRequiresRecentSavepoint)}, errs)
}
