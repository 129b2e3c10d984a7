package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/flink-admission/flink-admission/internal/devenv"
	"github.com/flink-admission/flink-admission/webhook"
)

// TestTwoReplicasStartTogether starts two `flink-admission serve` processes in self-signed
// mode at the same moment, as a Deployment of two does: they must agree on one CA (the
// Secret is written once), both serve a certificate it signed, and the CA bundle is
// written into each webhook configuration once — the second replica finds it in place.
func TestTwoReplicasStartTogether(t *testing.T) {
	bin := binary(t)
	ns := newNamespace(t, nil)
	cs := clientset(t)
	ctx := context.Background()

	// Webhook configurations of their own, which no request matches: these replicas are
	// called straight, since their certificates name the Service, not 127.0.0.1.
	mutating, validating, err := devenv.WebhookConfigurations("https://127.0.0.1:1")
	require.NoError(t, err)
	mutating.Name, validating.Name = "e2e-two-replicas", "e2e-two-replicas"
	nobody := &metav1.LabelSelector{MatchLabels: map[string]string{"e2e.flink-admission.io/nobody": "true"}}
	for i := range mutating.Webhooks {
		mutating.Webhooks[i].NamespaceSelector = nobody
	}
	for i := range validating.Webhooks {
		validating.Webhooks[i].NamespaceSelector = nobody
	}
	mAPI, vAPI := cs.AdmissionregistrationV1().MutatingWebhookConfigurations(), cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	m, err := mAPI.Create(ctx, mutating, metav1.CreateOptions{})
	require.NoError(t, err)
	v, err := vAPI.Create(ctx, validating, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = mAPI.Delete(context.Background(), mutating.Name, metav1.DeleteOptions{})
		_ = vAPI.Delete(context.Background(), validating.Name, metav1.DeleteOptions{})
	})

	// Every write from here on.
	secretEvents, err := cs.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer secretEvents.Stop()
	one := func(name string) metav1.ListOptions {
		return metav1.ListOptions{FieldSelector: "metadata.name=" + name}
	}
	mOpts, vOpts := one(m.Name), one(v.Name)
	mOpts.ResourceVersion, vOpts.ResourceVersion = m.ResourceVersion, v.ResourceVersion
	mEvents, err := mAPI.Watch(ctx, mOpts)
	require.NoError(t, err)
	defer mEvents.Stop()
	vEvents, err := vAPI.Watch(ctx, vOpts)
	require.NoError(t, err)
	defer vEvents.Stop()

	// Both at once: each process takes about a second to reach the API server, far longer
	// than starting the second one after the first.
	type replica struct{ addr, health string }
	replicas := make([]replica, 2)
	for i := range replicas {
		port := freePort(t)
		replicas[i] = replica{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), health: "127.0.0.1:" + strconv.Itoa(freePort(t))}
		startServe(t, bin,
			"--cert-mode=self-signed", "--namespace="+ns, "--ca-secret-name=two-replicas-ca",
			"--mutating-webhook-configuration="+m.Name, "--validating-webhook-configuration="+v.Name,
			"--webhook-port="+strconv.Itoa(port),
			"--metrics-bind-address=0", "--health-probe-bind-address="+replicas[i].health,
			"--enable-controller=false",
			"--kubeconfig="+dev.Env.Kubeconfig,
		)
	}
	for i, r := range replicas {
		eventually(t, 60*time.Second, fmt.Sprintf("replica %d is ready", i), func() error { return httpOK("http://" + r.health + "/readyz") })
	}

	// Both are ready, so both have been through a whole pass: read or created the CA,
	// injected the bundle, signed a certificate. Every write up to now is in the watches.
	secret, err := cs.CoreV1().Secrets(ns).Get(ctx, "two-replicas-ca", metav1.GetOptions{})
	require.NoError(t, err)
	bundle := secret.Data["ca.crt"]
	require.NotEmpty(t, bundle)
	assert.Equal(t, []watch.EventType{watch.Added}, eventsUpTo(t, secretEvents, secret.ResourceVersion, nil),
		"the CA Secret was written once: both replicas use one CA")

	mNow, err := mAPI.Get(ctx, m.Name, metav1.GetOptions{})
	require.NoError(t, err)
	vNow, err := vAPI.Get(ctx, v.Name, metav1.GetOptions{})
	require.NoError(t, err)
	bundleOf := func(obj any) []byte {
		switch c := obj.(type) {
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			return c.Webhooks[0].ClientConfig.CABundle
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			return c.Webhooks[0].ClientConfig.CABundle
		}
		return nil
	}
	for _, c := range []struct {
		kind   string
		events watch.Interface
		now    metav1.Object
	}{{"MutatingWebhookConfiguration", mEvents, mNow}, {"ValidatingWebhookConfiguration", vEvents, vNow}} {
		var bundles [][]byte
		eventsUpTo(t, c.events, c.now.GetResourceVersion(), func(obj any) { bundles = append(bundles, bundleOf(obj)) })
		assert.Equal(t, [][]byte{bundle}, bundles, "%s: the CA bundle was written once, and is the Secret's", c.kind)
	}

	// Both serve a certificate the injected bundle verifies, for the Service's name.
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(bundle))
	fc := readSample(t, "deployment-mode.yaml")
	fc.Namespace = "default"
	review := admissionReview(t, fc)
	for i, r := range replicas {
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: pool, ServerName: "flink-admission-webhook." + ns + ".svc",
		}}}
		assert.NoError(t, postReview(client, "https://"+r.addr+webhook.ValidatePath, review), "replica %d answers", i)
	}
	vAfter, err := vAPI.Get(ctx, v.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, bytes.Equal(bundle, bundleOf(vAfter)), "the bundle stays")
}

// eventsUpTo reads w until the event carrying resourceVersion, and returns the event types;
// each event's object is passed to each (when not nil). It fails the test when that
// version does not arrive within 30 s.
func eventsUpTo(t *testing.T, w watch.Interface, resourceVersion string, each func(any)) []watch.EventType {
	t.Helper()
	var types []watch.EventType
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok, "the watch ended")
			types = append(types, ev.Type)
			if each != nil {
				each(ev.Object)
			}
			if obj, ok := ev.Object.(metav1.Object); ok && obj.GetResourceVersion() == resourceVersion {
				return types
			}
		case <-timeout:
			t.Fatalf("version %s not seen; events so far: %v", resourceVersion, types)
		}
	}
}
