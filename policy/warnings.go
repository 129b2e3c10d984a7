package policy

// Warning texts. The API server relays them to the client (kubectl prints them), so they
// are whole sentences a user can act on. Texts with verbs are fmt formats.
const (
	// WarningRestartPolicyWithDeployment: with a Deployment JobManager a failed job is
	// recovered by Flink HA and Kubernetes, not by the operator's restart from a savepoint.
	WarningRestartPolicyWithDeployment = "spec.job.restartPolicy: FromSavepointOnFailure has no effect with spec.jobManager.deploymentType Deployment: Kubernetes restarts the JobManager and Flink high availability recovers the job"

	// WarningShutdownOnFinishOverridden: in Job mode the controller's Flink configuration
	// sets execution.shutdown-on-application-finish false whatever flinkProperties say: a
	// JobManager that exits with its job exits before the controller has read an update's
	// savepoint location, and the update then waits forever. The controller ends the
	// JobManager itself once it has read what it needs.
	WarningShutdownOnFinishOverridden = "spec.flinkProperties[execution.shutdown-on-application-finish]: true is overridden with false by the flink-admission controller: the JobManager stays up after its job ends until the controller has recorded the job's end (and an update's or a cancel's savepoint), then the controller shuts it down through Flink's REST API (DELETE /cluster) and the JobManager Job ends Complete"

	// WarningLegacyHAKey: Flink 1.17 renamed the key; the old one still works but is deprecated.
	WarningLegacyHAKey = "spec.flinkProperties[high-availability]: deprecated key, use high-availability.type instead"

	// WarningLegacyHAKeyIgnored: both keys are set; Flink reads high-availability.type.
	WarningLegacyHAKeyIgnored = "spec.flinkProperties[high-availability]: ignored because high-availability.type is set; remove it"

	// WarningBatchSchedulerName: the flink-on-k8s-operator replaced the field.
	WarningBatchSchedulerName = "spec.batchSchedulerName: deprecated, use spec.batchScheduler.name instead"

	// WarningVolcanoNoGang: the flink-on-k8s-operator makes one Volcano PodGroup of every pod
	// of the cluster (gang scheduling); the controller gives each pod the queue and the
	// priority class, and Volcano then makes a pod group per workload.
	WarningVolcanoNoGang = "spec.batchScheduler: the JobManager and TaskManagers are not gang-scheduled: no PodGroup of the whole cluster is created (Volcano makes one per workload); queue and priorityClassName are applied to every pod"

	// WarningSavepointsWithoutDirFormat (formatted with the field's name): the controller,
	// like the flink-on-k8s-operator, takes scheduled savepoints only into
	// spec.job.savepointsDir, and without savepoints there is nothing to dispose of.
	WarningSavepointsWithoutDirFormat = "spec.job.%s: has no effect without spec.job.savepointsDir: the controller takes no scheduled or requested savepoint of the job"

	// WarningAllowNonRestoredStateIgnoredFormat (formatted with spec.flinkVersion): the
	// standalone application entrypoint of Flink before 2.3 overwrites
	// execution.savepoint.ignore-unclaimed-state when started without --fromSavepoint
	// (FLINK-36973), so the controller passes the restore on the command line: in Job mode
	// the savepoint, in Deployment mode a variable the kubelet fills from the ConfigMap at
	// each container start, which after the job's first run names a path that exists nowhere
	// so that a restart recovers from HA. Without HA the controller takes the path out
	// instead, and the long-lived command line cannot carry it: a Deployment without HA (denied
	// by deployment-requires-ha, kept by a stored cluster) gets no command-line restore. The
	// user learns it when the cluster is written, not when a restore of a changed job graph
	// fails.
	WarningAllowNonRestoredStateIgnoredFormat = "spec.job.allowNonRestoredState: has no effect on Flink %s in Deployment mode without high availability, whose standalone application entrypoint overwrites execution.savepoint.ignore-unclaimed-state when it starts without --fromSavepoint (FLINK-36973): a restore with state of removed operators fails instead of dropping that state; enable Kubernetes high availability, use Flink 2.3 or later, or keep the operators' uids"

	// DeploymentWithoutControllerFormat (formatted with the reason, ControllerScope) is the
	// detail of RuleDeploymentWithoutController and, prefixed with the field path, its
	// warning: a team must never believe it has a Deployment JobManager when it has a Job.
	DeploymentWithoutControllerFormat = "Deployment, but no controller that runs Deployment JobManagers will run this cluster: %s; another controller (the flink-on-k8s-operator) runs its JobManager as a Job, without the Deployment's rolling update or its Flink HA recovery"

	// WarningDeploymentWithoutControllerFormat is DeploymentWithoutControllerFormat as a
	// warning.
	WarningDeploymentWithoutControllerFormat = "spec.jobManager.deploymentType: " + DeploymentWithoutControllerFormat

	// WarningExistingViolationFormat wraps a ratcheted error (formatted with Error()): the
	// object already broke the rule before this update, so the update is allowed, but the
	// user should know the object is still out of policy.
	WarningExistingViolationFormat = "%s (existing violation, allowed on update)"
)

