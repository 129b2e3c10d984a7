package check

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flink-admission/flink-admission/policy"
)

// RuleCRDSchema names a denial by a constraint of the CRD's OpenAPI schema that no policy
// rule mirrors (a value of the wrong type, an enum or range the webhook leaves to the CRD):
// docs/policy.md lists them under "Schema constraints of the CRD".
const RuleCRDSchema = "crd-schema"

// crdRules names the policy rule of each of the CRD's errors. The policy mirrors every CEL
// rule of the CRD and some of its schema, so its verdict on the same object holds the same
// denial: the error on the same field with the same type, or failing that with the same
// detail (a CEL rule on the object itself reports no field path). An error the policy does
// not give is the schema's own.
func crdRules(crdErrs, policyErrs field.ErrorList) []string {
	rules := make([]string, len(crdErrs))
	for i, e := range crdErrs {
		rules[i] = RuleCRDSchema
		for _, p := range policyErrs {
			if p.Field == e.Field && p.Type == e.Type {
				rules[i] = policy.RuleOf(p)
				break
			}
		}
		if rules[i] != RuleCRDSchema {
			continue
		}
		for _, p := range policyErrs {
			if p.Detail == e.Detail {
				rules[i] = policy.RuleOf(p)
				break
			}
		}
	}
	return rules
}

// ruleOfUnjudged names the denial of an object that never reached the rules: one that does
// not decode as a FlinkCluster breaks the CRD's schema; anything else is check's own failure.
func ruleOfUnjudged(e *field.Error) string {
	if e.Type == field.ErrorTypeInternal {
		return policy.RuleUnknown
	}
	return RuleCRDSchema
}

// warningField is the field path a warning begins with, "spec.job.restartPolicy: ..." or
// "spec.flinkProperties[high-availability]: ...", as every warning of the policy does (a
// ratcheted error too: its text is the error's). ok is false for a warning that does not
// begin with a path.
func warningField(warning string) (path string, ok bool) {
	depth := 0
	for i, r := range warning {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth > 0:
		case r == ':' && strings.HasPrefix(warning[i:], ": "):
			return warning[:i], i > 0
		case r == ' ' || r == '\t':
			return "", false
		}
	}
	return "", false
}
