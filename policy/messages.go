package policy

// Messages of the rules' errors, named where the rule and its entry in the list of rules
// (Rules, which the documentation and its tests read) both use them; the CRD's CEL rules
// (the markers in api/v1beta1) repeat those of the rules they mirror, and the parity tests
// hold the two to the same verdict. Warnings are in warnings.go.
const (
	// MessageNameDNS1035 is the detail of RuleNameDNS1035's error.
	MessageNameDNS1035 = "cluster name must be a DNS-1035 label: lower case alphanumeric characters or '-', starting with a letter and ending with an alphanumeric character"
	// MessageFlinkVersion is the detail of RuleFlinkVersion's error.
	MessageFlinkVersion = "must be a version number such as 1.20 or 2.2.1"
	// MessageHadoopConfig is the detail of RuleHadoopConfig's error.
	MessageHadoopConfig = "the ConfigMap holding the Hadoop configuration is required"
	// MessageGCPServiceAccount is the detail of RuleGCPServiceAccount's error.
	MessageGCPServiceAccount = "must be the directory of the key, not end with the key file name"
	// MessageImage is the detail of RuleImage's error.
	MessageImage = "the Flink image is required"
	// MessageJobManagerReplicas is the detail of RuleJobManagerReplicas's error.
	MessageJobManagerReplicas = "jobManager replicas must be 1"
	// MessagePort is the detail of RulePort's error.
	MessagePort = "must be greater than 1024"
	// MessageTaskManagerReplicas is the detail of RuleTaskManagerReplicas's error.
	MessageTaskManagerReplicas = "taskManager replicas must be at least 1"
	// MessageLastStateRequiresKubernetesHA is the detail of RuleLastStateRequiresKubernetesHA's error.
	MessageLastStateRequiresKubernetesHA = "upgradeMode last-state requires jobManager deploymentType Deployment and flinkProperties high-availability.type kubernetes: the job resumes from the checkpoints Flink keeps in its Kubernetes HA ConfigMaps"
	// MessageLastStateMaxCheckpointAge is the detail of RuleLastStateMaxCheckpointAge's error.
	MessageLastStateMaxCheckpointAge = "must be a Flink duration such as 10 min, 600 s or PT10M: the oldest checkpoint a last-state redeploy of a running job restores"
	// MessageJobParallelism is the detail of RuleJobParallelism's error.
	MessageJobParallelism = "parallelism must be at least 1"
	// MessageJobArtifact is the detail of RuleJobArtifact's error.
	MessageJobArtifact = "one of jarFile, pyFile or pyModule is required outside Application mode"
	// MessageRestartRequiresMaxStateAge is the detail of RuleRestartRequiresMaxStateAge's error.
	MessageRestartRequiresMaxStateAge = "maxStateAgeToRestoreSeconds is required with restartPolicy FromSavepointOnFailure"
	// MessageSkipSavepointRequiresMaxStateAge is the detail of RuleSkipSavepointRequiresMaxStateAge's error.
	MessageSkipSavepointRequiresMaxStateAge = "maxStateAgeToRestoreSeconds is required with takeSavepointOnUpdate false"
	// MessageCancelOnCreate is the detail of RuleCancelOnCreate's error.
	MessageCancelOnCreate = "cancelRequested cannot be true on a new job"
	// MessageGraceLongerThanPreStop is the detail of RuleGraceLongerThanPreStop's error.
	MessageGraceLongerThanPreStop = "terminationGracePeriodSeconds must be longer than preStopDelaySeconds, or the JobManager is killed before it can clean up"
	// MessageDeploymentRequiresApplicationMode is the detail of RuleDeploymentRequiresApplicationMode's error.
	MessageDeploymentRequiresApplicationMode = "deploymentType Deployment requires an application cluster: spec.job with mode Application"
	// MessageDeploymentRequiresHA is the detail of RuleDeploymentRequiresHA's error.
	MessageDeploymentRequiresHA = "deploymentType Deployment requires Flink high availability: set flinkProperties high-availability.type kubernetes"
	// MessageDeploymentRequiresHAStorageDir is the detail of RuleDeploymentRequiresHAStorageDir's error.
	MessageDeploymentRequiresHAStorageDir = "deploymentType Deployment requires Flink high availability: set flinkProperties high-availability.storageDir"
	// MessageDeploymentRequiresSingleJobManager is the detail of RuleDeploymentRequiresSingleJobManager's error.
	MessageDeploymentRequiresSingleJobManager = "deploymentType Deployment requires jobManager replicas 1"
	// MessageDeploymentForbidsShutdownOnFinish is the detail of RuleDeploymentForbidsShutdownOnFinish's error.
	MessageDeploymentForbidsShutdownOnFinish = "deploymentType Deployment requires execution.shutdown-on-application-finish false: the JobManager must stay up after the job ends so that its final state can be read"
	// MessageTaskManagerDeploymentTypeImmutable is the detail of RuleTaskManagerDeploymentTypeImmutable's error.
	MessageTaskManagerDeploymentTypeImmutable = "taskManager deploymentType is immutable (unset means StatefulSet)"
	// MessageClusterTypeImmutable is the detail of RuleClusterTypeImmutable's error.
	MessageClusterTypeImmutable = "a cluster cannot change between session cluster and job cluster"
	// MessageSavepointsDirRemoved is the detail of RuleSavepointsDirRemoved's error.
	MessageSavepointsDirRemoved = "savepointsDir cannot be removed"
	// MessageCancelIrreversible is the detail of RuleCancelIrreversible's error.
	MessageCancelIrreversible = "cancelRequested cannot go from true to false"
	// MessageHAImmutable is the detail of RuleHAImmutable's error.
	MessageHAImmutable = "Flink high availability cannot be switched on or off on an existing cluster"
	// MessageUserControlNotApplicable is the detail of RuleUserControlNotApplicable's error.
	MessageUserControlNotApplicable = "savepoint is not allowed for a session cluster"
	// MessageCancelAlone is the detail of RuleCancelAlone's error.
	MessageCancelAlone = "cancelRequested must be set to true on its own, without other spec changes"
	// MessageSavepointGenerationAlone is the detail of RuleSavepointGenerationAlone's error.
	MessageSavepointGenerationAlone = "savepointGeneration must be changed on its own, without other spec changes"
	// MessageJobUpdateRequiresSavepointsDir is the detail of RuleJobUpdateRequiresSavepointsDir's error.
	MessageJobUpdateRequiresSavepointsDir = "a job cluster created without spec.job.savepointsDir cannot be updated: its job state cannot be carried over; delete and recreate the cluster"
	// MessageJobUpdateRequiresRecentSavepoint is the detail of RuleJobUpdateRequiresRecentSavepoint's error.
	MessageJobUpdateRequiresRecentSavepoint = "no savepoint will be taken before this update (takeSavepointOnUpdate false or the job stopped) and the job has no savepoint newer than maxStateAgeToRestoreSeconds: set spec.job.fromSavepoint to the savepoint to restore (one left from an earlier deploy is not restored again) or take a savepoint first"

	// MessageDiscardStateFormat is the detail of RuleDiscardStateUnconfirmed's error, formatted
	// with the running job's ID, what starts the next deploy from empty state, the job's latest
	// savepoint as the stored status has it, DiscardStateAnnotation and the job's ID again.
	MessageDiscardStateFormat = "this update redeploys running job %s from empty state (%s): its state is thrown away, neither its latest savepoint (%s) nor a checkpoint is restored; to confirm, annotate the cluster with %s=%s"
	// MessageDiscardStateNoJobIDFormat is the detail of RuleDiscardStateUnconfirmed's error
	// when the stored status records no job ID to confirm with (formatted with the cause).
	MessageDiscardStateNoJobIDFormat = "this update redeploys the running job from empty state (%s): its state is thrown away, and the stored status records no job ID to confirm that with: wait until status.components.job.id is recorded"
	// MessageDiscardStateOtherJob starts the detail of RuleDiscardStateUnconfirmed's error when
	// DiscardStateAnnotation names another job than the running one (a copied or an old
	// confirmation).
	MessageDiscardStateOtherJob = "the confirmation names another job, it holds only for the job it names: "

	// MessageDeploymentRequiresKubernetesHA is the message of RuleDeploymentRequiresKubernetesHA,
	// the same in the webhook and the CRD.
	MessageDeploymentRequiresKubernetesHA = "deploymentType Deployment requires Kubernetes high availability (high-availability.type kubernetes): the controller checks and cleans up only the Kubernetes HA ConfigMaps of Flink, so with ZooKeeper or another HA factory it could neither tell whether a restarted JobManager recovers the job nor keep an old job graph out of a new deploy; use deploymentType Job for other HA services"
)
