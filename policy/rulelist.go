package policy

import "k8s.io/apimachinery/pkg/util/validation/field"

// Enforcement says where a rule is enforced.
type Enforcement string

const (
	// EnforcedByWebhook is a rule of the validating webhook alone.
	EnforcedByWebhook Enforcement = "webhook"
	// EnforcedByCRDRule is a rule of the webhook that the CRD also carries as an
	// x-kubernetes-validations CEL rule, which the API server evaluates on its own.
	EnforcedByCRDRule Enforcement = "both"
	// EnforcedByCRDSchema is a rule of the webhook that the CRD's OpenAPI schema also
	// enforces (an enum, a minimum or a maximum).
	EnforcedByCRDSchema Enforcement = "both-schema"
)

// RuleInfo describes one rule of the policy: the data the documentation, the metrics and
// the parity table read, so that none of them has to find the rules in the source.
type RuleInfo struct {
	// Name is the rule's name (one of the Rule constants): the Origin of its errors and
	// the rule label of the denial metric.
	Name string
	// EnforcedBy says whether the CRD enforces the rule too.
	EnforcedBy Enforcement
	// GuardsState marks a webhook rule that stops an update from throwing a running job's
	// state away, which no later edit undoes: staged enforcement (Stage) never turns it into
	// a warning.
	GuardsState bool
	// Field and Type are the field path and type of the error the rule gives on Example.
	Field string
	Type  field.ErrorType
	// Message is the detail of that error.
	Message string
	// CRDField and CRDMessage are, where they differ from Field and Message, what the
	// CRD reports for the same violation; the API server checks the CRD before it calls the
	// validating webhook, so this is what kubectl shows.
	CRDField, CRDMessage string
	// Example is a manifest (YAML) the rule rejects: a new cluster, or, with ExampleOld,
	// the update of the stored cluster ExampleOld.
	Example, ExampleOld string
}

// Rules returns every rule of the policy in the order of the documentation. The rules
// without an example (RuleNoObject) and RuleUnknown are not in it: they are about
// reviews, not clusters. The slice is a copy.
func Rules() []RuleInfo {
	return append([]RuleInfo(nil), rules...)
}

