// Package celrules evaluates the CEL rules the FlinkCluster CRD carries
// (x-kubernetes-validations, generated from the XValidation markers in api/v1beta1) in
// process, with the API server's own CEL machinery: the same environment, the same cost
// limits, the same ratcheting. New builds the API server's CEL validator from the embedded
// CRD; the list of rules with their estimated costs is computed only when asked for
// (Rules). Whether the API server would accept the CRD at all is the business of package
// crdvalidation, which the tests run on the embedded CRD.
//
// It exists so that the webhook's policy and the CRD's rules can be compared case by case
// (see the parity test) and so that a client can learn, without a server, what the API
// server would say. It evaluates only the x-kubernetes-validations rules: OpenAPI schema
// checks (enum, minimum, maximum, required) are the API server's business and are not
// repeated here.
package celrules

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	schemacel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/model"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/common"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/deploy"
)

// Validator holds the CRD's compiled CEL rules. It is immutable after New and safe for
// concurrent use.
type Validator struct {
	// schema is the structural schema of the served version, which the CEL validator walks.
	schema *structuralschema.Structural
	// defaults is schema with the defaults pruned the way the API server prunes them before
	// serving (defaults must not carry unknown fields).
	defaults *structuralschema.Structural
	cel      *schemacel.Validator
	// openAPI checks types, enums, bounds and required fields, as the API server does
	// before it runs the CEL rules.
	openAPI apiservervalidation.SchemaValidator
	// rules lists the rules with their costs, computed on the first call of Rules: only the
	// parity tests, the docs and make bench ask for them.
	rules func() ([]Rule, error)
}

// New parses the embedded CRD and returns a Validator of its v1beta1 schema. It does not
// run the API server's CRD validation: the embedded CRD is fixed at build time and the
// tests prove the API server accepts it (package crdvalidation, and every envtest run
// installs it). A rule that does not compile would still never be skipped: the API
// server's CEL validator reports it as an error of every object it judges.
func New() (*Validator, error) {
	return newFromCRD(deploy.CRD, v1beta1.GroupVersion.Version)
}

// newFromCRD builds a Validator from a CRD manifest and the name of the version to serve.
func newFromCRD(manifest []byte, version string) (*Validator, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(manifest, crd); err != nil {
		return nil, fmt.Errorf("decoding the CRD: %w", err)
	}
	return newFromCRDObject(crd, version)
}

// newFromSchema builds a Validator from the openAPIV3Schema of one version, served as the
// only version of the embedded CRD (its names, group and approval annotation).
func newFromSchema(props *apiextensionsv1.JSONSchemaProps, version string) (*Validator, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(deploy.CRD, crd); err != nil {
		return nil, fmt.Errorf("decoding the CRD: %w", err)
	}
	crd.Spec.Versions = []apiextensionsv1.CustomResourceDefinitionVersion{{
		Name: version, Served: true, Storage: true,
		Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: props},
	}}
	return newFromCRDObject(crd, version)
}

// newFromCRDObject builds a Validator from the schema of version of crd.
func newFromCRDObject(crd *apiextensionsv1.CustomResourceDefinition, version string) (*Validator, error) {
	var props *apiextensionsv1.JSONSchemaProps
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Name == version && v.Schema != nil {
			props = v.Schema.OpenAPIV3Schema
		}
	}
	if props == nil {
		return nil, fmt.Errorf("the CRD has no openAPIV3Schema for version %q", version)
	}
	internal := &apiextensionsinternal.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(props, internal, nil); err != nil {
		return nil, fmt.Errorf("converting the %s schema: %w", version, err)
	}
	ss, err := structuralschema.NewStructural(internal)
	if err != nil {
		return nil, fmt.Errorf("the %s schema is not structural: %w", version, err)
	}
	// The API server evaluates rules nested in allOf; this CRD generator never writes them,
	// and a rule that Rules does not list must not go unnoticed.
	if path, ok := ruleInAllOf(ss, ""); ok {
		return nil, fmt.Errorf("%w: rules inside allOf at %q are not supported", errCompile, displayPath(path))
	}

	defaults := ss.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(defaults); err != nil {
		return nil, fmt.Errorf("pruning the %s schema defaults: %w", version, err)
	}

	openAPI, _, err := apiservervalidation.NewSchemaValidator(internal)
	if err != nil {
		return nil, fmt.Errorf("building the %s OpenAPI schema validator: %w", version, err)
	}

	return &Validator{
		schema:   ss,
		defaults: defaults,
		openAPI:  openAPI,
		// The same call the API server's custom resource strategy makes, with its limit.
		cel:   schemacel.NewValidator(ss, true, celconfig.PerCallLimit),
		rules: sync.OnceValues(func() ([]Rule, error) { return compileRules(ss) }),
	}, nil
}

