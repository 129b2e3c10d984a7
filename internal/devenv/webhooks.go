package devenv

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/flink-admission/flink-admission/deploy"
)

// WebhookConfigurations returns the two webhook configurations of deploy/base (embedded, as
// kustomize renders them but for the common label, which the tests check) with every
// clientConfig.service replaced by a URL on baseURL (https://127.0.0.1:<port>) and the
// Service's path. The rules, selectors, failure policy and timeouts stay those of the
// manifests, so the local setup admits exactly what an installed one does.
func WebhookConfigurations(baseURL string) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	base, err := url.Parse(baseURL)
	if err != nil || base.Scheme != "https" || base.Host == "" || (base.Path != "" && base.Path != "/") {
		return nil, nil, fmt.Errorf("webhook base URL %q must be https://host:port", baseURL)
	}
	mutating, validating, err := decodeWebhooks(deploy.Webhooks)
	if err != nil {
		return nil, nil, fmt.Errorf("deploy/base/webhooks.yaml: %w", err)
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

// decodeWebhooks strictly decodes exactly one Mutating- and one ValidatingWebhookConfiguration
// from a multi-document YAML stream.
func decodeWebhooks(stream []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	scheme := runtime.NewScheme()
	if err := admissionregistrationv1.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	reader := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	var (
		mutating   *admissionregistrationv1.MutatingWebhookConfiguration
		validating *admissionregistrationv1.ValidatingWebhookConfiguration
	)
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, nil, err
		}
		switch o := obj.(type) {
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			if mutating != nil {
				return nil, nil, errors.New("more than one MutatingWebhookConfiguration")
			}
			mutating = o
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			if validating != nil {
				return nil, nil, errors.New("more than one ValidatingWebhookConfiguration")
			}
			validating = o
		default:
			return nil, nil, fmt.Errorf("unexpected %T", obj)
		}
	}
	if mutating == nil || validating == nil {
		return nil, nil, errors.New("want a MutatingWebhookConfiguration and a ValidatingWebhookConfiguration")
	}
	return mutating, validating, nil
}
