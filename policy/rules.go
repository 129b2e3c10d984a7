package policy

import "k8s.io/apimachinery/pkg/util/validation/field"

// Rule names. Every error the policy returns carries its rule's name in field.Error.Origin,
// so that RuleOf can label metrics and ratcheting can tell two rules on one field apart.
// The names are stable: dashboards and alerts use them.
const (
	// Rules mirrored from the CRD's CEL rules: same verdict, same field path.

	// RuleNameTooLong: metadata.name, Invalid: at most 48 characters.
	RuleNameTooLong = "name-too-long"
	// RuleNameDNS1035: metadata.name, Invalid: a DNS-1035 label.
	RuleNameDNS1035 = "name-dns1035"
	// RuleDeploymentRequiresApplicationMode: spec.job.mode, Invalid.
	RuleDeploymentRequiresApplicationMode = "deployment-requires-application-mode"
	// RuleDeploymentRequiresHA: spec.flinkProperties[high-availability.type], Required.
	RuleDeploymentRequiresHA = "deployment-requires-ha"
	// RuleDeploymentRequiresKubernetesHA: spec.flinkProperties[high-availability.type], Invalid:
	// HA on, but not Kubernetes HA (zookeeper, a factory class).
	RuleDeploymentRequiresKubernetesHA = "deployment-requires-kubernetes-ha"
	// RuleDeploymentRequiresHAStorageDir: spec.flinkProperties[high-availability.storageDir], Required.
	RuleDeploymentRequiresHAStorageDir = "deployment-requires-ha-storage-dir"
	// RuleDeploymentRequiresSingleJobManager: spec.jobManager.replicas, Invalid.
	RuleDeploymentRequiresSingleJobManager = "deployment-requires-single-jobmanager"
	// RuleDeploymentForbidsShutdownOnFinish: spec.flinkProperties[execution.shutdown-on-application-finish], Forbidden.
	RuleDeploymentForbidsShutdownOnFinish = "deployment-forbids-shutdown-on-finish"
	// RuleGraceLongerThanPreStop: spec.jobManager.terminationGracePeriodSeconds, Invalid.
	RuleGraceLongerThanPreStop = "grace-longer-than-prestop"
	// RuleJobParallelism: spec.job.parallelism, Invalid: at least 1.
	RuleJobParallelism = "job-parallelism"
	// RuleJobArtifact: spec.job.jarFile, Required: jarFile, pyFile or pyModule outside Application mode.
	RuleJobArtifact = "job-artifact"
	// RuleRestartRequiresMaxStateAge: spec.job.maxStateAgeToRestoreSeconds, Required.
	RuleRestartRequiresMaxStateAge = "restart-requires-max-state-age"
	// RuleSkipSavepointRequiresMaxStateAge: spec.job.maxStateAgeToRestoreSeconds, Required.
	RuleSkipSavepointRequiresMaxStateAge = "skip-savepoint-requires-max-state-age"
	// RuleSavepointsToKeep: spec.job.savepointsToKeep, Invalid: 1 to 10.
	RuleSavepointsToKeep = "savepoints-to-keep"
	// RuleLastStateRequiresKubernetesHA: spec.job.upgradeMode, Invalid: last-state needs a
	// Deployment JobManager with Kubernetes HA.
	RuleLastStateRequiresKubernetesHA = "last-state-requires-kubernetes-ha"
	// RuleCancelOnCreate: spec.job.cancelRequested, Forbidden: not true on a new job.
	RuleCancelOnCreate = "cancel-on-create"
	// RuleDeploymentTypeImmutable: spec.jobManager.deploymentType, Forbidden (update).
	RuleDeploymentTypeImmutable = "deployment-type-immutable"
	// RuleTaskManagerDeploymentTypeImmutable: spec.taskManager.deploymentType, Forbidden (update).
	RuleTaskManagerDeploymentTypeImmutable = "taskmanager-deployment-type-immutable"
	// RuleClusterTypeImmutable: spec.job, Forbidden (update): session and job clusters do not convert.
	RuleClusterTypeImmutable = "cluster-type-immutable"
	// RuleSavepointsDirRemoved: spec.job.savepointsDir, Required (update).
	RuleSavepointsDirRemoved = "savepoints-dir-removed"
	// RuleCancelIrreversible: spec.job.cancelRequested, Forbidden (update): no true to false.
	RuleCancelIrreversible = "cancel-irreversible"
	// RuleHAImmutable: spec.flinkProperties, Forbidden (update): HA is not switched on or off.
	RuleHAImmutable = "ha-immutable"

	// Rules of the flink-on-k8s-operator's webhook.

	// RuleNamespace: metadata.namespace, Required or Invalid.
	RuleNamespace = "namespace"
	// RuleFlinkVersion: spec.flinkVersion, Required or Invalid: a version number.
	RuleFlinkVersion = "flink-version"
	// RuleHadoopConfig: spec.hadoopConfig.configMapName, Required.
	RuleHadoopConfig = "hadoop-config"
	// RuleGCPServiceAccount: spec.gcpConfig.serviceAccount fields, Required or Invalid.
	RuleGCPServiceAccount = "gcp-service-account"
	// RuleImage: spec.image.name Required, spec.image.pullPolicy NotSupported.
	RuleImage = "image"
	// RulePodAnnotations: <component>.podAnnotations, Invalid or TooLong.
	RulePodAnnotations = "pod-annotations"
	// RulePodLabels: <component>.podLabels, Invalid.
	RulePodLabels = "pod-labels"
	// RuleJobManagerReplicas: spec.jobManager.replicas, Invalid: must be 1.
	RuleJobManagerReplicas = "jobmanager-replicas"
	// RuleAccessScope: spec.jobManager.accessScope, NotSupported.
	RuleAccessScope = "access-scope"
	// RulePort: <component>.ports.<name>, Invalid: greater than 1024.
	RulePort = "port"
	// RuleDuplicatePort: <component>.ports.<name> or .extraPorts[i].{containerPort,name}, Duplicate.
	RuleDuplicatePort = "duplicate-port"
	// RuleResources: <component>.resources.requests[cpu|memory], Required.
	RuleResources = "resources"
	// RuleMemory: <component>.memoryProcessRatio / memoryOffHeapRatio / memoryOffHeapMin,
	// Forbidden or Invalid, by Flink version.
	RuleMemory = "memory"
	// RuleTaskManagerReplicas: spec.taskManager.replicas, Invalid: at least 1.
	RuleTaskManagerReplicas = "taskmanager-replicas"
	// RuleRestartPolicy: spec.job.restartPolicy, NotSupported.
	RuleRestartPolicy = "restart-policy"
	// RuleCleanupPolicy: spec.job.cleanupPolicy.<after>, NotSupported.
	RuleCleanupPolicy = "cleanup-policy"
	// RuleJobMode: spec.job.mode, NotSupported.
	RuleJobMode = "job-mode"
	// RuleUpgradeMode: spec.job.upgradeMode, NotSupported.
	RuleUpgradeMode = "upgrade-mode"
	// RuleLastStateMaxCheckpointAge: spec.flinkProperties[kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age],
	// Invalid: a Flink duration.
	RuleLastStateMaxCheckpointAge = "last-state-max-checkpoint-age"
	// RuleUserControlInProgress: metadata.annotations[<user-control>], Forbidden (update).
	RuleUserControlInProgress = "user-control-in-progress"
	// RuleUserControlValue: metadata.annotations[<user-control>], NotSupported (update).
	RuleUserControlValue = "user-control-value"
	// RuleUserControlNotApplicable: metadata.annotations[<user-control>], Forbidden (update):
	// a session cluster, no savepointsDir, or a job that is not running.
	RuleUserControlNotApplicable = "user-control-not-applicable"
	// RuleCancelAlone: spec.job.cancelRequested, Forbidden (update): false to true on its own.
	RuleCancelAlone = "cancel-alone"
	// RuleSavepointGeneration: spec.job.savepointGeneration, Invalid (update): status + 1 only.
	RuleSavepointGeneration = "savepoint-generation"
	// RuleSavepointGenerationAlone: spec.job.savepointGeneration, Forbidden (update): on its own.
	RuleSavepointGenerationAlone = "savepoint-generation-alone"
	// RuleJobUpdateRequiresSavepointsDir: spec.job, Forbidden (update).
	RuleJobUpdateRequiresSavepointsDir = "job-update-requires-savepoints-dir"
	// RuleJobUpdateRequiresRecentSavepoint: spec.job, Forbidden (update).
	RuleJobUpdateRequiresRecentSavepoint = "job-update-requires-recent-savepoint"
	// RuleDiscardStateUnconfirmed: metadata.annotations[flink-admission.dev/discard-state],
	// Required or Invalid (update): an update whose upgrade plan newly throws the running job's
	// state away needs the annotation, naming the job.
	RuleDiscardStateUnconfirmed = "discard-state-unconfirmed"

	// RuleNoObject: the object (or the old object of an update) is missing.
	RuleNoObject = "no-object"
	// RuleUnknown is what RuleOf returns for an error the policy did not make.
	RuleUnknown = "unknown"
)

// RuleOf returns the short, stable name of the rule that produced err (one of the Rule
// constants), for metrics labels. It returns RuleUnknown for an error without a rule name
// and "" for nil.
func RuleOf(err *field.Error) string {
	switch {
	case err == nil:
		return ""
	case err.Origin == "":
		return RuleUnknown
	default:
		return err.Origin
	}
}
