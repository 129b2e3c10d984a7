package celrules

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// Field paths of the rules' errors, as the API server reports them.
const (
	pathRoot               = "<nil>" // rules on the resource root have no fieldPath
	pathDeploymentType     = "spec.jobManager.deploymentType"
	pathTMDeploymentType   = "spec.taskManager.deploymentType"
	pathJob                = "spec.job"
	pathSavepointsDir      = "spec.job.savepointsDir"
	pathCancelRequested    = "spec.job.cancelRequested"
	pathFlinkProperties    = "spec.flinkProperties"
	pathJobMode            = "spec.job.mode"
	pathHAType             = "spec.flinkProperties[high-availability.type]"
	pathHAStorageDir       = "spec.flinkProperties[high-availability.storageDir]"
	pathJMReplicas         = "spec.jobManager.replicas"
	pathShutdownOnFinish   = "spec.flinkProperties[execution.shutdown-on-application-finish]"
	pathGrace              = "spec.jobManager.terminationGracePeriodSeconds"
	pathParallelism        = "spec.job.parallelism"
	pathJarFile            = "spec.job.jarFile"
	pathMaxStateAge        = "spec.job.maxStateAgeToRestoreSeconds"
	keyShutdownOnFinish    = "execution.shutdown-on-application-finish"
	keyHAType              = "high-availability.type"
	keyHALegacy            = "high-availability"
	keyHAStorageDir        = "high-availability.storageDir"
	longName48, longName49 = "a23456789012345678901234567890123456789012345678", "a234567890123456789012345678901234567890123456789"
)

// fieldErr is the part of a field.Error a rule decides: its type and path.
type fieldErr struct {
	Type  field.ErrorType
	Field string
}

func invalid(path string) fieldErr   { return fieldErr{field.ErrorTypeInvalid, path} }
func forbidden(path string) fieldErr { return fieldErr{field.ErrorTypeForbidden, path} }
func required(path string) fieldErr  { return fieldErr{field.ErrorTypeRequired, path} }

func mk(name string) *builder.FlinkClusterWrapper { return builder.MakeFlinkCluster(name, "default") }

// deployment is an application cluster with a JobManager Deployment and Kubernetes HA: the
// smallest cluster the Deployment rules accept.
func deployment() *builder.FlinkClusterWrapper {
	return mk("app").DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).HA()
}

// validateLikeAPIServer converts, defaults (both objects, as the API server has defaulted
// the stored one too) and validates; old nil means create.
func validateLikeAPIServer(t *testing.T, v *Validator, obj, old *v1beta1.FlinkCluster) field.ErrorList {
	t.Helper()
	toU := func(fc *v1beta1.FlinkCluster) map[string]any {
		if fc == nil {
			return nil
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fc)
		require.NoError(t, err)
		v.Default(u)
		return u
	}
	return v.Validate(context.Background(), toU(obj), toU(old))
}

type ruleCase struct {
	name string
	old  *v1beta1.FlinkCluster // nil: create
	obj  *v1beta1.FlinkCluster
	want []fieldErr
}

