// Package pipeline is the admission of one FlinkCluster as one pure function, Admit: the
// defaulting of the mutating webhook with its JSON patch, and the validation of the
// validating webhook, with every error naming its rule. The webhook handlers and `check`
// both call it, so that what the server answers and what `check` predicts cannot drift.
//
// There is no HTTP, no decoding and no CEL here: the transport decodes the objects and
// encodes the verdict, and the CRD's CEL rules are the API server's business (the parity
// table proves that the policy mirrors every one of them).
package pipeline

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/policy"
)

// Steps selects what Admit does.
type Steps uint8

const (
	// Default applies policy.Default to a deep copy of the object: what the mutating
	// webhook does (DefaultingPatch then turns the object as sent into the copy).
	Default Steps = 1 << iota
	// Validate judges the object (the defaulted copy when Default runs too) with the
	// policy: what the validating webhook does.
	Validate
	// Stage, with Validate, turns the errors of the rules only the webhook enforces into
	// warnings (policy.Stage): what the staged validating webhook does for namespaces
	// labelled policy.EnforcementLabel=policy.EnforcementWarn.
	Stage
)

// Pipeline admits FlinkClusters. Its zero value is ready to use, with the real clock.
type Pipeline struct {
	// Clock is the policy's clock (the job-update rule reads the time). Nil means the real
	// clock.
	Clock clock.PassiveClock
	// Controller is the controller that runs Deployment JobManagers, as the server knows it:
	// Validate judges Deployment-mode clusters against its scope
	// (policy.ValidateControllerScope). Nil skips that check (check, tests, benchmarks).
	Controller *policy.ControllerScope
}

// Verdict is the answer on one FlinkCluster.
type Verdict struct {
	// Object is the object judged: the defaulted copy when Default ran, otherwise the
	// object given to Admit.
	Object *v1beta1.FlinkCluster
	// Errors are the reasons of a denial (Validate only); each names its rule in Origin.
	Errors field.ErrorList
	// Rules names the rule of each error: Rules[i] is the rule of Errors[i], one of the
	// policy's rule names, for metrics labels.
	Rules []string
	// Warnings are returned to the client, allowed or not (Validate only).
	Warnings []string
	// Warned names the rule of each error that Stage turned into a warning, in order.
	Warned []string
}

// Allowed reports whether the verdict admits the object.
func (v *Verdict) Allowed() bool { return len(v.Errors) == 0 }

// Admit runs the steps on obj; old is the stored object of an update and nil on create.
// Neither argument is modified. A nil obj is denied (rule policy.RuleNoObject), never
// admitted.
func (p Pipeline) Admit(old, obj *v1beta1.FlinkCluster, steps Steps) Verdict {
	v := Verdict{Object: obj}
	if obj == nil {
		v.Errors, _ = policy.ValidateCreate(nil)
		v.Rules = rules(v.Errors)
		return v
	}
	if steps&Default != 0 {
		v.Object = obj.DeepCopy()
		policy.Default(v.Object)
	}
	if steps&Validate != 0 {
		val := policy.Validator{Clock: p.Clock}
		if old == nil {
			v.Errors, v.Warnings = val.ValidateCreate(v.Object)
		} else {
			v.Errors, v.Warnings = val.ValidateUpdate(old, v.Object)
		}
		if p.Controller != nil {
			errs, warnings := policy.ValidateControllerScope(old, v.Object, *p.Controller)
			v.Errors, v.Warnings = append(v.Errors, errs...), append(v.Warnings, warnings...)
		}
		if steps&Stage != 0 {
			s := policy.Stage(v.Errors)
			v.Errors, v.Warnings, v.Warned = s.Errors, append(v.Warnings, s.Warnings...), rules(s.Warned)
		}
		v.Rules = rules(v.Errors)
	}
	return v
}

// rules returns the rule name of every error.
func rules(errs field.ErrorList) []string {
	if len(errs) == 0 {
		return nil
	}
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = policy.RuleOf(e)
	}
	return out
}
