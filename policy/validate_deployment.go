package policy

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

var (
	pathJobMode       = field.NewPath("spec", "job", "mode")
	pathFlinkProps    = field.NewPath("spec", "flinkProperties")
	pathHAType        = pathFlinkProps.Key(PropertyHAType)
	pathHAStorageDir  = pathFlinkProps.Key(PropertyHAStorageDir)
	pathShutdown      = pathFlinkProps.Key(PropertyShutdownOnApplicationFinish)
	pathJMReplicas    = field.NewPath("spec", "jobManager", "replicas")
	pathCancelRequest = field.NewPath("spec", "job", "cancelRequested")
)

// validateDeployment checks what a Deployment JobManager requires: an application cluster,
// Flink's Kubernetes HA with a storage directory, one replica, and a JobManager that stays up after the
// job ends. These are the CRD's optionalOldSelf rules, and they ratchet exactly as the CEL
// does: on update (old != nil), a violation is a warning when the old object broke the
// same condition — whatever the old deploymentType was, as in the CEL expression.
func validateDeployment(fc, old *v1beta1.FlinkCluster) (field.ErrorList, []string) {
	s := &fc.Spec
	if s.GetDeploymentType() != v1beta1.JobManagerDeploymentTypeDeployment {
		return nil, nil
	}
	var errs field.ErrorList
	var warnings []string
	report := func(err *field.Error, oldBroke func(*v1beta1.FlinkClusterSpec) bool) {
		if old != nil && oldBroke(&old.Spec) {
			warnings = append(warnings, existingViolation(err))
			return
		}
		errs = append(errs, err)
	}

	if !s.IsApplicationMode() {
		var mode string
		if s.Job != nil && s.Job.Mode != nil {
			mode = string(*s.Job.Mode)
		}
		report(field.Invalid(pathJobMode, mode, MessageDeploymentRequiresApplicationMode).
			WithOrigin(RuleDeploymentRequiresApplicationMode),
			func(o *v1beta1.FlinkClusterSpec) bool { return !o.IsApplicationMode() })
	}
	if !flinkcluster.HAEnabled(s.FlinkProperties) {
		report(field.Required(pathHAType, MessageDeploymentRequiresHA).
			WithOrigin(RuleDeploymentRequiresHA),
			func(o *v1beta1.FlinkClusterSpec) bool { return !flinkcluster.HAEnabled(o.FlinkProperties) })
	}
	if flinkcluster.HAEnabled(s.FlinkProperties) && !flinkcluster.KubernetesHA(s.FlinkProperties) {
		report(field.Invalid(pathHAType, flinkcluster.HAType(s.FlinkProperties), MessageDeploymentRequiresKubernetesHA).
			WithOrigin(RuleDeploymentRequiresKubernetesHA),
			func(o *v1beta1.FlinkClusterSpec) bool {
				return flinkcluster.HAEnabled(o.FlinkProperties) && !flinkcluster.KubernetesHA(o.FlinkProperties)
			})
	}
	if s.FlinkProperties[PropertyHAStorageDir] == "" {
		report(field.Required(pathHAStorageDir, MessageDeploymentRequiresHAStorageDir).
			WithOrigin(RuleDeploymentRequiresHAStorageDir),
			func(o *v1beta1.FlinkClusterSpec) bool { return o.FlinkProperties[PropertyHAStorageDir] == "" })
	}
	if s.JobManager != nil && s.JobManager.Replicas != nil && *s.JobManager.Replicas != v1beta1.DefaultJobManagerReplicas {
		report(field.Invalid(pathJMReplicas, *s.JobManager.Replicas, MessageDeploymentRequiresSingleJobManager).
			WithOrigin(RuleDeploymentRequiresSingleJobManager),
			func(o *v1beta1.FlinkClusterSpec) bool {
				return o.JobManager != nil && o.JobManager.Replicas != nil && *o.JobManager.Replicas != v1beta1.DefaultJobManagerReplicas
			})
	}
	if shutdownOnFinish(s.FlinkProperties) {
		report(field.Forbidden(pathShutdown, MessageDeploymentForbidsShutdownOnFinish).
			WithOrigin(RuleDeploymentForbidsShutdownOnFinish),
			func(o *v1beta1.FlinkClusterSpec) bool { return shutdownOnFinish(o.FlinkProperties) })
	}
	return errs, warnings
}

// validateCancelOnCreate rejects cancelRequested true on a new job. Like its CEL rule
// (optionalOldSelf on spec.job), it applies on create and on an update whose old object
// had no job; on other updates cancelRequested is judged by the transition rules.
func validateCancelOnCreate(fc, old *v1beta1.FlinkCluster) field.ErrorList {
	if fc.Spec.Job == nil || !isTrue(fc.Spec.Job.CancelRequested) {
		return nil
	}
	if old != nil && old.Spec.Job != nil {
		return nil
	}
	return field.ErrorList{field.Forbidden(pathCancelRequest, MessageCancelOnCreate).
		WithOrigin(RuleCancelOnCreate)}
}

var pathUpgradeMode = field.NewPath("spec", "job", "upgradeMode")

// validateUpgradeMode rejects upgradeMode last-state where the controller cannot restore
// from Flink's HA store: without a Deployment JobManager (whose HA data it keeps across
// redeploys) or with HA other than Kubernetes (ZooKeeper or a custom factory, whose
// checkpoint store it cannot read). Like its CEL rule it has no ratcheting: the field is
// new, so no stored cluster breaks it, and a cluster that would must not be redeployed on
// a guess.
func validateUpgradeMode(fc *v1beta1.FlinkCluster) field.ErrorList {
	s := &fc.Spec
	if s.Job.GetUpgradeMode() != v1beta1.UpgradeModeLastState || flinkcluster.LastStateSupported(s) {
		return nil
	}
	return field.ErrorList{field.Invalid(pathUpgradeMode, string(v1beta1.UpgradeModeLastState),
		MessageLastStateRequiresKubernetesHA).
		WithOrigin(RuleLastStateRequiresKubernetesHA)}
}