func ruleCases() []ruleCase {
	const (
		dep  = v1beta1.JobManagerDeploymentTypeDeployment
		job  = v1beta1.JobManagerDeploymentTypeJob
		none = v1beta1.JobManagerDeploymentType("")
	)
	return []ruleCase{
		// Root: the cluster name.
		{name: "allow: minimal application cluster", obj: mk("app").Obj()},
		{name: "allow: name of 48 characters", obj: mk(longName48).Obj()},
		{name: "deny: name of 49 characters", obj: mk(longName49).Obj(), want: []fieldErr{invalid(pathRoot)}},
		{name: "deny: name with a dot", obj: mk("app.v1").Obj(), want: []fieldErr{invalid(pathRoot)}},
		{name: "deny: name starting with a digit", obj: mk("1app").Obj(), want: []fieldErr{invalid(pathRoot)}},
		{name: "deny: name ending with a hyphen", obj: mk("app-").Obj(), want: []fieldErr{invalid(pathRoot)}},

		// spec: deploymentType is immutable, unset meaning Job.
		{name: "deny: deploymentType unset to Deployment", old: mk("app").HA().Obj(), obj: deployment().Obj(),
			want: []fieldErr{forbidden(pathDeploymentType)}},
		{name: "deny: deploymentType Deployment to unset", old: deployment().Obj(), obj: deployment().DeploymentType(none).Obj(),
			want: []fieldErr{forbidden(pathDeploymentType)}},
		{name: "deny: deploymentType Job to Deployment", old: mk("app").HA().DeploymentType(job).Obj(), obj: deployment().Obj(),
			want: []fieldErr{forbidden(pathDeploymentType)}},
		{name: "deny: deploymentType Deployment to Job", old: deployment().Obj(), obj: deployment().DeploymentType(job).Obj(),
			want: []fieldErr{forbidden(pathDeploymentType)}},
		{name: "deny: jobManager absent to Deployment", old: mk("app").HA().NilJobManager().Obj(), obj: deployment().Obj(),
			want: []fieldErr{forbidden(pathDeploymentType)}},
		{name: "deny: Deployment to jobManager absent", old: deployment().Obj(), obj: deployment().NilJobManager().Obj(),
			want: []fieldErr{forbidden(pathDeploymentType)}},
		{name: "allow: deploymentType unset to Job", old: mk("app").Obj(), obj: mk("app").DeploymentType(job).Obj()},
		{name: "allow: deploymentType Job to unset", old: mk("app").DeploymentType(job).Obj(), obj: mk("app").DeploymentType(none).Obj()},
		{name: "allow: jobManager absent to Job", old: mk("app").NilJobManager().Obj(), obj: mk("app").DeploymentType(job).Obj()},

		// spec: taskManager deploymentType is immutable, unset meaning StatefulSet.
		{name: "deny: taskManager StatefulSet to Deployment", old: mk("app").TaskManagerDeploymentType(v1beta1.TaskManagerDeploymentTypeStatefulSet).Obj(),
			obj:  mk("app").TaskManagerDeploymentType(v1beta1.TaskManagerDeploymentTypeDeployment).Obj(),
			want: []fieldErr{forbidden(pathTMDeploymentType)}},
		{name: "allow: taskManager absent to StatefulSet", old: mk("app").NilTaskManager().Obj(),
			obj: mk("app").TaskManagerDeploymentType(v1beta1.TaskManagerDeploymentTypeStatefulSet).Obj()},

		// spec: session and job clusters do not convert.
		{name: "deny: session cluster to job cluster", old: mk("app").SessionCluster().Obj(), obj: mk("app").Obj(),
			want: []fieldErr{forbidden(pathJob)}},
		{name: "deny: job cluster to session cluster", old: mk("app").Obj(), obj: mk("app").SessionCluster().Obj(),
			want: []fieldErr{forbidden(pathJob), required(pathSavepointsDir)}},
		{name: "allow: session cluster update", old: mk("app").SessionCluster().Obj(), obj: mk("app").SessionCluster().Image("flink:2.2.2").Obj()},

		// spec: savepointsDir cannot be removed.
		{name: "deny: savepointsDir removed", old: mk("app").Obj(), obj: mk("app").SavepointsDir("").Obj(),
			want: []fieldErr{required(pathSavepointsDir)}},
		{name: "deny: savepointsDir emptied", old: mk("app").Obj(), obj: mk("app").Job(func(j *v1beta1.JobSpec) { *j.SavepointsDir = "" }).Obj(),
			want: []fieldErr{required(pathSavepointsDir)}},
		{name: "allow: savepointsDir changed", old: mk("app").Obj(), obj: mk("app").SavepointsDir("gs://other/savepoints").Obj()},
		{name: "allow: savepointsDir added", old: mk("app").SavepointsDir("").Obj(), obj: mk("app").Obj()},

		// spec: cancelRequested does not go back.
		{name: "deny: cancelRequested true to false", old: mk("app").CancelRequested(true).Obj(), obj: mk("app").CancelRequested(false).Obj(),
			want: []fieldErr{forbidden(pathCancelRequested)}},
		{name: "deny: cancelRequested true to unset", old: mk("app").CancelRequested(true).Obj(), obj: mk("app").Obj(),
			want: []fieldErr{forbidden(pathCancelRequested)}},
		{name: "allow: cancelRequested false to true", old: mk("app").CancelRequested(false).Obj(), obj: mk("app").CancelRequested(true).Obj()},
		{name: "allow: cancelRequested stays true", old: mk("app").CancelRequested(true).Obj(), obj: mk("app").CancelRequested(true).Image("flink:2.2.2").Obj()},

		// spec: HA is not switched on or off.
		{name: "deny: HA switched on", old: mk("app").Obj(), obj: mk("app").HA().Obj(), want: []fieldErr{forbidden(pathFlinkProperties)}},
		{name: "deny: HA switched off", old: mk("app").HA().Obj(), obj: mk("app").Obj(), want: []fieldErr{forbidden(pathFlinkProperties)}},
		{name: "deny: HA switched off with NONE", old: mk("app").HA().Obj(), obj: mk("app").HA().FlinkProperty(keyHAType, "NONE").Obj(),
			want: []fieldErr{forbidden(pathFlinkProperties)}},
		{name: "allow: HA kubernetes to zookeeper", old: mk("app").HA().Obj(), obj: mk("app").HA().FlinkProperty(keyHAType, "zookeeper").Obj()},
		{name: "allow: HA key renamed from legacy to type", old: mk("app").FlinkProperty(keyHALegacy, "zookeeper").Obj(),
			obj: mk("app").FlinkProperty(keyHAType, "zookeeper").Obj()},
		{name: "allow: HA none to NONE", old: mk("app").FlinkProperty(keyHAType, "none").Obj(), obj: mk("app").FlinkProperty(keyHAType, "NONE").Obj()},

		// spec: deploymentType Deployment requires an application cluster.
		{name: "allow: Deployment with HA", obj: deployment().Obj()},
		{name: "deny: Deployment in Detached mode", obj: deployment().JobMode(v1beta1.JobModeDetached).JarFile("job.jar").Obj(),
			want: []fieldErr{invalid(pathJobMode)}},
		{name: "deny: Deployment with mode unset", obj: deployment().NoJobMode().JarFile("job.jar").Obj(),
			want: []fieldErr{invalid(pathJobMode)}},
		{name: "deny: Deployment session cluster", obj: deployment().SessionCluster().Obj(), want: []fieldErr{invalid(pathJobMode)}},
		{name: "deny: Deployment update from Application to Detached", old: deployment().Obj(),
			obj: deployment().JobMode(v1beta1.JobModeDetached).JarFile("job.jar").Obj(), want: []fieldErr{invalid(pathJobMode)}},
		{name: "allow: Deployment in Detached mode already", old: deployment().JobMode(v1beta1.JobModeDetached).JarFile("job.jar").Obj(),
			obj: deployment().JobMode(v1beta1.JobModeDetached).JarFile("job.jar").Image("flink:2.2.2").Obj()},

		// spec: deploymentType Deployment requires HA.
		{name: "deny: Deployment without HA", obj: deployment().DeleteFlinkProperty(keyHAType).Obj(), want: []fieldErr{required(pathHAType)}},
		{name: "deny: Deployment with HA type NONE", obj: deployment().FlinkProperty(keyHAType, "NONE").Obj(), want: []fieldErr{required(pathHAType)}},
		{name: "deny: Deployment with HA type None", obj: deployment().FlinkProperty(keyHAType, "None").Obj(), want: []fieldErr{required(pathHAType)}},
		{name: "deny: Deployment with empty HA type and legacy none", obj: deployment().FlinkProperty(keyHAType, "").FlinkProperty(keyHALegacy, "none").Obj(),
			want: []fieldErr{required(pathHAType)}},
		{name: "deny: Deployment with HA zookeeper", obj: deployment().FlinkProperty(keyHAType, "zookeeper").Obj(),
			want: []fieldErr{invalid(pathHAType)}},
		{name: "deny: Deployment with an HA factory class", obj: deployment().FlinkProperty(keyHAType, "org.example.MyHAServicesFactory").Obj(),
			want: []fieldErr{invalid(pathHAType)}},
		{name: "allow: Deployment with the Kubernetes HA factory class",
			obj: deployment().FlinkProperty(keyHAType, "org.apache.flink.kubernetes.highavailability.KubernetesHaServicesFactory").Obj()},
		{name: "deny: Deployment HA kubernetes to zookeeper on update", old: deployment().Obj(), obj: deployment().FlinkProperty(keyHAType, "zookeeper").Obj(),
			want: []fieldErr{invalid(pathHAType)}},
		{name: "allow: Deployment with zookeeper HA already (ratcheting)", old: deployment().FlinkProperty(keyHAType, "zookeeper").Obj(),
			obj: deployment().FlinkProperty(keyHAType, "zookeeper").Image("flink:2.2.2").Obj()},
		{name: "allow: Deployment with the legacy HA key", obj: deployment().DeleteFlinkProperty(keyHAType).FlinkProperty(keyHALegacy, "KUBERNETES").Obj()},
		{name: "allow: Deployment with legacy HA key and empty type", obj: deployment().FlinkProperty(keyHAType, "").FlinkProperty(keyHALegacy, "kubernetes").Obj()},
		{name: "deny: Deployment HA type set but legacy key none ignored", obj: deployment().FlinkProperty(keyHAType, "none").FlinkProperty(keyHALegacy, "kubernetes").Obj(),
			want: []fieldErr{required(pathHAType)}},
		{name: "deny: Deployment HA switched off on update", old: deployment().Obj(), obj: deployment().FlinkProperty(keyHAType, "NONE").Obj(),
			want: []fieldErr{forbidden(pathFlinkProperties), required(pathHAType)}},
		{name: "allow: Deployment without HA already (ratcheting)", old: deployment().DeleteFlinkProperty(keyHAType).Obj(),
			obj: deployment().DeleteFlinkProperty(keyHAType).Image("flink:2.2.2").Obj()},

		// spec: deploymentType Deployment requires an HA storageDir.
		{name: "deny: Deployment without HA storageDir", obj: deployment().DeleteFlinkProperty(keyHAStorageDir).Obj(), want: []fieldErr{required(pathHAStorageDir)}},
		{name: "deny: Deployment with empty HA storageDir", obj: deployment().FlinkProperty(keyHAStorageDir, "").Obj(), want: []fieldErr{required(pathHAStorageDir)}},
		{name: "deny: Deployment HA storageDir removed on update", old: deployment().Obj(), obj: deployment().DeleteFlinkProperty(keyHAStorageDir).Obj(),
			want: []fieldErr{required(pathHAStorageDir)}},
		{name: "allow: Deployment without HA storageDir already (ratcheting)", old: deployment().DeleteFlinkProperty(keyHAStorageDir).Obj(),
			obj: deployment().DeleteFlinkProperty(keyHAStorageDir).Image("flink:2.2.2").Obj()},

		// spec: deploymentType Deployment requires one JobManager.
		{name: "deny: Deployment with 2 JobManagers", obj: deployment().JobManagerReplicas(2).Obj(), want: []fieldErr{invalid(pathJMReplicas)}},
		{name: "allow: Job with 2 JobManagers (the schema's maximum, not a rule, refuses it)", obj: mk("app").JobManagerReplicas(2).Obj()},
		{name: "allow: Deployment with 2 JobManagers already (ratcheting)", old: deployment().JobManagerReplicas(2).Obj(),
			obj: deployment().JobManagerReplicas(2).Image("flink:2.2.2").Obj()},

		// spec: upgradeMode last-state needs a Deployment JobManager with Kubernetes HA.
		{name: "allow: last-state on a Deployment with Kubernetes HA", obj: lastState(deployment()).Obj()},
		// Both rules: a Deployment JobManager needs Kubernetes HA, and so does last-state.
		{name: "deny: last-state with ZooKeeper HA", obj: lastState(deployment()).FlinkProperty("high-availability.type", "zookeeper").Obj(),
			want: []fieldErr{invalid("spec.flinkProperties[high-availability.type]"), invalid("spec.job.upgradeMode")}},
		{name: "deny: last-state with a Job JobManager", obj: lastState(mk("app").HA()).Obj(),
			want: []fieldErr{invalid("spec.job.upgradeMode")}},

		// spec: deploymentType Deployment forbids shutdown-on-application-finish.
		{name: "deny: Deployment with shutdown-on-application-finish true", obj: deployment().FlinkProperty(keyShutdownOnFinish, "true").Obj(),
			want: []fieldErr{forbidden(pathShutdownOnFinish)}},
		{name: "deny: Deployment with shutdown-on-application-finish TRUE", obj: deployment().FlinkProperty(keyShutdownOnFinish, "TRUE").Obj(),
			want: []fieldErr{forbidden(pathShutdownOnFinish)}},
		{name: "allow: Deployment with shutdown-on-application-finish false", obj: deployment().FlinkProperty(keyShutdownOnFinish, "false").Obj()},
		{name: "allow: Job with shutdown-on-application-finish true", obj: mk("app").FlinkProperty(keyShutdownOnFinish, "true").Obj()},
		{name: "deny: Deployment shutdown-on-application-finish set true on update", old: deployment().Obj(),
			obj: deployment().FlinkProperty(keyShutdownOnFinish, "True").Obj(), want: []fieldErr{forbidden(pathShutdownOnFinish)}},
		{name: "allow: Deployment with shutdown-on-application-finish true already (ratcheting)", old: deployment().FlinkProperty(keyShutdownOnFinish, "TRUE").Obj(),
			obj: deployment().FlinkProperty(keyShutdownOnFinish, "true").Image("flink:2.2.2").Obj()},

		// spec.jobManager: grace period longer than the preStop delay.
		{name: "allow: grace longer than preStop", obj: mk("app").Grace(60).PreStop(30).Obj()},
		{name: "deny: grace equal to preStop", obj: mk("app").Grace(30).PreStop(30).Obj(), want: []fieldErr{invalid(pathGrace)}},
		{name: "deny: grace shorter than preStop", obj: mk("app").Grace(10).PreStop(30).Obj(), want: []fieldErr{invalid(pathGrace)}},
		{name: "allow: preStop without grace", obj: mk("app").PreStop(30).Obj()},

		// spec.job rules.
		{name: "deny: parallelism 0", obj: mk("app").Parallelism(0).Obj(), want: []fieldErr{invalid(pathParallelism)}},
		{name: "deny: parallelism negative", obj: mk("app").Parallelism(-1).Obj(), want: []fieldErr{invalid(pathParallelism)}},
		{name: "allow: parallelism 1", obj: mk("app").Parallelism(1).Obj()},
		{name: "deny: Detached job without jarFile", obj: mk("app").JobMode(v1beta1.JobModeDetached).Obj(), want: []fieldErr{required(pathJarFile)}},
		{name: "deny: job with mode unset without jarFile", obj: mk("app").NoJobMode().Obj(), want: []fieldErr{required(pathJarFile)}},
		{name: "allow: Blocking job with pyFile", obj: mk("app").JobMode(v1beta1.JobModeBlocking).PyFile("job.py").Obj()},
		{name: "allow: Detached job with pyModule", obj: mk("app").JobMode(v1beta1.JobModeDetached).PyModule("job").Obj()},
		{name: "deny: FromSavepointOnFailure without maxStateAge", obj: mk("app").RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).Obj(),
			want: []fieldErr{required(pathMaxStateAge)}},
		{name: "allow: FromSavepointOnFailure with maxStateAge", obj: mk("app").RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).MaxStateAge(600).Obj()},
		{name: "deny: takeSavepointOnUpdate false without maxStateAge", obj: mk("app").TakeSavepointOnUpdate(false).Obj(),
			want: []fieldErr{required(pathMaxStateAge)}},
		{name: "allow: takeSavepointOnUpdate false with maxStateAge", obj: mk("app").TakeSavepointOnUpdate(false).MaxStateAge(0).Obj()},
		{name: "deny: both maxStateAge rules", obj: mk("app").TakeSavepointOnUpdate(false).RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).Obj(),
			want: []fieldErr{required(pathMaxStateAge), required(pathMaxStateAge)}},
		{name: "deny: cancelRequested true on create", obj: mk("app").CancelRequested(true).Obj(), want: []fieldErr{forbidden(pathCancelRequested)}},
		{name: "allow: cancelRequested false on create", obj: mk("app").CancelRequested(false).Obj()},

		// Ratcheting through optionalOldSelf: an error the old object already had is allowed,
		// whether or not the value the rule sits on changed (the API server's own ratcheting
		// would keep it as soon as spec.job, or for the name rules the root, changes).
		{name: "allow: parallelism 0 already, job unchanged (ratcheting)", old: mk("app").Parallelism(0).Obj(),
			obj: mk("app").Parallelism(0).Image("flink:2.2.2").Obj()},
		{name: "allow: parallelism 0 already, job changed (ratcheting)", old: mk("app").Parallelism(0).Obj(),
			obj: mk("app").Parallelism(0).ClassName("org.example.Other").Obj()},
		{name: "allow: name too long already, spec changed (ratcheting)", old: mk(longName49).Obj(),
			obj: mk(longName49).Image("flink:2.2.2").Obj()},
		{name: "deny: parallelism 0 set on an update of a valid job", old: mk("app").Obj(),
			obj: mk("app").Parallelism(0).Obj(), want: []fieldErr{invalid(pathParallelism)}},
	}
}

