package server

import (
	"fmt"
	"net/url"
	"path/filepath"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// WebhookConfigurations renders deploy/base (under repoRoot) with kustomize's Go API, as
// `kubectl apply -k` would, and returns its two webhook configurations with every
// clientConfig.service replaced by a URL on baseURL (https://127.0.0.1:<port>) and the
// Service's path. The rules, selectors, failure policy and timeouts stay those of the
// manifests, so the local setup admits exactly what an installed one does.
func WebhookConfigurations(repoRoot, baseURL string) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	base, err := url.Parse(baseURL)
	if err != nil || base.Scheme != "https" || base.Host == "" || (base.Path != "" && base.Path != "/") {
		return nil, nil, fmt.Errorf("webhook base URL %q must be https://host:port", baseURL)
	}
	dir := filepath.Join(repoRoot, "deploy", "base")
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, nil, fmt.Errorf("rendering %s: %w", dir, err)
	}
	var (
		mutating   *admissionregistrationv1.MutatingWebhookConfiguration
		validating *admissionregistrationv1.ValidatingWebhookConfiguration
	)
	for _, r := range m.Resources() {
		var target any
		switch r.GetKind() {
		case "MutatingWebhookConfiguration":
			if mutating != nil {
				return nil, nil, fmt.Errorf("%s renders more than one MutatingWebhookConfiguration", dir)
			}
			mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			target = mutating
		case "ValidatingWebhookConfiguration":
			if validating != nil {
				return nil, nil, fmt.Errorf("%s renders more than one ValidatingWebhookConfiguration", dir)
			}
			validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			target = validating
		default:
			continue
		}
		raw, err := r.AsYAML()
		if err != nil {
			return nil, nil, err
		}
		if err := yaml.UnmarshalStrict(raw, target); err != nil {
			return nil, nil, fmt.Errorf("decoding the %s %s from %s: %w", r.GetKind(), r.GetName(), dir, err)
		}
	}
	if mutating == nil || validating == nil {
		return nil, nil, fmt.Errorf("%s must render a MutatingWebhookConfiguration and a ValidatingWebhookConfiguration", dir)
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
