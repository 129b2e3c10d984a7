// Package paritycases is the shared table of FlinkCluster admissions on which the
// webhook's policy (package policy), the CRD's CEL rules evaluated in process (package
// celrules) and a real API server must agree. Each case is a create (Old nil) or an update,
// with the expected verdict and the field paths a denial must name.
//
// Every object is valid for all the policy's webhook-only rules (ports, resources, names,
// job updates) except the rule a case is about, so that a difference in verdict is a real
// disagreement between the evaluators and not an accident of the fixture. Old objects carry
// no job status: the job has not started, so the policy's job-update rules, which protect a
// running job's state, have nothing to refuse.
package paritycases

import (
	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// Case is one admission.
type Case struct {
	// Name says what the case checks, starting with "allow:" or "deny:".
	Name string
	// Old is the stored object of an update; nil for a create.
	Old *v1beta1.FlinkCluster
	// New is the object being created, or the new version of Old.
	New *v1beta1.FlinkCluster
	// Allowed is the verdict every evaluator must give.
	Allowed bool
	// Paths are field paths that every evaluator must name among the errors of a denial.
	Paths []string
	// CRDPaths, when not nil, replace Paths for the CRD's rules (celrules and the API
	// server): a rule on the resource root has no fieldPath and reports the root, "<nil>",
	// where the policy names metadata.name.
	CRDPaths []string
	// OldBreaksRules says that Old breaks a create rule of the CRD on its own: it stands for
	// a cluster stored before the rule existed (or reached through an update, like
	// cancelRequested true). An API server with the rule cannot create it; see the parity
	// test for how it is stored.
	OldBreaksRules bool
}

// Field paths of the rules under test, as all evaluators spell them.
const (
	PathRoot             = "<nil>"
	PathName             = "metadata.name"
	PathDeploymentType   = "spec.jobManager.deploymentType"
	PathTMDeploymentType = "spec.taskManager.deploymentType"
	PathJob              = "spec.job"
	PathSavepointsDir    = "spec.job.savepointsDir"
	PathCancelRequested  = "spec.job.cancelRequested"
	PathFlinkProperties  = "spec.flinkProperties"
	PathJobMode          = "spec.job.mode"
	PathHAType           = "spec.flinkProperties[high-availability.type]"
	PathHAStorageDir     = "spec.flinkProperties[high-availability.storageDir]"
	PathJMReplicas       = "spec.jobManager.replicas"
	PathShutdownOnFinish = "spec.flinkProperties[execution.shutdown-on-application-finish]"
	PathGrace            = "spec.jobManager.terminationGracePeriodSeconds"
	PathParallelism      = "spec.job.parallelism"
	PathJarFile          = "spec.job.jarFile"
	PathMaxStateAge      = "spec.job.maxStateAgeToRestoreSeconds"
	PathUpgradeMode      = "spec.job.upgradeMode"
)

// Flink configuration keys the rules read.
const (
	keyHAType           = "high-availability.type"
	keyHALegacy         = "high-availability"
	keyHAStorageDir     = "high-availability.storageDir"
	keyShutdownOnFinish = "execution.shutdown-on-application-finish"
)

const (
	namespace = "default"
	// otherImage is the "something else" an update changes.
	otherImage = "flink:2.2.1-java21"
	name48     = "a23456789012345678901234567890123456789012345678"
	name49     = name48 + "9"
)

func app() *builder.FlinkClusterWrapper { return builder.MakeFlinkCluster("app", namespace) }

func named(name string) *builder.FlinkClusterWrapper {
	return builder.MakeFlinkCluster(name, namespace)
}

// deployment is the smallest cluster the Deployment rules accept: an application cluster
// with a JobManager Deployment and Kubernetes HA.
func deployment() *builder.FlinkClusterWrapper {
	return app().DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).HA()
}

// upgradeMode sets spec.job.upgradeMode.
func upgradeMode(w *builder.FlinkClusterWrapper, m v1beta1.UpgradeMode) *builder.FlinkClusterWrapper {
	return w.Job(func(j *v1beta1.JobSpec) { j.UpgradeMode = &m })
}

func allow(name string, old, obj *v1beta1.FlinkCluster) Case {
	return Case{Name: name, Old: old, New: obj, Allowed: true}
}

func deny(name string, old, obj *v1beta1.FlinkCluster, paths ...string) Case {
	return Case{Name: name, Old: old, New: obj, Paths: paths}
}

// oldBreaks marks c's Old as breaking a create rule of the CRD.
func oldBreaks(c Case) Case {
	c.OldBreaksRules = true
	return c
}

