// Package check runs the admission policy offline, the way the server would, for CI
// pipelines and reviews: `flink-admission check -f manifests/`. Each FlinkCluster goes
// through the same steps as on a cluster: the CRD's structural defaults (as the API server
// applies them), the mutating webhook (pipeline.Admit with pipeline.Default), the CRD's
// schema and CEL rules (package celrules), then the validating webhook (pipeline.Admit with
// pipeline.Validate), in the order the API server runs them — as a create, or as an update
// when the previous version of the manifest is given. An update that the webhook
// configurations' match conditions do not send to a webhook (a label or annotation change)
// skips that webhook, as on a cluster.
package check

import (
	"context"
	"encoding/json"
	"fmt"

	"gomodules.xyz/jsonpatch/v2"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/celrules"
	"github.com/flink-admission/flink-admission/pipeline"
)

// FieldError is one reason for a denial, with where its field is written in the manifest
// (the zero Position when unknown: a field of the old version, a document that is not YAML).
type FieldError struct {
	Field string `json:"field"`
	Type  string `json:"type"`
	// Rule is the name of the policy rule that denies (docs/policy.md has a section of that
	// name), RuleCRDSchema for a constraint of the CRD's schema that no rule mirrors, or
	// policy.RuleUnknown for an object check could not judge.
	Rule    string `json:"rule"`
	Message string `json:"message"`
	// Ratcheted is set on a refusal of a stored cluster (flink-admission audit): true when an
	// update of the spec that leaves the violation as it is is admitted with it as a warning
	// (ratcheting keeps the cluster editable), false when it refuses every such update until
	// the violation is fixed. Nil for manifests, which check judges as they are written.
	Ratcheted *bool `json:"ratcheted,omitempty"`
	Position
}

// Result is the verdict on one FlinkCluster.
type Result struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Source is the manifest file the object comes from ("-" for standard input), and empty
	// for a cluster stored in the API server (flink-admission audit), whose location is its
	// namespace and name.
	Source    string                `json:"source"`
	Index     int                   `json:"index"`
	Position  Position              `json:"position,omitzero"`
	Operation string                `json:"operation"`
	Allowed   bool                  `json:"allowed"`
	Errors    []FieldError          `json:"errors"`
	Warnings  []string              `json:"warnings"`
	Patch     []jsonpatch.Operation `json:"patch"`
	Object    map[string]any        `json:"object"`

	// warningPositions[i] is where the field Warnings[i] is about is written.
	warningPositions []Position
}

// Checker evaluates manifests; build it once with New (it compiles the CEL rules).
type Checker struct {
	cel      *celrules.Validator
	sending  *sending
	pipeline pipeline.Pipeline
	// Namespace is used for manifests without metadata.namespace, as kubectl would use the
	// namespace of its context.
	Namespace string
}

// New compiles the CRD's CEL rules and returns a Checker.
func New(namespace string) (*Checker, error) {
	cel, err := celrules.New()
	if err != nil {
		return nil, fmt.Errorf("compiling the CRD's CEL rules: %w", err)
	}
	sending, err := newSending()
	if err != nil {
		return nil, fmt.Errorf("compiling the webhooks' match conditions: %w", err)
	}
	if namespace == "" {
		namespace = "default"
	}
	return &Checker{cel: cel, sending: sending, Namespace: namespace}, nil
}

// Run checks every document: as an update where olds holds a document with the same
// namespace and name, otherwise as a create.
func (c *Checker) Run(ctx context.Context, docs, olds []Document) []Result {
	oldByKey := make(map[string]Document, len(olds))
	for _, d := range olds {
		oldByKey[c.key(d.Object)] = d
	}
	results := make([]Result, 0, len(docs))
	for _, d := range docs {
		var old *Document
		if o, ok := oldByKey[c.key(d.Object)]; ok {
			old = &o
		}
		results = append(results, c.check(ctx, d, old))
	}
	return results
}

func (c *Checker) key(obj map[string]any) string {
	name, ns := nameAndNamespace(obj)
	if ns == "" {
		ns = c.Namespace
	}
	return ns + "/" + name
}

func nameAndNamespace(obj map[string]any) (string, string) {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	return name, ns
}

// admitted is an object as the validating webhook sees it: stored form (map) and typed form.
type admitted struct {
	obj   map[string]any
	typed *v1beta1.FlinkCluster
	patch []jsonpatch.Operation
}

