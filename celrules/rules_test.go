package celrules

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/celrules/crdvalidation"
	"github.com/flink-admission/flink-admission/deploy"
)

var (
	sharedOnce      sync.Once
	sharedValidator *Validator
	sharedErr       error
)

// validator returns one Validator for the whole test binary: compiling is the expensive part.
func validator(t testing.TB) *Validator {
	t.Helper()
	sharedOnce.Do(func() { sharedValidator, sharedErr = New() })
	require.NoError(t, sharedErr, "compiling the CRD's rules")
	return sharedValidator
}

// rules returns v's rules with their costs.
func rules(t testing.TB, v *Validator) []Rule {
	t.Helper()
	rs, err := v.Rules()
	require.NoError(t, err, "listing the rules with their costs")
	return rs
}

// yamlRule is a rule as read straight from the CRD manifest, without the apiextensions types.
type yamlRule struct {
	Path, Rule, Message, FieldPath, Reason string
	OptionalOldSelf                        bool
}

// rulesInManifest walks the raw YAML of the v1beta1 schema and returns every
// x-kubernetes-validations entry wherever it sits (properties, items, additionalProperties,
// allOf/anyOf/oneOf/not), independently of the structural-schema walk under test.
func rulesInManifest(t *testing.T) []yamlRule {
	t.Helper()
	var crd map[string]any
	require.NoError(t, yaml.Unmarshal(deploy.CRD, &crd))
	versions, _ := crd["spec"].(map[string]any)["versions"].([]any)
	var schema map[string]any
	for _, v := range versions {
		v := v.(map[string]any)
		if v["name"] == "v1beta1" {
			schema = v["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)
		}
	}
	require.NotNil(t, schema, "the CRD has no v1beta1 schema")

	var out []yamlRule
	var walk func(node map[string]any, path string)
	walk = func(node map[string]any, path string) {
		if rules, ok := node["x-kubernetes-validations"].([]any); ok {
			for _, r := range rules {
				r := r.(map[string]any)
				str := func(k string) string { s, _ := r[k].(string); return s }
				opt, _ := r["optionalOldSelf"].(bool)
				out = append(out, yamlRule{path, str("rule"), str("message"), str("fieldPath"), str("reason"), opt})
			}
		}
		if props, ok := node["properties"].(map[string]any); ok {
			for name, p := range props {
				walk(p.(map[string]any), joinPath(path, name))
			}
		}
		if items, ok := node["items"].(map[string]any); ok {
			walk(items, path+"[*]")
		}
		if ap, ok := node["additionalProperties"].(map[string]any); ok {
			walk(ap, path+"{*}")
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			if list, ok := node[k].([]any); ok {
				for i, n := range list {
					walk(n.(map[string]any), fmt.Sprintf("%s<%s %d>", path, k, i))
				}
			}
		}
		if not, ok := node["not"].(map[string]any); ok {
			walk(not, path+"<not>")
		}
	}
	walk(schema, "")
	return out
}

func sortRules(rs []yamlRule) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Path != rs[j].Path {
			return rs[i].Path < rs[j].Path
		}
		return rs[i].Rule < rs[j].Rule
	})
}

// TestRulesMatchManifest is the drift test: the rules the Validator compiled and evaluates
// are exactly the rules of the generated CRD, field for field, and there are some.
func TestRulesMatchManifest(t *testing.T) {
	want := rulesInManifest(t)
	require.NotEmpty(t, want, "the CRD carries no x-kubernetes-validations: the walk is broken")

	var got []yamlRule
	for _, r := range rules(t, validator(t)) {
		got = append(got, yamlRule{r.Path, r.Rule, r.Message, r.FieldPath, r.Reason, r.OptionalOldSelf})
		require.NotZero(t, r.EstimatedCost, "rule at %q has no cost estimate, so it was not compiled: %s", r.Path, r.Rule)
		require.Equal(t, strings.Contains(r.Rule, "oldSelf"), r.UsesOldSelf, "rule at %q: %s", r.Path, r.Rule)
	}
	sortRules(want)
	sortRules(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("compiled rules differ from the CRD manifest (-manifest +compiled):\n%s", diff)
	}
}

// TestRuleCosts logs each rule's static estimated cost, as the API server computes it when
// the CRD is created, and checks it against the API server's per-rule limit; the sum is
// checked against the per-CRD limit.
func TestRuleCosts(t *testing.T) {
	ruleList := rules(t, validator(t))
	where := func(r Rule) string {
		if r.Path+r.FieldPath == "" {
			return "<root>"
		}
		return r.Path + r.FieldPath
	}
	width := 0
	for _, r := range ruleList {
		width = max(width, len(where(r)))
	}
	var total uint64
	table := []string{fmt.Sprintf("%9s  %-*s  %s", "est. cost", width, "location", "rule")}
	for _, r := range ruleList {
		rule := r.Rule
		if len(rule) > 60 {
			rule = rule[:59] + "…"
		}
		table = append(table, fmt.Sprintf("%9d  %-*s  %s", r.EstimatedCost, width, where(r), rule))
		total += r.EstimatedCost
		if r.EstimatedCost > crdvalidation.StaticEstimatedCostLimit {
			t.Errorf("rule at %s costs %d, above the API server's per-rule limit %d: %s", where(r), r.EstimatedCost, uint64(crdvalidation.StaticEstimatedCostLimit), r.Rule)
		}
	}
	t.Logf("static estimated cost of each rule, as the API server computes it when the CRD is created:\n%s", strings.Join(table, "\n"))
	t.Logf("%d rules, total %d; limits: %d per rule and %d per CRD at creation, %d per call and %d per object at runtime",
		len(ruleList), total, uint64(crdvalidation.StaticEstimatedCostLimit), uint64(crdvalidation.StaticEstimatedCRDCostLimit), uint64(PerCallLimit), uint64(RuntimeCostBudget))
	if total > crdvalidation.StaticEstimatedCRDCostLimit {
		t.Errorf("total estimated cost %d is above the API server's per-CRD limit %d", total, uint64(crdvalidation.StaticEstimatedCRDCostLimit))
	}
}

