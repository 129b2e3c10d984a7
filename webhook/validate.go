package webhook

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/flink-admission/flink-admission/celrules"
	"github.com/flink-admission/flink-admission/policy"
)

// validator is the validating webhook's admission.Handler. It does not assume the
// mutating webhook ran (that one may be switched off): the policy judges the object as it
// is. It keeps no state between requests, so a dry-run request is judged exactly like a
// real one and leaves nothing behind.
type validator struct {
	policy policy.Validator
	rules  *celrules.Validator
}

var _ admission.Handler = &validator{}

// Handle implements admission.Handler.
func (v *validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	st := stateFrom(ctx)
	st.handled = true
	st.operation = operationLabel(req.Operation)

	if r := checkReview(&req); r != nil {
		return refuse(ctx, st, webhookValidate, &req, r)
	}
	fc, err := decodeCluster(req.Object.Raw)
	if err != nil {
		return refuse(ctx, st, webhookValidate, &req, &refusal{rule: ruleUndecodableObject, msg: fmt.Sprintf(msgObjectUndecodableFmt, err)})
	}
	obj, err := decodeUnstructured(req.Object.Raw)
	if err != nil {
		return refuse(ctx, st, webhookValidate, &req, &refusal{rule: ruleUndecodableObject, msg: fmt.Sprintf(msgObjectUndecodableFmt, err)})
	}

	// The CEL rules get the objects as sent, without celrules' Default: the API server
	// applies the CRD's defaults when it decodes a request and when it reads the stored
	// object, before any webhook sees them.
	var (
		errs, celErrs field.ErrorList
		warnings      []string
	)
	if req.Operation == admissionv1.Update {
		old, err := decodeCluster(req.OldObject.Raw)
		if err != nil {
			return refuse(ctx, st, webhookValidate, &req, &refusal{rule: ruleUndecodableObject, msg: fmt.Sprintf(msgOldUndecodableFmt, err)})
		}
		oldObj, err := decodeUnstructured(req.OldObject.Raw)
		if err != nil {
			return refuse(ctx, st, webhookValidate, &req, &refusal{rule: ruleUndecodableObject, msg: fmt.Sprintf(msgOldUndecodableFmt, err)})
		}
		errs, warnings = v.policy.ValidateUpdate(old, fc)
		celErrs = v.rules.Validate(ctx, obj, oldObj)
	} else {
		errs, warnings = v.policy.ValidateCreate(fc)
		celErrs = v.rules.Validate(ctx, obj, nil)
	}
	errs = celrules.Merge(errs, celErrs)

	if len(warnings) > 0 {
		warningsTotal.WithLabelValues(webhookValidate).Add(float64(len(warnings)))
	}
	if len(errs) == 0 {
		st.allowed = true
		resp := admission.Allowed("")
		resp.Warnings = warnings
		return resp
	}
	rules := make([]string, len(errs))
	for i, e := range errs {
		rules[i] = ruleLabel(e)
		denialsTotal.WithLabelValues(webhookValidate, rules[i]).Inc()
	}
	name := fc.Name
	if name == "" {
		name = req.Name
	}
	// A denial is the user's business (kubectl shows it); log it for debugging only.
	logf.FromContext(ctx).V(1).Info("denied a FlinkCluster", "rules", rules, "uid", req.UID,
		"operation", req.Operation, "namespace", req.Namespace, "name", name, "dryRun", req.DryRun != nil && *req.DryRun)
	// A 422 Invalid status with one cause per field error: kubectl prints every field path
	// ("The FlinkCluster "x" is invalid: spec.job.mode: ...").
	status := apierrors.NewInvalid(flinkClusterGroupKind, name, errs).ErrStatus
	resp := admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed:  false,
		Result:   &status,
		Warnings: warnings,
	}}
	return resp
}

// ruleLabel names the rule of a denial for the metrics: the policy's rule name or, for an
// error without one (a CEL rule's), its field path and type. Indices and map keys are
// replaced by "*", so that the label stays within the rules there are, whatever the
// objects contain.
func ruleLabel(e *field.Error) string {
	if r := policy.RuleOf(e); r != policy.RuleUnknown && r != "" {
		return r
	}
	return genericPath(e.Field) + ":" + string(e.Type)
}

// genericPath replaces every bracketed index or key of a field path by "*".
func genericPath(p string) string {
	if !strings.Contains(p, "[") {
		return p
	}
	var b strings.Builder
	b.Grow(len(p))
	depth := 0
	for _, c := range p {
		switch {
		case c == '[':
			if depth == 0 {
				b.WriteString("[*]")
			}
			depth++
		case c == ']':
			if depth > 0 {
				depth--
			}
		case depth == 0:
			b.WriteRune(c)
		}
	}
	return b.String()
}
