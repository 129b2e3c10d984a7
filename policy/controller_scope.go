package policy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/scope"
)

// RuleDeploymentWithoutController: spec.jobManager.deploymentType, Forbidden (only with
// ControllerScope.Deny): a Deployment-mode cluster that no Deployment-aware controller runs.
// It is not in Rules(): its verdict depends on the install (the controller's scope), not on
// the cluster alone, and the CRD cannot mirror it.
const RuleDeploymentWithoutController = "deployment-without-controller"

// ControllerScope is what the webhook knows of the controller that runs Deployment
// JobManagers: whether this install runs one, and which clusters it runs. The
// flink-on-k8s-operator does not know deploymentType, so a Deployment-mode cluster it runs
// gets a JobManager Job, silently.
type ControllerScope struct {
	// Running says this install runs its controller (serve --enable-controller).
	Running bool
	// Scope is the set of clusters the controller runs.
	Scope scope.Scope
	// Deny makes such a cluster a denial rather than a warning.
	Deny bool
}

// reason says why no Deployment-aware controller runs a cluster in namespace ns with labels
// l; "" when the controller runs it.
func (c ControllerScope) reason(ns string, l map[string]string) string {
	if !c.Running {
		return "flink-admission runs as a webhook only (--enable-controller=false)"
	}
	return c.Scope.Why(ns, l)
}

// ValidateControllerScope judges a Deployment-mode Application cluster against the
// controller's scope: outside it, a warning, or with Deny an error. old is the stored cluster
// of an update (nil on create); a cluster that was already outside the scope only gets the
// warning, so that it stays editable (ratcheting), while an update that takes it out (a label
// or namespace change of the selector) is denied. Clusters outside Application mode are left
// to RuleDeploymentRequiresApplicationMode.
func ValidateControllerScope(old, fc *v1beta1.FlinkCluster, c ControllerScope) (field.ErrorList, []string) {
	if fc == nil || fc.Spec.GetDeploymentType() != v1beta1.JobManagerDeploymentTypeDeployment || !fc.Spec.IsApplicationMode() {
		return nil, nil
	}
	why := c.reason(fc.Namespace, fc.Labels)
	if why == "" {
		return nil, nil
	}
	wasOutside := old != nil && old.Spec.GetDeploymentType() == v1beta1.JobManagerDeploymentTypeDeployment &&
		c.reason(old.Namespace, old.Labels) != ""
	if !c.Deny || wasOutside {
		return nil, []string{fmt.Sprintf(WarningDeploymentWithoutControllerFormat, why)}
	}
	return field.ErrorList{field.Forbidden(pathDeploymentType, fmt.Sprintf(DeploymentWithoutControllerFormat, why)).
		WithOrigin(RuleDeploymentWithoutController)}, nil
}