var rules = []RuleInfo{
	{
		Name:       RuleNameTooLong,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `metadata.name`,
		Type:       field.ErrorTypeInvalid,
		Message:    `cluster name must be at most 48 characters: it prefixes the names of the cluster's resources`,
		CRDField:   `<nil>`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: clickstream-sessionization-with-late-events-eu-west
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
`,
	},
	{
		Name:       RuleNameDNS1035,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `metadata.name`,
		Type:       field.ErrorTypeInvalid,
		Message:    MessageNameDNS1035,
		CRDField:   `<nil>`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: 2024-backfill
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
`,
	},
	{
		Name:       RuleNamespace,
		EnforcedBy: EnforcedByWebhook,
		Field:      `metadata.namespace`,
		Type:       field.ErrorTypeInvalid,
		Message:    `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
  namespace: Streaming
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
`,
	},
	{
		Name:       RuleFlinkVersion,
		EnforcedBy: EnforcedByWebhook,
		Field:      `spec.flinkVersion`,
		Type:       field.ErrorTypeInvalid,
		Message:    MessageFlinkVersion,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: latest
  image:
    name: flink:1.20.1
`,
	},
	{
		Name:       RuleHadoopConfig,
		EnforcedBy: EnforcedByWebhook,
		Field:      `spec.hadoopConfig.configMapName`,
		Type:       field.ErrorTypeRequired,
		Message:    MessageHadoopConfig,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  hadoopConfig:
    mountPath: /etc/hadoop/conf
`,
	},
	{
		Name:       RuleGCPServiceAccount,
		EnforcedBy: EnforcedByWebhook,
		Field:      `spec.gcpConfig.serviceAccount.mountPath`,
		Type:       field.ErrorTypeInvalid,
		Message:    MessageGCPServiceAccount,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  gcpConfig:
    serviceAccount:
      secretName: gcp-service-account
      keyFile: key.json
      mountPath: /etc/gcp/key.json
`,
	},
	{
		Name:       RuleImage,
		EnforcedBy: EnforcedByWebhook,
		Field:      `spec.image.name`,
		Type:       field.ErrorTypeRequired,
		Message:    MessageImage,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: ""
`,
	},
	{
		Name:       RulePodAnnotations,
		EnforcedBy: EnforcedByWebhook,
		Field:      `spec.jobManager.podAnnotations`,
		Type:       field.ErrorTypeInvalid,
		Message:    `name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  jobManager:
    podAnnotations:
      prometheus.io/scrape?: "true"
`,
	},
	{
		Name:       RulePodLabels,
		EnforcedBy: EnforcedByWebhook,
		Field:      `spec.taskManager.podLabels`,
		Type:       field.ErrorTypeInvalid,
		Message:    `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  taskManager:
    podLabels:
      team: data platform
`,
	},
	{
		Name:       RuleJobManagerReplicas,
		EnforcedBy: EnforcedByCRDSchema,
		Field:      `spec.jobManager.replicas`,
		Type:       field.ErrorTypeInvalid,
		Message:    MessageJobManagerReplicas,
		CRDMessage: `spec.jobManager.replicas in body should be less than or equal to 1`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  jobManager:
    replicas: 2
`,
	},
	{
		Name:       RuleAccessScope,
		EnforcedBy: EnforcedByCRDSchema,
		Field:      `spec.jobManager.accessScope`,
		Type:       field.ErrorTypeNotSupported,
		Message:    `supported values: "Cluster", "VPC", "External", "NodePort", "Headless"`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  jobManager:
    accessScope: Internet
`,
	},
	{
		Name:       RulePort,
		EnforcedBy: EnforcedByWebhook,
		Field:      `spec.jobManager.ports.ui`,
		Type:       field.ErrorTypeInvalid,
		Message:    MessagePort,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  jobManager:
    ports:
      ui: 80
`,
	},
	{
		Name:       RuleDuplicatePort,
		EnforcedBy: EnforcedByWebhook,
		Field:      `spec.jobManager.ports.ui`,
		Type:       field.ErrorTypeDuplicate,
		Message:    `Duplicate value: 6123`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  jobManager:
    ports:
      ui: 6123
`,
	},
	{
		Name:       RuleResources,
		EnforcedBy: EnforcedByWebhook,
		Field:      `spec.taskManager.resources.requests[cpu]`,
		Type:       field.ErrorTypeRequired,
		Message:    `a cpu request or limit is required`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  taskManager:
    resources:
      limits:
        memory: 4Gi
`,
	},
	{
		Name:       RuleMemory,
		EnforcedBy: EnforcedByWebhook,
		Field:      `spec.jobManager.memoryOffHeapRatio`,
		Type:       field.ErrorTypeForbidden,
		Message:    `only for Flink before 1.10; use memoryProcessRatio`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  jobManager:
    memoryOffHeapRatio: 25
`,
	},
	{
		Name:       RuleTaskManagerReplicas,
		EnforcedBy: EnforcedByCRDSchema,
		Field:      `spec.taskManager.replicas`,
		Type:       field.ErrorTypeInvalid,
		Message:    MessageTaskManagerReplicas,
		CRDMessage: `spec.taskManager.replicas in body should be greater than or equal to 1`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  taskManager:
    replicas: 0
`,
	},
	{
		Name:       RuleRestartPolicy,
		EnforcedBy: EnforcedByCRDSchema,
		Field:      `spec.job.restartPolicy`,
		Type:       field.ErrorTypeNotSupported,
		Message:    `supported values: "Never", "FromSavepointOnFailure"`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    restartPolicy: Always
`,
	},
	{
		Name:       RuleCleanupPolicy,
		EnforcedBy: EnforcedByCRDSchema,
		Field:      `spec.job.cleanupPolicy.afterJobFails`,
		Type:       field.ErrorTypeNotSupported,
		Message:    `supported values: "KeepCluster", "DeleteCluster", "DeleteTaskManager"`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    cleanupPolicy:
      afterJobFails: Delete
`,
	},
	{
		Name:       RuleJobMode,
		EnforcedBy: EnforcedByCRDSchema,
		Field:      `spec.job.mode`,
		Type:       field.ErrorTypeNotSupported,
		Message:    `supported values: "Detached", "Blocking", "Application"`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    mode: Session
`,
	},
	{
		Name:       RuleUpgradeMode,
		EnforcedBy: EnforcedByCRDSchema,
		Field:      `spec.job.upgradeMode`,
		Type:       field.ErrorTypeNotSupported,
		Message:    `supported values: "savepoint", "last-state", "stateless"`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    upgradeMode: last-checkpoint
`,
	},
	{
		Name:       RuleLastStateRequiresKubernetesHA,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.job.upgradeMode`,
		Type:       field.ErrorTypeInvalid,
		Message:    MessageLastStateRequiresKubernetesHA,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  jobManager:
    deploymentType: Deployment
  job:
    mode: Application
    jarFile: /opt/flink/usrlib/job.jar
    upgradeMode: last-state
  flinkProperties:
    high-availability.type: zookeeper
    high-availability.storageDir: s3://flink-state/example/ha
`,
	},
	{
		Name:       RuleLastStateMaxCheckpointAge,
		EnforcedBy: EnforcedByWebhook,
		Field:      `spec.flinkProperties[kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age]`,
		Type:       field.ErrorTypeInvalid,
		Message:    MessageLastStateMaxCheckpointAge,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
  flinkProperties:
    kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age: ten minutes
`,
	},
	{
		Name:       RuleJobParallelism,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.job.parallelism`,
		Type:       field.ErrorTypeInvalid,
		Message:    MessageJobParallelism,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    parallelism: 0
`,
	},
	{
		Name:       RuleJobArtifact,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.job.jarFile`,
		Type:       field.ErrorTypeRequired,
		Message:    MessageJobArtifact,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    className: com.example.Pipeline
`,
	},
	{
		Name:       RuleRestartRequiresMaxStateAge,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.job.maxStateAgeToRestoreSeconds`,
		Type:       field.ErrorTypeRequired,
		Message:    MessageRestartRequiresMaxStateAge,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    restartPolicy: FromSavepointOnFailure
`,
	},
	{
		Name:       RuleSavepointsToKeep,
		EnforcedBy: EnforcedByCRDSchema,
		Field:      `spec.job.savepointsToKeep`,
		Type:       field.ErrorTypeInvalid,
		Message:    `savepointsToKeep must be between 1 and 10: the controller disposes only of savepoints its history (the last 10) still lists`,
		CRDMessage: `spec.job.savepointsToKeep in body should be greater than or equal to 1`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    savepointsDir: s3://bucket/savepoints
    savepointsToKeep: 0
`,
	},
	{
		Name:       RuleSkipSavepointRequiresMaxStateAge,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.job.maxStateAgeToRestoreSeconds`,
		Type:       field.ErrorTypeRequired,
		Message:    MessageSkipSavepointRequiresMaxStateAge,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    takeSavepointOnUpdate: false
`,
	},
	{
		Name:       RuleCancelOnCreate,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.job.cancelRequested`,
		Type:       field.ErrorTypeForbidden,
		Message:    MessageCancelOnCreate,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    cancelRequested: true
`,
	},
	{
		Name:       RuleGraceLongerThanPreStop,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.jobManager.terminationGracePeriodSeconds`,
		Type:       field.ErrorTypeInvalid,
		Message:    MessageGraceLongerThanPreStop,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  jobManager:
    terminationGracePeriodSeconds: 10
    preStopDelaySeconds: 15
`,
	},
	{
		Name:       RuleDeploymentRequiresApplicationMode,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.job.mode`,
		Type:       field.ErrorTypeInvalid,
		Message:    MessageDeploymentRequiresApplicationMode,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  jobManager:
    deploymentType: Deployment
  job:
    jarFile: /opt/flink/usrlib/job.jar
  flinkProperties:
    high-availability.type: kubernetes
    high-availability.storageDir: s3://flink-state/example/ha
`,
	},
	{
		Name:       RuleDeploymentRequiresHA,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.flinkProperties[high-availability.type]`,
		Type:       field.ErrorTypeRequired,
		Message:    MessageDeploymentRequiresHA,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  jobManager:
    deploymentType: Deployment
  job:
    mode: Application
    jarFile: /opt/flink/usrlib/job.jar
  flinkProperties:
    high-availability.type: none
    high-availability.storageDir: s3://flink-state/example/ha
`,
	},
	{
		Name:       RuleDeploymentRequiresKubernetesHA,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.flinkProperties[high-availability.type]`,
		Type:       field.ErrorTypeInvalid,
		Message:    MessageDeploymentRequiresKubernetesHA,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  jobManager:
    deploymentType: Deployment
  job:
    mode: Application
    jarFile: /opt/flink/usrlib/job.jar
  flinkProperties:
    high-availability.type: zookeeper
    high-availability.zookeeper.quorum: zk-0.zk:2181
    high-availability.storageDir: s3://flink-state/example/ha
`,
	},
	{
		Name:       RuleDeploymentRequiresHAStorageDir,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.flinkProperties[high-availability.storageDir]`,
		Type:       field.ErrorTypeRequired,
		Message:    MessageDeploymentRequiresHAStorageDir,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  jobManager:
    deploymentType: Deployment
  job:
    mode: Application
    jarFile: /opt/flink/usrlib/job.jar
  flinkProperties:
    high-availability.type: kubernetes
`,
	},
	{
		Name:       RuleDeploymentRequiresSingleJobManager,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.jobManager.replicas`,
		Type:       field.ErrorTypeInvalid,
		Message:    MessageDeploymentRequiresSingleJobManager,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  jobManager:
    deploymentType: Deployment
    replicas: 2
  job:
    mode: Application
    jarFile: /opt/flink/usrlib/job.jar
  flinkProperties:
    high-availability.type: kubernetes
    high-availability.storageDir: s3://flink-state/example/ha
`,
	},
	{
		Name:       RuleDeploymentForbidsShutdownOnFinish,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.flinkProperties[execution.shutdown-on-application-finish]`,
		Type:       field.ErrorTypeForbidden,
		Message:    MessageDeploymentForbidsShutdownOnFinish,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  jobManager:
    deploymentType: Deployment
  job:
    mode: Application
    jarFile: /opt/flink/usrlib/job.jar
  flinkProperties:
    high-availability.type: kubernetes
    high-availability.storageDir: s3://flink-state/example/ha
    execution.shutdown-on-application-finish: "true"
`,
	},
	{
		Name:       RuleDeploymentTypeImmutable,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.jobManager.deploymentType`,
		Type:       field.ErrorTypeForbidden,
		Message:    `deploymentType is immutable (unset means Job): delete and recreate the cluster to change it from Deployment to Job`,
		CRDMessage: `deploymentType is immutable (unset means Job): delete and recreate the cluster to change it`,
		ExampleOld: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  jobManager:
    deploymentType: Deployment
  job:
    mode: Application
    jarFile: /opt/flink/usrlib/job.jar
  flinkProperties:
    high-availability.type: kubernetes
    high-availability.storageDir: s3://flink-state/example/ha
`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    mode: Application
    jarFile: /opt/flink/usrlib/job.jar
  flinkProperties:
    high-availability.type: kubernetes
    high-availability.storageDir: s3://flink-state/example/ha
`,
	},
	{
		Name:       RuleTaskManagerDeploymentTypeImmutable,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.taskManager.deploymentType`,
		Type:       field.ErrorTypeForbidden,
		Message:    MessageTaskManagerDeploymentTypeImmutable,
		ExampleOld: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  taskManager:
    deploymentType: Deployment
`,
	},
	{
		Name:       RuleClusterTypeImmutable,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.job`,
		Type:       field.ErrorTypeForbidden,
		Message:    MessageClusterTypeImmutable,
		ExampleOld: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
`,
	},
	{
		Name:       RuleSavepointsDirRemoved,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.job.savepointsDir`,
		Type:       field.ErrorTypeRequired,
		Message:    MessageSavepointsDirRemoved,
		ExampleOld: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    savepointsDir: s3://flink-state/example/savepoints
`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
`,
	},
	{
		Name:       RuleCancelIrreversible,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.job.cancelRequested`,
		Type:       field.ErrorTypeForbidden,
		Message:    MessageCancelIrreversible,
		ExampleOld: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    savepointsDir: s3://flink-state/example/savepoints
    cancelRequested: true
`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    savepointsDir: s3://flink-state/example/savepoints
    cancelRequested: false
`,
	},
	{
		Name:       RuleHAImmutable,
		EnforcedBy: EnforcedByCRDRule,
		Field:      `spec.flinkProperties`,
		Type:       field.ErrorTypeForbidden,
		Message:    MessageHAImmutable,
		ExampleOld: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  flinkProperties:
    high-availability.type: kubernetes
    high-availability.storageDir: s3://flink-state/example/ha
`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
`,
	},
	{
		Name:       RuleUserControlInProgress,
		EnforcedBy: EnforcedByWebhook,
		Field:      `metadata.annotations[flinkclusters.flinkoperator.k8s.io/user-control]`,
		Type:       field.ErrorTypeForbidden,
		Message:    `cannot change while the savepoint control is in progress`,
		ExampleOld: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
  annotations:
    flinkclusters.flinkoperator.k8s.io/user-control: savepoint
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    savepointsDir: s3://flink-state/example/savepoints
status:
  state: Running
  components:
    job:
      state: Running
  control:
    name: savepoint
    state: InProgress
    updateTime: "2026-01-01T00:00:00Z"
`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
  annotations:
    flinkclusters.flinkoperator.k8s.io/user-control: job-cancel
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    savepointsDir: s3://flink-state/example/savepoints
`,
	},
	{
		Name:       RuleUserControlValue,
		EnforcedBy: EnforcedByWebhook,
		Field:      `metadata.annotations[flinkclusters.flinkoperator.k8s.io/user-control]`,
		Type:       field.ErrorTypeNotSupported,
		Message:    `supported values: "savepoint", "job-cancel"`,
		ExampleOld: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
  annotations:
    flinkclusters.flinkoperator.k8s.io/user-control: restart
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
`,
	},
	{
		Name:       RuleUserControlNotApplicable,
		EnforcedBy: EnforcedByWebhook,
		Field:      `metadata.annotations[flinkclusters.flinkoperator.k8s.io/user-control]`,
		Type:       field.ErrorTypeForbidden,
		Message:    MessageUserControlNotApplicable,
		ExampleOld: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
  annotations:
    flinkclusters.flinkoperator.k8s.io/user-control: savepoint
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
`,
	},
	{
		Name:       RuleCancelAlone,
		EnforcedBy: EnforcedByWebhook,
		Field:      `spec.job.cancelRequested`,
		Type:       field.ErrorTypeForbidden,
		Message:    MessageCancelAlone,
		ExampleOld: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    savepointsDir: s3://flink-state/example/savepoints
    parallelism: 2
status:
  state: Running
  components:
    job:
      state: Running
`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    savepointsDir: s3://flink-state/example/savepoints
    parallelism: 4
    cancelRequested: true
`,
	},
	{
		Name:       RuleSavepointGeneration,
		EnforcedBy: EnforcedByWebhook,
		Field:      `spec.job.savepointGeneration`,
		Type:       field.ErrorTypeInvalid,
		Message:    `can only be set to 3: status.components.job.savepointGeneration + 1`,
		ExampleOld: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    savepointsDir: s3://flink-state/example/savepoints
    savepointGeneration: 2
status:
  state: Running
  components:
    job:
      state: Running
      savepointGeneration: 2
`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    savepointsDir: s3://flink-state/example/savepoints
    savepointGeneration: 5
`,
	},
	{
		Name:       RuleSavepointGenerationAlone,
		EnforcedBy: EnforcedByWebhook,
		Field:      `spec.job.savepointGeneration`,
		Type:       field.ErrorTypeForbidden,
		Message:    MessageSavepointGenerationAlone,
		ExampleOld: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    savepointsDir: s3://flink-state/example/savepoints
    parallelism: 2
    savepointGeneration: 2
status:
  state: Running
  components:
    job:
      state: Running
      savepointGeneration: 2
`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    savepointsDir: s3://flink-state/example/savepoints
    parallelism: 4
    savepointGeneration: 3
`,
	},
	{
		Name:       RuleJobUpdateRequiresSavepointsDir,
		EnforcedBy: EnforcedByWebhook,
		Field:      `spec.job`,
		Type:       field.ErrorTypeForbidden,
		Message:    MessageJobUpdateRequiresSavepointsDir,
		ExampleOld: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    parallelism: 2
`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    parallelism: 4
`,
	},
	{
		Name:       RuleJobUpdateRequiresRecentSavepoint,
		EnforcedBy: EnforcedByWebhook,
		Field:      `spec.job`,
		Type:       field.ErrorTypeForbidden,
		Message:    MessageJobUpdateRequiresRecentSavepoint,
		ExampleOld: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    savepointsDir: s3://flink-state/example/savepoints
    takeSavepointOnUpdate: false
    maxStateAgeToRestoreSeconds: 3600
    parallelism: 2
status:
  state: Running
  components:
    job:
      state: Running
      savepointLocation: s3://flink-state/example/savepoints/savepoint-1
      savepointTime: "2020-01-01T00:00:00Z"
`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    savepointsDir: s3://flink-state/example/savepoints
    takeSavepointOnUpdate: false
    maxStateAgeToRestoreSeconds: 3600
    parallelism: 4
`,
	},
	{
		Name:        RuleDiscardStateUnconfirmed,
		EnforcedBy:  EnforcedByWebhook,
		GuardsState: true,
		Field:       `metadata.annotations[flink-admission.dev/discard-state]`,
		Type:        field.ErrorTypeRequired,
		Message: planf(MessageDiscardStateFormat, "4f3c0d5e9a8b7c6d5e4f3a2b1c0d9e8f", "spec.job.upgradeMode stateless",
			"s3://flink-state/example/savepoints/savepoint-4f3c0d-1 of 2026-01-01T00:00:00Z", DiscardStateAnnotation, "4f3c0d5e9a8b7c6d5e4f3a2b1c0d9e8f"),
		ExampleOld: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    savepointsDir: s3://flink-state/example/savepoints
    parallelism: 2
status:
  state: Running
  components:
    job:
      id: 4f3c0d5e9a8b7c6d5e4f3a2b1c0d9e8f
      state: Running
      savepointLocation: s3://flink-state/example/savepoints/savepoint-4f3c0d-1
      savepointTime: "2026-01-01T00:00:00Z"
`,
		Example: `apiVersion: flinkoperator.k8s.io/v1beta1
kind: FlinkCluster
metadata:
  name: example
spec:
  flinkVersion: "1.20"
  image:
    name: flink:1.20.1
  job:
    jarFile: /opt/flink/usrlib/job.jar
    savepointsDir: s3://flink-state/example/savepoints
    parallelism: 4
    upgradeMode: stateless
`,
	},
}