// mutate applies what happens before validation on a cluster: structural defaults, then the
// mutating webhook. The patch is what the mutating webhook would return.
func (c *Checker) mutate(doc map[string]any) (*admitted, *field.Error) {
	obj := runtime.DeepCopyJSON(doc)
	if meta, ok := obj["metadata"].(map[string]any); ok {
		if ns, _ := meta["namespace"].(string); ns == "" {
			meta["namespace"] = c.Namespace
		}
	}
	c.cel.Default(obj)
	before, err := json.Marshal(obj)
	if err != nil {
		return nil, field.InternalError(nil, err)
	}
	sent := &v1beta1.FlinkCluster{}
	if err := json.Unmarshal(before, sent); err != nil {
		return nil, field.Invalid(field.NewPath("spec"), nil, fmt.Sprintf("the object does not decode as a FlinkCluster: %v", err))
	}
	// The mutating webhook's own step, and so its patch.
	v := c.pipeline.Admit(nil, sent, pipeline.Default)
	typed := v.Object
	patch, err := pipeline.DefaultingPatch(before, sent, typed)
	if err != nil {
		return nil, field.InternalError(nil, err)
	}
	after, err := json.Marshal(typed)
	if err != nil {
		return nil, field.InternalError(nil, err)
	}
	// utiljson keeps integers as int64, as the API server hands them to CEL.
	mutated := map[string]any{}
	if err := utiljson.Unmarshal(after, &mutated); err != nil {
		return nil, field.InternalError(nil, err)
	}
	return &admitted{obj: mutated, typed: typed, patch: patch}, nil
}

func (c *Checker) check(ctx context.Context, doc Document, oldDoc *Document) Result {
	name, ns := nameAndNamespace(doc.Object)
	if ns == "" {
		ns = c.Namespace
	}
	r := Result{Name: name, Namespace: ns, Source: doc.Source, Index: doc.Index, Position: doc.Position, Operation: "CREATE",
		Errors: []FieldError{}, Warnings: []string{}, Patch: []jsonpatch.Operation{}}
	cur, ferr := c.mutate(doc.Object)
	if ferr != nil {
		r.Errors = append(r.Errors, toFieldError(ferr, ruleOfUnjudged(ferr), doc))
		return r
	}
	r.Object = cur.obj
	if cur.patch != nil {
		r.Patch = cur.patch
	}

	var v verdict
	if oldDoc == nil {
		v = c.admit(ctx, cur, nil, true)
	} else {
		r.Operation = "UPDATE"
		old, ferr := c.mutate(oldDoc.Object)
		if ferr != nil {
			ferr.Detail = fmt.Sprintf("old version (%s document %d): %s", oldDoc.Source, oldDoc.Index, ferr.Detail)
			r.Errors = append(r.Errors, toFieldError(ferr, ruleOfUnjudged(ferr), Document{}))
			return r
		}
		// Both versions as stored, defaults included: applying the new manifest over the
		// stored cluster keeps the defaults the old one got, so a spec that differs only by
		// them is no change, for the API server's match conditions as for the policy.
		if !c.sending.sends(ctx, c.sending.mutating, old.obj, cur.obj) {
			r.Patch = []jsonpatch.Operation{}
		}
		v = c.admit(ctx, cur, old, c.sending.sends(ctx, c.sending.validating, old.obj, cur.obj))
	}
	for i, e := range v.errs {
		r.Errors = append(r.Errors, toFieldError(e, v.rules[i], doc))
	}
	if v.warnings != nil {
		r.Warnings = v.warnings
	}
	r.warningPositions = make([]Position, len(r.Warnings))
	for i, w := range r.Warnings {
		r.warningPositions[i] = doc.Position
		if path, ok := warningField(w); ok {
			r.warningPositions[i] = doc.PositionOf(path)
		}
	}
	r.Allowed = len(r.Errors) == 0
	return r
}

// verdict is what admit decides: the errors with the rule of each (rules[i] names errs[i]'s)
// and the warnings.
type verdict struct {
	errs     field.ErrorList
	rules    []string
	warnings []string
}

// admit validates as a cluster does, in the API server's order: the CRD's schema and rules run before
// any validating webhook, and when they deny, the webhook is not called, so the denial
// carries only the CRD's errors (and no webhook warnings). Otherwise the validating
// webhook's verdict stands, when it is sent the request (sent).
func (c *Checker) admit(ctx context.Context, cur, old *admitted, sent bool) verdict {
	var oldObj map[string]any
	var oldTyped *v1beta1.FlinkCluster
	if old != nil {
		oldObj, oldTyped = old.obj, old.typed
	}
	// The validating webhook's own step.
	v := c.pipeline.Admit(oldTyped, cur.typed, pipeline.Validate)
	crdErrs := append(c.cel.ValidateSchema(cur.obj, oldObj), c.cel.Validate(ctx, cur.obj, oldObj)...)
	if len(crdErrs) > 0 {
		// The policy mirrors the CRD's rules: its verdict on the same object names them.
		return verdict{errs: crdErrs, rules: crdRules(crdErrs, v.Errors)}
	}
	if !sent {
		return verdict{}
	}
	return verdict{errs: v.Errors, rules: v.Rules, warnings: v.Warnings}
}

// toFieldError reports e the way the API server reports a cause of a denial, so that
// check's messages read exactly as kubectl prints them, at the place in doc where the field
// is written.
func toFieldError(e *field.Error, rule string, doc Document) FieldError {
	return FieldError{Field: e.Field, Type: string(e.Type), Rule: rule, Message: e.ErrorBody(), Position: doc.PositionOf(e.Field)}
}
