package celrules

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	schemacel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Rule is one x-kubernetes-validations rule of the CRD.
type Rule struct {
	// Path is the schema location of the rule: "" for the root, "spec", "spec.jobManager";
	// list items are written "[*]" and map values "{*}".
	Path string
	// Rule is the CEL expression.
	Rule string
	// Message is the message of a denial.
	Message string
	// FieldPath is the rule's fieldPath, relative to Path ("" when the rule has none).
	FieldPath string
	// Reason is the rule's reason ("" when the rule has none, which means FieldValueInvalid).
	Reason string
	// OptionalOldSelf reports whether the rule also runs on create, with oldSelf absent.
	OptionalOldSelf bool
	// UsesOldSelf reports whether the rule reads oldSelf (a transition rule).
	UsesOldSelf bool
	// EstimatedCost is the static worst-case cost the API server computes when the CRD is
	// created: the expression's maximum cost times the number of times the rule can run in
	// one object. The API server refuses a CRD with a rule above
	// validation.StaticEstimatedCostLimit.
	EstimatedCost uint64
}

// Limits of the API server, re-exported so that callers and tests need not import the
// apiextensions internals.
const (
	// PerCallLimit is the runtime cost limit of one rule evaluation.
	PerCallLimit = celconfig.PerCallLimit
	// RuntimeCostBudget is the runtime cost budget of all the rules for one object.
	RuntimeCostBudget = celconfig.RuntimeCELCostBudget
)

// compileRules compiles every rule of the schema the way the API server does when the CRD
// is created (the NewExpressions environment of the default compatibility version, CEL type
// declarations derived from the resource root) and returns them with their costs. The tests
// prove that the API server accepts the embedded CRD (package crdvalidation), so an error
// here means the walk and the API server disagree.
func compileRules(root *structuralschema.Structural) ([]Rule, error) {
	w := &ruleWalker{
		envSet: environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()),
	}
	one := uint64(1)
	w.walk(root, model.SchemaDeclType(root, true), "", &one)
	if len(w.errs) > 0 {
		return nil, errors.Join(w.errs...)
	}
	return w.rules, nil
}

type ruleWalker struct {
	envSet *environment.EnvSet
	rules  []Rule
	errs   []error
}

