package certs

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// setCABundle sets bundle on every client config and reports whether any changed. It is the
// pure half of the injection, shared by both kinds of webhook configuration.
func setCABundle(configs []*admissionregistrationv1.WebhookClientConfig, bundle []byte) bool {
	changed := false
	for _, cc := range configs {
		if !bytes.Equal(cc.CABundle, bundle) {
			cc.CABundle = bytes.Clone(bundle)
			changed = true
		}
	}
	return changed
}

// injectCABundle puts bundle into every webhook of the mutating and validating webhook
// configurations named in the options (an empty name is skipped).
func (s *SelfSignedSource) injectCABundle(ctx context.Context, bundle []byte) error {
	var errs []error
	if name := s.opts.MutatingWebhookConfigurationName; name != "" {
		api := s.opts.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
		errs = append(errs, injectInto(s.log, "MutatingWebhookConfiguration", name, bundle,
			func() (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
				return api.Get(ctx, name, metav1.GetOptions{})
			},
			func(cfg *admissionregistrationv1.MutatingWebhookConfiguration) []*admissionregistrationv1.WebhookClientConfig {
				out := make([]*admissionregistrationv1.WebhookClientConfig, 0, len(cfg.Webhooks))
				for i := range cfg.Webhooks {
					out = append(out, &cfg.Webhooks[i].ClientConfig)
				}
				return out
			},
			func(cfg *admissionregistrationv1.MutatingWebhookConfiguration) error {
				_, err := api.Update(ctx, cfg, metav1.UpdateOptions{})
				return err
			}))
	}
	if name := s.opts.ValidatingWebhookConfigurationName; name != "" {
		api := s.opts.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
		errs = append(errs, injectInto(s.log, "ValidatingWebhookConfiguration", name, bundle,
			func() (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
				return api.Get(ctx, name, metav1.GetOptions{})
			},
			func(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) []*admissionregistrationv1.WebhookClientConfig {
				out := make([]*admissionregistrationv1.WebhookClientConfig, 0, len(cfg.Webhooks))
				for i := range cfg.Webhooks {
					out = append(out, &cfg.Webhooks[i].ClientConfig)
				}
				return out
			},
			func(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) error {
				_, err := api.Update(ctx, cfg, metav1.UpdateOptions{})
				return err
			}))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("injecting the CA bundle: %w", err)
	}
	return nil
}

// inject reads one webhook configuration, sets the bundle on all its webhooks and writes it
// back when anything changed. The update carries the resourceVersion it read, so it never
// overwrites a concurrent change to other fields; on a conflict it re-reads and tries again.
// A configuration that does not exist yet is not an error: it is injected as soon as it
// appears, because the watch reports its creation.
func injectInto[T any](log logr.Logger, kind, name string, bundle []byte,
	get func() (T, error), clientConfigs func(T) []*admissionregistrationv1.WebhookClientConfig, update func(T) error) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cfg, err := get()
		if apierrors.IsNotFound(err) {
			log.V(1).Info("webhook configuration not found; the CA bundle is injected when it appears", "kind", kind, "name", name)
			return nil
		}
		if err != nil {
			return err
		}
		configs := clientConfigs(cfg)
		if !setCABundle(configs, bundle) {
			return nil
		}
		if err := update(cfg); err != nil {
			return err
		}
		log.Info("injected the CA bundle", "kind", kind, "name", name, "webhooks", len(configs))
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s %s: %w", kind, name, err)
	}
	return nil
}
