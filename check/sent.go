package check

import (
	"context"
	"fmt"
	"maps"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"
	admissioncel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/deploy"
)

// sending tells which webhook the API server calls for an update: the match conditions of
// deploy/base's webhook configurations, the ones every install applies, compiled and matched
// as kube-apiserver does (its CEL environment, its matcher). An update they do not send is
// judged by the CRD's rules alone on a cluster, so check judges it so too. check knows no
// controller scope, so there is no cluster selector: no label change is sent.
type sending struct {
	mutating, validating matchconditions.Matcher
}

func newSending() (*sending, error) {
	m, v, err := deploy.WebhookConfigurations()
	if err != nil {
		return nil, err
	}
	if len(m.Webhooks) == 0 || len(v.Webhooks) == 0 {
		return nil, fmt.Errorf("deploy/base/webhooks.yaml: want a mutating and a validating webhook")
	}
	compiler := admissioncel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	// The first validating webhook; the staged one has the same conditions (the deploy tests).
	mw, vw := m.Webhooks[0], v.Webhooks[0]
	return &sending{
		mutating: webhook.NewMutatingWebhookAccessor(mw.Name, m.Name, &admissionregistrationv1.MutatingWebhook{
			Name: mw.Name, FailurePolicy: mw.FailurePolicy, MatchConditions: mw.MatchConditions}).GetCompiledMatcher(compiler),
		validating: webhook.NewValidatingWebhookAccessor(vw.Name, v.Name, &admissionregistrationv1.ValidatingWebhook{
			Name: vw.Name, FailurePolicy: vw.FailurePolicy, MatchConditions: vw.MatchConditions}).GetCompiledMatcher(compiler),
	}, nil
}

// sends reports whether m sends the update of old to obj (both in their stored, defaulted
// form). A condition that fails to evaluate counts as sent: the API server refuses the request
// then (failurePolicy Fail), so check must not wave it through.
func (s *sending) sends(ctx context.Context, m matchconditions.Matcher, old, obj map[string]any) bool {
	gvk := v1beta1.GroupVersion.WithKind(v1beta1.Kind)
	// The request's kind, also for an object given without it (a Go client's typed object):
	// the API server's attributes would otherwise be converted, with no converter here.
	o, n := &unstructured.Unstructured{Object: maps.Clone(old)}, &unstructured.Unstructured{Object: maps.Clone(obj)}
	o.SetGroupVersionKind(gvk)
	n.SetGroupVersionKind(gvk)
	attr := admission.NewAttributesRecord(n, o, gvk, n.GetNamespace(), n.GetName(),
		v1beta1.GroupVersion.WithResource(v1beta1.Resource), "", admission.Update, nil, false, nil)
	va, err := admission.NewVersionedAttributes(attr, gvk, nil)
	if err != nil {
		return true
	}
	res := m.Match(ctx, va, nil, nil)
	return res.Error != nil || res.Matches
}
