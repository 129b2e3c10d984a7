package certs

import (
	"context"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
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
	byName := func(name string) func(*metav1.ListOptions) {
		return func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}
	}

	// One informer a kind on the typed clients' REST clients, not a SharedInformerFactory:
	// the factory's ForResource reaches the informers and listers of every API group, and the
	// generated informers want a whole Clientset, both of which the serve binary would link
	// for three objects.
	var watched []cache.SharedIndexInformer
	add := func(informer cache.SharedIndexInformer) {
		if _, err := informer.AddEventHandler(handler); err != nil {
			s.log.Error(err, "watching for changes failed; relying on the periodic resync")
			return
		}
		watched = append(watched, informer)
	}
	informer := func(c cache.Getter, resource, namespace, name string, obj runtime.Object) cache.SharedIndexInformer {
		return cache.NewSharedIndexInformer(cache.NewFilteredListWatchFromClient(c, resource, namespace, byName(name)), obj, 0, cache.Indexers{})
	}
	core, admission := s.opts.Client.CoreV1().RESTClient(), s.opts.Client.AdmissionregistrationV1().RESTClient()
	add(informer(core, "secrets", s.opts.Namespace, s.opts.SecretName, &corev1.Secret{}))
	if name := s.opts.MutatingWebhookConfigurationName; name != "" {
		add(informer(admission, "mutatingwebhookconfigurations", "", name, &admissionregistrationv1.MutatingWebhookConfiguration{}))
	}
	if name := s.opts.ValidatingWebhookConfigurationName; name != "" {
		add(informer(admission, "validatingwebhookconfigurations", "", name, &admissionregistrationv1.ValidatingWebhookConfiguration{}))
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, informer := range watched {
		wg.Go(func() { informer.RunWithContext(ctx) })
	}
	return func() {
		cancel()
		wg.Wait()
	}
}