// TestAPIServerAcceptsCRD runs the API server's own CRD validation (the code behind
// `kubectl apply` of a CRD) in process on the embedded CRD: a rule it refuses, for cost or
// syntax, fails here in a second instead of in an envtest run. New relies on it.
func TestAPIServerAcceptsCRD(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(deploy.CRD, crd))
	require.NoError(t, crdvalidation.Validate(crd))
}

// TestBadRules feeds the API server's CRD validation, and New's constructor, CRDs with a
// rule the API server refuses: the validation names the reason, and a Validator built
// anyway never lets an object through a rule it cannot evaluate.
func TestBadRules(t *testing.T) {
	// withRootRule returns a small resource schema with rule as its only rule: a
	// spec.image.name string and the implicit metadata are enough for these rules.
	withRootRule := func(rule apiextensionsv1.ValidationRule) *apiextensionsv1.JSONSchemaProps {
		str := apiextensionsv1.JSONSchemaProps{Type: "string"}
		return &apiextensionsv1.JSONSchemaProps{
			Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"apiVersion": str,
				"kind":       str,
				"metadata":   {Type: "object"},
				"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"image": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": str}},
				}},
			},
			XValidations: apiextensionsv1.ValidationRules{rule},
		}
	}
	yes := true
	cases := map[string]struct {
		rule    apiextensionsv1.ValidationRule
		wantErr string
		// compiles: the rule is well-formed and only the CRD validation refuses it.
		compiles bool
	}{
		"deny: syntax error": {
			rule:    apiextensionsv1.ValidationRule{Rule: "self.metadata.name.size() <="},
			wantErr: "compilation failed",
		},
		"deny: not a bool": {
			rule:    apiextensionsv1.ValidationRule{Rule: "self.metadata.name.size()"},
			wantErr: "must evaluate to a bool",
		},
		"deny: unknown field": {
			rule:    apiextensionsv1.ValidationRule{Rule: "self.spec.noSuchField == 1"},
			wantErr: "undefined field",
		},
		"deny: fieldPath not in the schema": {
			rule:     apiextensionsv1.ValidationRule{Rule: "true", FieldPath: ".spec.noSuchField"},
			wantErr:  "fieldPath: Invalid value: \".spec.noSuchField\": must be a valid path",
			compiles: true,
		},
		"deny: estimated cost above the per-rule limit": {
			// A string reached through oldSelf.value() has no size estimate, so a
			// string function on it is priced as unbounded.
			rule: apiextensionsv1.ValidationRule{
				Rule:            "oldSelf.hasValue() && oldSelf.value().spec.image.name.lowerAscii() == self.spec.image.name",
				OptionalOldSelf: &yes,
			},
			wantErr:  "rule: Forbidden: estimated rule cost exceeds budget",
			compiles: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			require.NoError(t, yaml.UnmarshalStrict(deploy.CRD, crd))
			crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1beta1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: withRootRule(tc.rule)},
			}}
			require.ErrorContains(t, crdvalidation.Validate(crd), tc.wantErr)

			v, err := newFromCRDObject(crd, "v1beta1")
			if err != nil {
				require.True(t, errors.Is(err, errCompile), "error is not a refused rule: %v", err)
				return
			}
			if tc.compiles {
				return
			}
			obj := map[string]any{
				"apiVersion": "flinkoperator.k8s.io/v1beta1", "kind": "FlinkCluster",
				"metadata": map[string]any{"name": "c", "namespace": "ns"},
				"spec":     map[string]any{"image": map[string]any{"name": "flink"}},
			}
			require.NotEmpty(t, v.Validate(context.Background(), obj, nil), "a rule that does not compile lets the object through")
		})
	}

	t.Run("allow: the same constructor accepts a good root rule", func(t *testing.T) {
		v, err := newFromSchema(withRootRule(apiextensionsv1.ValidationRule{Rule: "self.metadata.name.size() <= 63"}), "v1beta1")
		require.NoError(t, err)
		require.Equal(t, []Rule{{Rule: "self.metadata.name.size() <= 63", EstimatedCost: 5}}, rules(t, v))
	})
	t.Run("deny: unknown version", func(t *testing.T) {
		_, err := newFromCRD(deploy.CRD, "v1")
		require.ErrorContains(t, err, `no openAPIV3Schema for version "v1"`)
	})
	t.Run("deny: not a CRD", func(t *testing.T) {
		_, err := newFromCRD([]byte("spec: [1, 2"), "v1beta1")
		require.ErrorContains(t, err, "decoding the CRD")
	})
}