// lastState sets spec.job.upgradeMode last-state.
func lastState(w *builder.FlinkClusterWrapper) *builder.FlinkClusterWrapper {
	m := v1beta1.UpgradeModeLastState
	return w.Job(func(j *v1beta1.JobSpec) { j.UpgradeMode = &m })
}

// TestValidateRules runs each rule's allow and deny cases through Validate after the
// API server's defaulting.
func TestValidateRules(t *testing.T) {
	v := validator(t)
	for _, tc := range ruleCases() {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, len(tc.want) == 0, strings.HasPrefix(tc.name, "allow:"), "case name says allow or deny")
			errs := validateLikeAPIServer(t, v, tc.obj, tc.old)
			got := make([]fieldErr, 0, len(errs))
			for _, e := range errs {
				got = append(got, fieldErr{e.Type, e.Field})
			}
			less := func(a, b fieldErr) bool { return a.Field+string(a.Type) < b.Field+string(b.Type) }
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(less), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("errors (-want +got):\n%s\nall errors: %v", diff, errs)
			}
		})
	}
}

// TestEveryRuleDenies checks that every rule of the CRD denied at least one case above: a
// rule that compiles but is never evaluated, or never fails, shows here.
func TestEveryRuleDenies(t *testing.T) {
	v := validator(t)
	rules := rules(t, v)
	denials := make([]int, len(rules))
	for _, tc := range ruleCases() {
		for _, e := range validateLikeAPIServer(t, v, tc.obj, tc.old) {
			i, err := ruleDenying(rules, e.Detail, tc.old != nil)
			require.NoError(t, err, "%s: %v", tc.name, e)
			denials[i]++
		}
	}
	for i, r := range rules {
		if denials[i] == 0 {
			t.Errorf("no case is denied by the rule at %q (%s): %s", r.Path, r.Message, r.Rule)
		}
	}
}