// The upgrade plan: on an update of a cluster whose job runs (by the stored status), how the
// controller's upgrade decision (flinkcluster.PlanUpgrade) carries the job's state, so that
// `kubectl apply --dry-run=server` says it before the change is made. Each is prefixed with
// WarningPlanPrefix; the webhook has no word from Flink, so a last-state plan says what it
// depends on. updatePlan.warning keeps each within maxPlanWarningRunes.
const (
	// WarningPlanPrefix starts every upgrade plan warning.
	WarningPlanPrefix = "upgrade plan: "

	// WarningPlanNoRedeploy: the change touches only fields that steer the controller or are
	// applied in place (flinkcluster.RedeployNeeded).
	WarningPlanNoRedeploy = "upgrade plan: this change needs no redeploy: the running job goes on as it is"

	// WarningPlanSavepointFormat (formatted with spec.job.savepointsDir and why): the job is
	// stopped with a savepoint and the new revision deployed from it.
	WarningPlanSavepointFormat = "upgrade plan: the job will be stopped with a savepoint into %s and restored from it (%s)"

	// WarningPlanNoStopFormat (formatted with the newest savepoint): takeSavepointOnUpdate is
	// false, so the job is stopped without a savepoint and restored from its newest one.
	WarningPlanNoStopFormat = "upgrade plan: the job will be stopped without a savepoint (takeSavepointOnUpdate false) and restored from its newest savepoint %s"

	// WarningPlanFromSavepointFormat (formatted with the path): the update names a savepoint
	// in spec.job.fromSavepoint (flinkcluster.UpdateRestore), which the controller deploys
	// from without stopping the job with a savepoint first.
	WarningPlanFromSavepointFormat = "upgrade plan: the job will be stopped without a savepoint and restored from spec.job.fromSavepoint %s: its state since that savepoint is lost"

	// WarningPlanRestoreChoiceFormat (formatted with the annotation's savepoint or "empty
	// state", and the annotation's name): the user's answer decides what is restored.
	WarningPlanRestoreChoiceFormat = "upgrade plan: the job will be stopped without a savepoint and started from %s, as annotation %s says"

	// WarningPlanLastStateFormat (formatted with the age bound, "" without one, and the
	// fallback): last-state keeps Flink's HA store and the job ID, whose content the webhook
	// cannot see.
	WarningPlanLastStateFormat = "upgrade plan: last-state: the job will be redeployed from its latest checkpoint if Flink's HA store has one%s; else %s"

	// WarningPlanLastStateBoundFormat (formatted with the max checkpoint age,
	// kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age) is the age
	// bound of WarningPlanLastStateFormat.
	WarningPlanLastStateBoundFormat = " at most %s old"

	// WarningPlanFallbackStopFormat (formatted with spec.job.savepointsDir) is the last-state
	// fallback of a job that takes a savepoint on update.
	WarningPlanFallbackStopFormat = "stopped with a savepoint into %s and restored"

	// WarningPlanFallbackNoStop is the last-state fallback of a job that takes no savepoint on
	// update.
	WarningPlanFallbackNoStop = "restored from its newest savepoint (takeSavepointOnUpdate false)"

	// WarningPlanFallbackFromSavepointFormat (formatted with the path) is the last-state
	// fallback of an update that names a savepoint in spec.job.fromSavepoint anew: it is
	// restored, and the job is not stopped with a savepoint first.
	WarningPlanFallbackFromSavepointFormat = "stopped without a savepoint and restored from spec.job.fromSavepoint %s"

	// WarningPlanStateless: upgradeMode stateless throws the state away on every redeploy.
	WarningPlanStateless = "upgrade plan: the job will be redeployed from EMPTY STATE (upgradeMode stateless): its state is not kept"

	// WarningPlanWaitFormat (formatted with the decision's reason): the controller waits
	// before it decides.
	WarningPlanWaitFormat = "upgrade plan: the controller waits before it redeploys the job: %s"
)

// WarningDiscardStateUnusedFormat (formatted with DiscardStateAnnotation and the running job's
// ID): the confirmation names the running job, but the update throws no state away; left on
// the cluster, it would confirm a later update that does.
const WarningDiscardStateUnusedFormat = "annotation %s=%s names the running job, but this update throws none of its state away: remove it, or it confirms the next update that does"
