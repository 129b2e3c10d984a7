package certs

import (
	"fmt"

	admissionregistrationv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Client is what a SelfSignedSource reads and writes: the CA Secret and the webhook
// configurations. A kubernetes.Interface (a Clientset, or client-go's fake) satisfies it;
// NewClient's links the typed clients of these two API groups only, where a Clientset links
// those of every group into the serve binary.
type Client interface {
	CoreV1() corev1client.CoreV1Interface
	AdmissionregistrationV1() admissionregistrationv1client.AdmissionregistrationV1Interface
}

// groupClients is a Client of the two typed clients alone.
type groupClients struct {
	core      corev1client.CoreV1Interface
	admission admissionregistrationv1client.AdmissionregistrationV1Interface
}

// CoreV1 implements Client.
func (c groupClients) CoreV1() corev1client.CoreV1Interface { return c.core }

// AdmissionregistrationV1 implements Client.
func (c groupClients) AdmissionregistrationV1() admissionregistrationv1client.AdmissionregistrationV1Interface {
	return c.admission
}

// NewClient returns a Client for cfg that, as a Clientset would, shares one connection pool
// and one rate limiter between its two groups.
func NewClient(cfg *rest.Config) (Client, error) {
	c := rest.CopyConfig(cfg)
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			return nil, fmt.Errorf("a QPS of %v needs a burst above 0", c.QPS)
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	httpClient, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, err
	}
	core, err := corev1client.NewForConfigAndClient(c, httpClient)
	if err != nil {
		return nil, err
	}
	admission, err := admissionregistrationv1client.NewForConfigAndClient(c, httpClient)
	if err != nil {
		return nil, err
	}
	return groupClients{core: core, admission: admission}, nil
}