// TestValidateTypedMatchesValidate checks that the typed entry point gives the same errors
// as the unstructured one on undefaulted objects.
func TestValidateTypedMatchesValidate(t *testing.T) {
	v := validator(t)
	old := deployment().Obj()
	obj := deployment().DeploymentType(v1beta1.JobManagerDeploymentTypeJob).Parallelism(0).Obj()
	typed := v.ValidateTyped(context.Background(), obj, old)
	require.NotEmpty(t, typed)

	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	oldU, err := runtime.DefaultUnstructuredConverter.ToUnstructured(old)
	require.NoError(t, err)
	require.Equal(t, v.Validate(context.Background(), u, oldU), typed)
}

// TestValidateFailsClosed checks that missing objects are errors, not panics or passes.
func TestValidateFailsClosed(t *testing.T) {
	v := validator(t)
	require.NotEmpty(t, v.Validate(context.Background(), nil, nil))
	require.NotEmpty(t, v.ValidateTyped(context.Background(), nil, mk("app").Obj()))
	// An object with a spec of the wrong shape is an evaluation error, not an allowed object.
	errs := v.Validate(context.Background(), map[string]any{
		"apiVersion": "flinkoperator.k8s.io/v1beta1", "kind": "FlinkCluster",
		"metadata": map[string]any{"name": "app"},
		"spec":     map[string]any{"job": map[string]any{"parallelism": "many"}},
	}, nil)
	require.NotEmpty(t, errs)
}

// TestDefault checks that Default applies the CRD's structural defaults and prunes what the
// API server prunes.
func TestDefault(t *testing.T) {
	v := validator(t)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(mk("app").NoJobMode().JarFile("job.jar").Obj())
	require.NoError(t, err)
	u["spec"].(map[string]any)["noSuchField"] = "x"
	v.Default(u)

	spec := u["spec"].(map[string]any)
	require.NotContains(t, spec, "noSuchField", "unknown fields are pruned")
	require.Equal(t, int64(1), spec["jobManager"].(map[string]any)["replicas"], "jobManager default")
	require.Equal(t, int64(3), spec["taskManager"].(map[string]any)["replicas"], "taskManager default")
	require.Equal(t, "Detached", spec["job"].(map[string]any)["mode"], "job mode default")
	require.Equal(t, true, spec["recreateOnUpdate"])

	v.Default(nil) // no panic
}
