package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// ClusterSelectorDelimiter encloses the controller's cluster selector in the validating
// webhooks' match condition: the selector is the second part of the expression split at it,
// which is how the scoped overlay's kustomize replacement (options.delimiter, index 1), the
// chart and SetClusterSelector all write it.
const ClusterSelectorDelimiter = `"`

// WebhookConfigurations decodes Webhooks, strictly: the MutatingWebhookConfiguration and the
// ValidatingWebhookConfiguration of deploy/base, with no cluster selector.
func WebhookConfigurations() (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	m, v, err := DecodeWebhooks(Webhooks)
	if err != nil {
		return nil, nil, fmt.Errorf("deploy/base/webhooks.yaml: %w", err)
	}
	return m, v, nil
}

// SetClusterSelector writes the controller's --cluster-selector into every match condition of
// the validating webhooks, so that they are sent a change of the labels it reads; "" sends no
// label change. A selector that is not a label selector in kubectl's syntax must have been
// refused before: one that could end the CEL string it is written into is refused here.
func SetClusterSelector(v *admissionregistrationv1.ValidatingWebhookConfiguration, selector string) error {
	if strings.ContainsAny(selector, ClusterSelectorDelimiter+"\\\n") {
		return fmt.Errorf("cluster selector %q: a label selector has no quote, backslash or line break", selector)
	}
	for i := range v.Webhooks {
		for j := range v.Webhooks[i].MatchConditions {
			mc := &v.Webhooks[i].MatchConditions[j]
			parts := strings.Split(mc.Expression, ClusterSelectorDelimiter)
			if len(parts) != 3 {
				return fmt.Errorf("webhook %s, match condition %s: want the cluster selector between one pair of %s, found %d",
					v.Webhooks[i].Name, mc.Name, ClusterSelectorDelimiter, len(parts)-1)
			}
			parts[1] = selector
			mc.Expression = strings.Join(parts, ClusterSelectorDelimiter)
		}
	}
	return nil
}

// ClusterSelector returns the cluster selector written in a match condition's expression
// (see SetClusterSelector), and false when it has no place for one.
func ClusterSelector(expression string) (string, bool) {
	parts := strings.Split(expression, ClusterSelectorDelimiter)
	if len(parts) != 3 {
		return "", false
	}
	return parts[1], true
}

// DecodeWebhooks strictly decodes exactly one Mutating- and one ValidatingWebhookConfiguration
// from a multi-document YAML stream.
func DecodeWebhooks(stream []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
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
