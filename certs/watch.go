package certs

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// watch starts informers on the CA Secret and on the two webhook configurations, each limited
// to the one object by a metadata.name field selector (so RBAC can be limited to those names
// with resourceNames), and pokes trigger on every event. The events only say "look again":
// reconcile reads the objects from the API server itself. The informers make reactions
// immediate (another replica rotated the CA, someone overwrote a caBundle); the periodic
// resync in Start is what guarantees them if a watch is denied or events are lost. The
// returned function stops the informers.
func (s *SelfSignedSource) watch(ctx context.Context, trigger chan<- struct{}) (stop func()) {
	poke := func() {
		select {
		case trigger <- struct{}{}:
		default: // a pass is already pending; it will see this change too
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	}
	byName := func(name string) informers.SharedInformerOption {
		return informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		})
	}

	var factories []informers.SharedInformerFactory
	add := func(f informers.SharedInformerFactory, informer cache.SharedIndexInformer) {
		if _, err := informer.AddEventHandler(handler); err != nil {
			s.log.Error(err, "watching for changes failed; relying on the periodic resync")
			return
		}
		factories = append(factories, f)
	}

	secrets := informers.NewSharedInformerFactoryWithOptions(s.opts.Client, 0,
		informers.WithNamespace(s.opts.Namespace), byName(s.opts.SecretName))
	add(secrets, secrets.Core().V1().Secrets().Informer())
	if name := s.opts.MutatingWebhookConfigurationName; name != "" {
		f := informers.NewSharedInformerFactoryWithOptions(s.opts.Client, 0, byName(name))
		add(f, f.Admissionregistration().V1().MutatingWebhookConfigurations().Informer())
	}
	if name := s.opts.ValidatingWebhookConfigurationName; name != "" {
		f := informers.NewSharedInformerFactoryWithOptions(s.opts.Client, 0, byName(name))
		add(f, f.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer())
	}
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	return func() {
		for _, f := range factories {
			f.Shutdown()
		}
	}
}