// walk visits s, whose CEL type is declType, at schema location path. cardinality is how
// many times a value at this location can occur in one object, nil when unbounded; it
// follows the API server's CELSchemaContext.
func (w *ruleWalker) walk(s *structuralschema.Structural, declType *apiservercel.DeclType, path string, cardinality *uint64) {
	if s == nil {
		return
	}
	if len(s.XValidations) > 0 {
		w.compile(s, declType, path, cardinality)
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		prop := s.Properties[name]
		child := w.propertyDeclType(declType, &prop, name)
		w.walk(&prop, child, joinPath(path, name), childCardinality(s, cardinality))
	}
	if s.Items != nil {
		w.walk(s.Items, elemDeclType(declType), path+"[*]", childCardinality(s, cardinality))
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Structural != nil {
		ap := s.AdditionalProperties.Structural
		w.walk(ap, elemDeclType(declType), path+"{*}", childCardinality(s, cardinality))
	}
}

func (w *ruleWalker) compile(s *structuralschema.Structural, declType *apiservercel.DeclType, path string, cardinality *uint64) {
	if declType == nil {
		w.errs = append(w.errs, fmt.Errorf("no CEL type for the schema at %q", displayPath(path)))
		return
	}
	results, err := schemacel.Compile(s, declType, celconfig.PerCallLimit, w.envSet, schemacel.NewExpressionsEnvLoader())
	if err != nil {
		w.errs = append(w.errs, fmt.Errorf("compiling the rules at %q: %w", displayPath(path), err))
		return
	}
	for i, res := range results {
		src := s.XValidations[i]
		if res.Error != nil {
			w.errs = append(w.errs, fmt.Errorf("rule %d at %q (%s): %s", i, displayPath(path), src.Rule, res.Error.Detail))
			continue
		}
		reason := ""
		if src.Reason != nil {
			reason = string(*src.Reason)
		}
		w.rules = append(w.rules, Rule{
			Path:            path,
			Rule:            src.Rule,
			Message:         src.Message,
			FieldPath:       src.FieldPath,
			Reason:          reason,
			OptionalOldSelf: src.OptionalOldSelf != nil && *src.OptionalOldSelf,
			UsesOldSelf:     res.UsesOldSelf,
			EstimatedCost:   expressionCost(res, cardinality),
		})
	}
}

// propertyDeclType returns the CEL type of property name of an object typed parent, the way
// the API server's validator derives it: from the parent's fields when the name is a CEL
// identifier, from the property's own schema otherwise.
func (w *ruleWalker) propertyDeclType(parent *apiservercel.DeclType, prop *structuralschema.Structural, name string) *apiservercel.DeclType {
	if escaped, ok := apiservercel.Escape(name); ok {
		if parent == nil {
			return nil
		}
		if f, ok := parent.Fields[escaped]; ok {
			return f.Type
		}
		return nil
	}
	return model.SchemaDeclType(prop, prop.XEmbeddedResource)
}

// elemDeclType returns the CEL type of the items of a list or the values of a map.
func elemDeclType(parent *apiservercel.DeclType) *apiservercel.DeclType {
	if parent == nil {
		return nil
	}
	return parent.ElemType
}

// childCardinality is the API server's CELSchemaContext.childContext: the children of a
// list or map occur at most maxItems / maxProperties times per parent, unbounded without
// such a limit; the children of an object occur once per parent.
func childCardinality(parent *structuralschema.Structural, cardinality *uint64) *uint64 {
	if cardinality == nil {
		return nil
	}
	var maxElements *uint64
	switch {
	case parent.Type == "object" && parent.AdditionalProperties != nil:
		if parent.ValueValidation != nil && parent.ValueValidation.MaxProperties != nil {
			m := uint64(max(*parent.ValueValidation.MaxProperties, 0))
			maxElements = &m
		}
	case parent.Type == "array":
		if parent.ValueValidation != nil && parent.ValueValidation.MaxItems != nil {
			m := uint64(max(*parent.ValueValidation.MaxItems, 0))
			maxElements = &m
		}
	default:
		one := uint64(1)
		maxElements = &one
	}
	if maxElements == nil {
		return nil
	}
	c := multiplyWithOverflowGuard(*cardinality, *maxElements)
	return &c
}

// expressionCost is the API server's getExpressionCost: the expression's maximum cost times
// the bounded cardinality of its location, or the compiler's estimate when unbounded.
func expressionCost(res schemacel.CompilationResult, cardinality *uint64) uint64 {
	if cardinality != nil {
		return multiplyWithOverflowGuard(res.MaxCost, *cardinality)
	}
	return multiplyWithOverflowGuard(res.MaxCost, res.MaxCardinality)
}

func multiplyWithOverflowGuard(a, b uint64) uint64 {
	if a == 0 {
		return 0
	}
	if math.MaxUint64/a < b {
		return math.MaxUint64
	}
	return a * b
}

// ruleInAllOf returns the location of the first rule nested in an allOf of s (at path).
func ruleInAllOf(s *structuralschema.Structural, path string) (string, bool) {
	if s == nil {
		return "", false
	}
	if s.ValueValidation != nil {
		for i := range s.ValueValidation.AllOf {
			if hasNestedRules(&s.ValueValidation.AllOf[i]) {
				return path, true
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		prop := s.Properties[name]
		if p, ok := ruleInAllOf(&prop, joinPath(path, name)); ok {
			return p, true
		}
	}
	if p, ok := ruleInAllOf(s.Items, path+"[*]"); ok {
		return p, true
	}
	if s.AdditionalProperties != nil {
		return ruleInAllOf(s.AdditionalProperties.Structural, path+"{*}")
	}
	return "", false
}

func hasNestedRules(n *structuralschema.NestedValueValidation) bool {
	if len(n.ValidationExtensions.XValidations) > 0 {
		return true
	}
	for i := range n.AllOf {
		if hasNestedRules(&n.AllOf[i]) {
			return true
		}
	}
	for _, p := range n.Properties {
		if hasNestedRules(&p) {
			return true
		}
	}
	if n.Items != nil && hasNestedRules(n.Items) {
		return true
	}
	return n.AdditionalProperties != nil && hasNestedRules(n.AdditionalProperties)
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func displayPath(path string) string {
	if path == "" {
		return "<root>"
	}
	return path
}