// Cases returns the table; every call builds fresh objects, which callers may modify.
func Cases() []Case {
	const (
		job  = v1beta1.JobManagerDeploymentTypeJob
		none = v1beta1.JobManagerDeploymentType("")
	)
	rootDeny := func(name string, old, obj *v1beta1.FlinkCluster) Case {
		c := deny(name, old, obj, PathName)
		c.CRDPaths = []string{PathRoot}
		return c
	}

	return []Case{
		// Creates. The cluster name (rules on the resource root).
		allow("allow: minimal application cluster", nil, app().Obj()),
		allow("allow: name of 48 characters", nil, named(name48).Obj()),
		rootDeny("deny: name of 49 characters", nil, named(name49).Obj()),
		rootDeny("deny: name with a dot is not a DNS-1035 label", nil, named("app.v1").Obj()),
		rootDeny("deny: name starting with a digit", nil, named("1app").Obj()),

		// Creates. deploymentType Deployment requirements.
		allow("allow: Deployment with Kubernetes HA", nil, deployment().Obj()),
		deny("deny: Deployment in Detached mode", nil,
			deployment().JobMode(v1beta1.JobModeDetached).JarFile("local:///opt/flink/usrlib/job.jar").Obj(), PathJobMode),
		deny("deny: Deployment session cluster (no job)", nil, deployment().SessionCluster().Obj(), PathJobMode),
		deny("deny: Deployment without HA", nil, deployment().DeleteFlinkProperty(keyHAType).Obj(), PathHAType),
		// Only Kubernetes HA in Deployment mode: the controller checks and cleans up its
		// ConfigMaps and can do neither for ZooKeeper or another factory.
		deny("deny: Deployment with ZooKeeper HA", nil, deployment().FlinkProperty(keyHAType, "zookeeper").Obj(), PathHAType),
		deny("deny: Deployment with ZooKeeper HA in the legacy key", nil,
			deployment().DeleteFlinkProperty(keyHAType).FlinkProperty(keyHALegacy, "ZooKeeper").Obj(), PathHAType),
		deny("deny: Deployment with an HA factory class", nil,
			deployment().FlinkProperty(keyHAType, "org.example.flink.MyHaServicesFactory").Obj(), PathHAType),
		allow("allow: Deployment with the Kubernetes HA factory class", nil,
			deployment().FlinkProperty(keyHAType, "org.apache.flink.kubernetes.highavailability.KubernetesHaServicesFactory").Obj()),
		allow("allow: Deployment with HA type KUBERNETES", nil, deployment().FlinkProperty(keyHAType, "KUBERNETES").Obj()),
		allow("allow: Job mode with ZooKeeper HA", nil, app().HA().FlinkProperty(keyHAType, "zookeeper").Obj()),
		allow("allow: Job mode with an HA factory class", nil,
			app().HA().FlinkProperty(keyHAType, "org.example.flink.MyHaServicesFactory").Obj()),
		allow("allow: Deployment with the legacy high-availability key", nil,
			deployment().DeleteFlinkProperty(keyHAType).FlinkProperty(keyHALegacy, "KUBERNETES").Obj()),
		deny("deny: Deployment with HA type NONE", nil, deployment().FlinkProperty(keyHAType, "NONE").Obj(), PathHAType),
		deny("deny: Deployment with HA type None", nil, deployment().FlinkProperty(keyHAType, "None").Obj(), PathHAType),
		deny("deny: Deployment with empty HA type and legacy key none", nil,
			deployment().FlinkProperty(keyHAType, "").FlinkProperty(keyHALegacy, "none").Obj(), PathHAType),
		deny("deny: Deployment without HA storageDir", nil, deployment().DeleteFlinkProperty(keyHAStorageDir).Obj(), PathHAStorageDir),
		deny("deny: Deployment with 2 JobManagers", nil, deployment().JobManagerReplicas(2).Obj(), PathJMReplicas),
		deny("deny: Deployment with shutdown-on-application-finish true", nil,
			deployment().FlinkProperty(keyShutdownOnFinish, "true").Obj(), PathShutdownOnFinish),
		deny("deny: Deployment with shutdown-on-application-finish TRUE", nil,
			deployment().FlinkProperty(keyShutdownOnFinish, "TRUE").Obj(), PathShutdownOnFinish),
		allow("allow: Deployment with shutdown-on-application-finish false", nil,
			deployment().FlinkProperty(keyShutdownOnFinish, "false").Obj()),
		allow("allow: Job with shutdown-on-application-finish true", nil, app().FlinkProperty(keyShutdownOnFinish, "true").Obj()),

		// Creates. upgradeMode last-state needs a Deployment JobManager with Kubernetes HA.
		allow("allow: last-state on a Deployment with Kubernetes HA", nil, upgradeMode(deployment(), v1beta1.UpgradeModeLastState).Obj()),
		allow("allow: last-state with the Kubernetes HA factory class in mixed case", nil,
			upgradeMode(deployment(), v1beta1.UpgradeModeLastState).
				FlinkProperty(keyHAType, "org.apache.flink.kubernetes.highavailability.KubernetesHaServicesFactory").Obj()),
		allow("allow: last-state with the legacy high-availability key", nil,
			upgradeMode(deployment(), v1beta1.UpgradeModeLastState).DeleteFlinkProperty(keyHAType).FlinkProperty(keyHALegacy, "KUBERNETES").Obj()),
		deny("deny: last-state with ZooKeeper HA", nil,
			upgradeMode(deployment(), v1beta1.UpgradeModeLastState).FlinkProperty(keyHAType, "zookeeper").Obj(), PathUpgradeMode),
		deny("deny: last-state with an HA factory class", nil,
			upgradeMode(deployment(), v1beta1.UpgradeModeLastState).FlinkProperty(keyHAType, "org.example.flink.MyHaServicesFactory").Obj(), PathUpgradeMode),
		deny("deny: last-state with a Job JobManager and Kubernetes HA", nil,
			upgradeMode(app().HA(), v1beta1.UpgradeModeLastState).Obj(), PathUpgradeMode),
		deny("deny: last-state on a Job JobManager without HA", nil,
			upgradeMode(app(), v1beta1.UpgradeModeLastState).Obj(), PathUpgradeMode),
		allow("allow: stateless on a Job JobManager without HA", nil, upgradeMode(app(), v1beta1.UpgradeModeStateless).Obj()),
		// (A Deployment JobManager with ZooKeeper HA is denied by deployment-requires-kubernetes-ha.)
		allow("allow: savepoint on a Job JobManager with ZooKeeper HA", nil,
			upgradeMode(deployment(), v1beta1.UpgradeModeSavepoint).FlinkProperty(keyHAType, "zookeeper").
				DeploymentType(v1beta1.JobManagerDeploymentTypeJob).Obj()),

		// Updates. The last-state rule has no ratcheting: switching HA away from Kubernetes
		// under last-state is denied like a create.
		deny("deny: update of a last-state cluster to ZooKeeper HA",
			upgradeMode(deployment(), v1beta1.UpgradeModeLastState).Obj(),
			upgradeMode(deployment(), v1beta1.UpgradeModeLastState).FlinkProperty(keyHAType, "zookeeper").Obj(), PathUpgradeMode),
		allow("allow: update from savepoint to last-state",
			upgradeMode(deployment(), v1beta1.UpgradeModeSavepoint).Obj(),
			upgradeMode(deployment(), v1beta1.UpgradeModeLastState).Obj()),

		// Creates. The JobManager's shutdown timing.
		allow("allow: grace period longer than the preStop delay", nil, app().Grace(60).PreStop(30).Obj()),
		deny("deny: grace period equal to the preStop delay", nil, app().Grace(30).PreStop(30).Obj(), PathGrace),
		deny("deny: Deployment with grace period shorter than the preStop delay", nil, deployment().Grace(20).PreStop(30).Obj(), PathGrace),

		// Creates. The job.
		deny("deny: parallelism 0", nil, app().Parallelism(0).Obj(), PathParallelism),
		allow("allow: parallelism 4", nil, app().Parallelism(4).Obj()),
		deny("deny: Detached job without jarFile", nil, app().JobMode(v1beta1.JobModeDetached).Obj(), PathJarFile),
		deny("deny: job with mode unset (Detached) without jarFile", nil, app().NoJobMode().Obj(), PathJarFile),
		allow("allow: Detached job with jarFile", nil, app().JobMode(v1beta1.JobModeDetached).JarFile("local:///opt/flink/usrlib/job.jar").Obj()),
		allow("allow: Blocking job with pyFile", nil, app().JobMode(v1beta1.JobModeBlocking).PyFile("/opt/flink/job.py").Obj()),
		deny("deny: restartPolicy FromSavepointOnFailure without maxStateAgeToRestoreSeconds", nil,
			app().RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).Obj(), PathMaxStateAge),
		allow("allow: restartPolicy FromSavepointOnFailure with maxStateAgeToRestoreSeconds", nil,
			app().RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).MaxStateAge(600).Obj()),
		deny("deny: takeSavepointOnUpdate false without maxStateAgeToRestoreSeconds", nil,
			app().TakeSavepointOnUpdate(false).Obj(), PathMaxStateAge),
		allow("allow: takeSavepointOnUpdate false with maxStateAgeToRestoreSeconds", nil,
			app().TakeSavepointOnUpdate(false).MaxStateAge(300).Obj()),
		deny("deny: cancelRequested true on create", nil, app().CancelRequested(true).Obj(), PathCancelRequested),
		allow("allow: cancelRequested false on create", nil, app().CancelRequested(false).Obj()),

		// Updates. deploymentType is immutable; unset means Job.
		deny("deny: deploymentType unset to Deployment", app().HA().Obj(), deployment().Obj(), PathDeploymentType),
		deny("deny: deploymentType Deployment to unset", deployment().Obj(), deployment().DeploymentType(none).Obj(), PathDeploymentType),
		deny("deny: deploymentType Job to Deployment", app().HA().DeploymentType(job).Obj(), deployment().Obj(), PathDeploymentType),
		deny("deny: deploymentType Deployment to Job", deployment().Obj(), deployment().DeploymentType(job).Obj(), PathDeploymentType),
		allow("allow: deploymentType unset to Job", app().Obj(), app().DeploymentType(job).Obj()),
		allow("allow: deploymentType Job to unset", app().DeploymentType(job).Obj(), app().DeploymentType(none).Obj()),
		deny("deny: jobManager absent to Deployment", app().HA().NilJobManager().Obj(), deployment().Obj(), PathDeploymentType),
		deny("deny: Deployment to jobManager absent", deployment().Obj(), deployment().NilJobManager().Obj(), PathDeploymentType),
		allow("allow: jobManager absent to Job", app().NilJobManager().Obj(), app().DeploymentType(job).Obj()),

		// Updates. The taskManager workload and the cluster type are immutable.
		deny("deny: taskManager deploymentType StatefulSet to Deployment",
			app().TaskManagerDeploymentType(v1beta1.TaskManagerDeploymentTypeStatefulSet).Obj(),
			app().TaskManagerDeploymentType(v1beta1.TaskManagerDeploymentTypeDeployment).Obj(), PathTMDeploymentType),
		allow("allow: taskManager deploymentType unset to StatefulSet", app().Obj(),
			app().TaskManagerDeploymentType(v1beta1.TaskManagerDeploymentTypeStatefulSet).Obj()),
		deny("deny: session cluster to job cluster", app().SessionCluster().Obj(), app().Obj(), PathJob),
		deny("deny: job cluster to session cluster", app().Obj(), app().SessionCluster().Obj(), PathJob, PathSavepointsDir),
		deny("deny: session cluster to job cluster with cancelRequested true", app().SessionCluster().Obj(),
			app().CancelRequested(true).Obj(), PathJob, PathCancelRequested),
		allow("allow: session cluster update", app().SessionCluster().Obj(), app().SessionCluster().Image(otherImage).Obj()),

		// Updates. savepointsDir and cancelRequested only go one way.
		deny("deny: savepointsDir removed", app().Obj(), app().SavepointsDir("").Obj(), PathSavepointsDir),
		allow("allow: savepointsDir changed", app().Obj(), app().SavepointsDir("s3://bucket/savepoints/elsewhere").Obj()),
		allow("allow: cancelRequested false to true on its own", app().CancelRequested(false).Obj(), app().CancelRequested(true).Obj()),
		oldBreaks(deny("deny: cancelRequested true to false", app().CancelRequested(true).Obj(),
			app().CancelRequested(false).Obj(), PathCancelRequested)),

		// Updates. Flink HA is not switched on or off.
		deny("deny: HA switched on", app().Obj(), app().HA().Obj(), PathFlinkProperties),
		deny("deny: HA switched off", app().HA().Obj(), app().Obj(), PathFlinkProperties),
		allow("allow: HA Kubernetes to ZooKeeper", app().HA().Obj(), app().HA().FlinkProperty(keyHAType, "zookeeper").Obj()),
		allow("allow: HA none to NONE", app().FlinkProperty(keyHAType, "none").Obj(), app().FlinkProperty(keyHAType, "NONE").Obj()),

		// Updates. The Deployment requirements on an existing Deployment cluster.
		allow("allow: Deployment image update", deployment().Obj(), deployment().Image(otherImage).Obj()),
		deny("deny: Deployment HA switched off", deployment().Obj(), deployment().FlinkProperty(keyHAType, "NONE").Obj(),
			PathFlinkProperties, PathHAType),
		deny("deny: Deployment HA Kubernetes to ZooKeeper", deployment().Obj(), deployment().FlinkProperty(keyHAType, "zookeeper").Obj(), PathHAType),
		deny("deny: Deployment HA storageDir removed", deployment().Obj(), deployment().DeleteFlinkProperty(keyHAStorageDir).Obj(), PathHAStorageDir),
		deny("deny: Deployment mode Application to Detached", deployment().Obj(),
			deployment().JobMode(v1beta1.JobModeDetached).JarFile("local:///opt/flink/usrlib/job.jar").Obj(), PathJobMode),
		deny("deny: Deployment shutdown-on-application-finish set to True", deployment().Obj(),
			deployment().FlinkProperty(keyShutdownOnFinish, "True").Obj(), PathShutdownOnFinish),

		// Updates. Ratcheting: an old object that already breaks a rule stays editable.
		oldBreaks(allow("allow: Deployment without HA already, image update (ratcheting)",
			deployment().DeleteFlinkProperty(keyHAType).DeleteFlinkProperty(keyHAStorageDir).Obj(),
			deployment().DeleteFlinkProperty(keyHAType).DeleteFlinkProperty(keyHAStorageDir).Image(otherImage).Obj())),
		oldBreaks(allow("allow: Deployment with ZooKeeper HA already, image update (ratcheting)",
			deployment().FlinkProperty(keyHAType, "zookeeper").Obj(),
			deployment().FlinkProperty(keyHAType, "zookeeper").Image(otherImage).Obj())),
		oldBreaks(allow("allow: Deployment with ZooKeeper HA already, HA to a factory class (ratcheting)",
			deployment().FlinkProperty(keyHAType, "zookeeper").Obj(),
			deployment().FlinkProperty(keyHAType, "org.example.flink.MyHaServicesFactory").Obj())),
		oldBreaks(allow("allow: Deployment in Detached mode already, image update (ratcheting)",
			deployment().JobMode(v1beta1.JobModeDetached).JarFile("local:///opt/flink/usrlib/job.jar").Obj(),
			deployment().JobMode(v1beta1.JobModeDetached).JarFile("local:///opt/flink/usrlib/job.jar").Image(otherImage).Obj())),
		oldBreaks(allow("allow: Deployment with shutdown-on-application-finish TRUE already, image update (ratcheting)",
			deployment().FlinkProperty(keyShutdownOnFinish, "TRUE").Obj(),
			deployment().FlinkProperty(keyShutdownOnFinish, "TRUE").Image(otherImage).Obj())),
		oldBreaks(allow("allow: parallelism 0 already, image update (ratcheting)",
			app().Parallelism(0).Obj(), app().Parallelism(0).Image(otherImage).Obj())),
		oldBreaks(allow("allow: parallelism 0 already, job className changed (ratcheting)",
			app().Parallelism(0).Obj(), app().Parallelism(0).ClassName("org.example.OtherJob").Obj())),
		oldBreaks(allow("allow: Detached job without jarFile already, job className changed (ratcheting)",
			app().JobMode(v1beta1.JobModeDetached).Obj(), app().JobMode(v1beta1.JobModeDetached).ClassName("org.example.OtherJob").Obj())),
		oldBreaks(allow("allow: FromSavepointOnFailure without maxStateAgeToRestoreSeconds already, job className changed (ratcheting)",
			app().RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).Obj(),
			app().RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).ClassName("org.example.OtherJob").Obj())),
		oldBreaks(allow("allow: takeSavepointOnUpdate false without maxStateAgeToRestoreSeconds already, job className changed (ratcheting)",
			app().TakeSavepointOnUpdate(false).Obj(), app().TakeSavepointOnUpdate(false).ClassName("org.example.OtherJob").Obj())),
		oldBreaks(allow("allow: grace period equal to the preStop delay already, jobManager changed (ratcheting)",
			app().Grace(30).PreStop(30).Obj(), app().Grace(30).PreStop(30).AccessScope(v1beta1.AccessScopeVPC).Obj())),
		oldBreaks(allow("allow: name of 49 characters already, image update (ratcheting)",
			named(name49).Obj(), named(name49).Image(otherImage).Obj())),
		oldBreaks(allow("allow: name starting with a digit already, image update (ratcheting)",
			named("1app").Obj(), named("1app").Image(otherImage).Obj())),
	}
}
