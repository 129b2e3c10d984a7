package devenv

import (
	"fmt"
	"net/url"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/flink-admission/flink-admission/deploy"
)

// WebhookConfigurations returns the two webhook configurations of deploy/base (embedded, as
// kustomize renders them but for the common label, which the tests check) with every
// clientConfig.service replaced by a URL on baseURL (https://127.0.0.1:<port>) and the
// Service's path. The rules, selectors, failure policy and timeouts stay those of the
// manifests, so the local setup admits exactly what an installed one does; with no cluster
// selector (deploy.SetClusterSelector writes dev's).
func WebhookConfigurations(baseURL string) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	base, err := url.Parse(baseURL)
	if err != nil || base.Scheme != "https" || base.Host == "" || (base.Path != "" && base.Path != "/") {
		return nil, nil, fmt.Errorf("webhook base URL %q must be https://host:port", baseURL)
	}
	mutating, validating, err := deploy.WebhookConfigurations()
	if err != nil {
		return nil, nil, err
	}
	for i := range mutating.Webhooks {
		if err := pointAt(&mutating.Webhooks[i].ClientConfig, base, mutating.Webhooks[i].Name); err != nil {
			return nil, nil, err
		}
	}
	for i := range validating.Webhooks {
		if err := pointAt(&validating.Webhooks[i].ClientConfig, base, validating.Webhooks[i].Name); err != nil {
			return nil, nil, err
		}
	}
	return mutating, validating, nil
}

// webhookConfigurationsWith is WebhookConfigurations with the controller's cluster selector
// in the validating webhooks' match conditions: what dev installs.
func webhookConfigurationsWith(baseURL, selector string) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	m, v, err := WebhookConfigurations(baseURL)
	if err != nil {
		return nil, nil, err
	}
	if err := deploy.SetClusterSelector(v, selector); err != nil {
		return nil, nil, err
	}
	return m, v, nil
}

// clusterSelector is the controller's --cluster-selector as dev runs it, for the validating
// webhooks' match conditions: "" without the controller, whose scope then judges nothing.
func clusterSelector(o DevOptions) string {
	if !o.EnableController || o.Controller.Scope.Selector == nil {
		return ""
	}
	return o.Controller.Scope.Selector.String()
}

// pointAt replaces a Service reference by the URL of the same path on base. The CA bundle
// is left out: the self-signed source injects it.
func pointAt(cc *admissionregistrationv1.WebhookClientConfig, base *url.URL, webhook string) error {
	if cc.Service == nil || cc.Service.Path == nil || *cc.Service.Path == "" {
		return fmt.Errorf("webhook %s: clientConfig.service.path is not set in the manifests", webhook)
	}
	u := *base
	u.Path = *cc.Service.Path
	s := u.String()
	*cc = admissionregistrationv1.WebhookClientConfig{URL: &s}
	return nil
}