// Rules returns every rule the Validator evaluates, in schema order (parents first,
// properties sorted), with its static cost. The rules are compiled once more on the first
// call (New leaves the costs to the API server's CRD validation); the slice is a copy.
func (v *Validator) Rules() ([]Rule, error) {
	rules, err := v.rules()
	return slices.Clone(rules), err
}

// Validate evaluates the rules against obj, a FlinkCluster as unstructured JSON (apiVersion,
// kind, metadata, spec). old is the stored object on update and nil on create; rules that
// read oldSelf are skipped on create unless they are optionalOldSelf rules, as in the API
// server. On update, errors of rules that do not read oldSelf are dropped where the value
// they judge did not change (the API server's validation ratcheting).
//
// Validate does not apply defaults: call Default on both objects first, as the API server
// has defaulted them before it validates. Evaluation is bounded by the API server's runtime
// cost budget; running out of it is reported as an error, never as an allowed object.
func (v *Validator) Validate(ctx context.Context, obj, old map[string]any) field.ErrorList {
	if obj == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "an object to validate is required")}
	}
	if old == nil {
		errs, _ := v.cel.Validate(ctx, nil, v.schema, obj, nil, celconfig.RuntimeCELCostBudget)
		return errs
	}
	correlated := common.NewCorrelatedObject(obj, old, &model.Structural{Structural: v.schema})
	errs, _ := v.cel.Validate(ctx, nil, v.schema, obj, old, celconfig.RuntimeCELCostBudget, schemacel.WithRatcheting(correlated))
	return errs
}

// ValidateSchema checks obj against the CRD's OpenAPI schema (types, enums, minimum and
// maximum, required fields), the validation the API server runs beside the CEL rules. On
// update (old not nil) an error on a value that did not change is dropped, as the API
// server's validation ratcheting does. Call Default first, as for Validate.
func (v *Validator) ValidateSchema(obj, old map[string]any) field.ErrorList {
	if obj == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "an object to validate is required")}
	}
	if old == nil {
		return apiservervalidation.ValidateCustomResource(nil, obj, v.openAPI)
	}
	correlated := common.NewCorrelatedObject(obj, old, &model.Structural{Structural: v.schema})
	return apiservervalidation.ValidateCustomResourceUpdate(nil, obj, old, v.openAPI, apiservervalidation.WithRatcheting(correlated))
}

// ValidateTyped converts obj (and old, nil on create) to unstructured JSON and validates
// them like Validate. It does not apply defaults either.
func (v *Validator) ValidateTyped(ctx context.Context, obj, old *v1beta1.FlinkCluster) field.ErrorList {
	if obj == nil {
		return field.ErrorList{field.Required(field.NewPath(""), "an object to validate is required")}
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, fmt.Errorf("converting the object: %w", err))}
	}
	var oldU map[string]any
	if old != nil {
		if oldU, err = runtime.DefaultUnstructuredConverter.ToUnstructured(old); err != nil {
			return field.ErrorList{field.InternalError(nil, fmt.Errorf("converting the old object: %w", err))}
		}
	}
	return v.Validate(ctx, u, oldU)
}

// Default prepares obj the way the API server prepares a request body before it
// validates it: unknown fields are pruned, nulls the schema does not allow are dropped, and
// the schema's defaults are applied. obj is modified in place; nil is left alone.
func (v *Validator) Default(obj map[string]any) {
	if obj == nil {
		return
	}
	structuralpruning.Prune(obj, v.schema, true)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, v.schema)
	structuraldefaulting.Default(obj, v.defaults)
}

// errCompile marks a rule the API server would refuse when the CRD is created.
var errCompile = errors.New("x-kubernetes-validations rule refused")
