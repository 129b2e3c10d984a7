package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cert-manager/cert-manager/pkg/util/pki"
	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

const (
	testService = "flink-admission-webhook"
	testSecret  = "flink-admission-ca"
	// eventually bounds waits for an event (a watch, a file reload): generous for a loaded
	// 2-core machine, while the watches and the file poll normally react within milliseconds.
	eventually = 20 * time.Second
	poll       = 20 * time.Millisecond
)

// testNamespace creates a namespace for one test, so that tests never share a Secret.
func testNamespace(t *testing.T, client Client) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "certs-"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return ns.Name
}

// namespaceWithWebhooks creates a namespace for one test and the webhook configurations its
// source injects (named <namespace>-webhooks), and returns both names.
func namespaceWithWebhooks(t *testing.T, client Client) (namespace, webhooks string) {
	t.Helper()
	namespace = testNamespace(t, client)
	webhooks = namespace + "-webhooks"
	createWebhookConfigurations(t, client, namespace, webhooks)
	return namespace, webhooks
}

// createWebhookConfigurations creates a mutating and a validating webhook configuration named
// name, with two webhooks each, pointing at a Service that does not exist, without a caBundle.
// The rules match a resource nothing in these tests creates, and failures are ignored, so the
// configurations never get in the way of the API server.
func createWebhookConfigurations(t *testing.T, client Client, namespace, name string) {
	t.Helper()
	ctx := context.Background()
	clientConfig := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
			Namespace: namespace, Name: testService, Path: ptr.To(path),
		}}
	}
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"flinkoperator.k8s.io"}, APIVersions: []string{"v1beta1"}, Resources: []string{"flinkclusters"}},
	}}
	var mutating []admissionregistrationv1.MutatingWebhook
	var validating []admissionregistrationv1.ValidatingWebhook
	for _, hook := range []string{"first", "second"} {
		mutating = append(mutating, admissionregistrationv1.MutatingWebhook{
			Name: hook + ".mutate.flinkoperator.k8s.io", ClientConfig: clientConfig("/mutate-" + hook), Rules: rules,
			SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
		})
		validating = append(validating, admissionregistrationv1.ValidatingWebhook{
			Name: hook + ".validate.flinkoperator.k8s.io", ClientConfig: clientConfig("/validate-" + hook), Rules: rules,
			SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
		})
	}
	_, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: mutating,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: validating,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = client.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
		_ = client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// injectedBundles returns the caBundle of every webhook of both configurations named name.
func injectedBundles(t *testing.T, client Client, name string) [][]byte {
	t.Helper()
	ctx := context.Background()
	m, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	v, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	var out [][]byte
	for _, w := range m.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	for _, w := range v.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	require.Len(t, out, 4)
	return out
}

// allInjected reports whether every webhook of both configurations carries bundle.
func allInjected(t *testing.T, client Client, name string, bundle []byte) bool {
	if len(bundle) == 0 {
		return false
	}
	for _, got := range injectedBundles(t, client, name) {
		if !bytes.Equal(got, bundle) {
			return false
		}
	}
	return true
}

// startSelfSigned builds a source with the test's defaults, changed by mutate, and runs it
// until the test ends.
func startSelfSigned(t *testing.T, client Client, namespace, webhooks string, mutate func(*SelfSignedOptions)) *SelfSignedSource {
	t.Helper()
	opts := SelfSignedOptions{
		Client:                             client,
		Namespace:                          namespace,
		SecretName:                         testSecret,
		ServiceName:                        testService,
		IPAddresses:                        []net.IP{net.IPv4(127, 0, 0, 1)},
		MutatingWebhookConfigurationName:   webhooks,
		ValidatingWebhookConfigurationName: webhooks,
		// Long: these tests must pass through the watches alone; the periodic resync is
		// exercised explicitly with a fake clock.
		ResyncInterval: time.Hour,
		Log:            testr.New(t),
	}
	if mutate != nil {
		mutate(&opts)
	}
	src, err := NewSelfSignedSource(opts)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	return src
}

// servingLeaf returns the certificate the source currently serves.
func servingLeaf(t *testing.T, src *SelfSignedSource) *x509.Certificate {
	t.Helper()
	cert, err := src.GetCertificate(nil)
	require.NoError(t, err)
	return cert.Leaf
}

// pokeSecret changes an annotation of the CA Secret, and nothing the source reads: a watch
// event that makes the source reconcile once more. Changing an annotation changes the
// Secret's resourceVersion, which the source's own optimistic update of the CA tolerates.
func pokeSecret(client Client, namespace string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"test.flink-admission/poke":"%d"}}}`, time.Now().UnixNano())
	_, err := client.CoreV1().Secrets(namespace).Patch(context.Background(), testSecret, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// readCA reads the CA the Secret holds.
func readCA(t *testing.T, client Client, namespace string) (*corev1.Secret, *authority) {
	t.Helper()
	secret, err := client.CoreV1().Secrets(namespace).Get(context.Background(), testSecret, metav1.GetOptions{})
	require.NoError(t, err)
	ca, err := parseAuthority(secret.Data, time.Now())
	require.NoError(t, err)
	return secret, ca
}

func TestSelfSignedCreatesTheCAAndInjectsIt(t *testing.T) {
	client := apiServer(t)
	ns, webhooks := namespaceWithWebhooks(t, client)
	_, err := client.CoreV1().Secrets(ns).Get(context.Background(), testSecret, metav1.GetOptions{})
	require.True(t, err != nil && strings.Contains(err.Error(), "not found"), "no CA secret before the source starts")

	src := startSelfSigned(t, client, ns, webhooks, nil)
	require.Eventually(t, func() bool { return src.Healthy() == nil }, eventually, poll)

	secret, ca := readCA(t, client, ns)
	assert.Equal(t, corev1.SecretTypeTLS, secret.Type)
	assert.Equal(t, ca.bundle, src.CABundle(), "the source uses the CA in the Secret")
	leaf := servingLeaf(t, src)
	assert.Equal(t, ServiceDNSNames(testService, ns, nil), leaf.DNSNames)
	for _, name := range append(leaf.DNSNames, "127.0.0.1") {
		_, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: certPool(t, secret.Data[SecretCAKey])})
		assert.NoError(t, err, "the serving certificate is signed by the CA in the Secret, for %s", name)
	}

	require.Eventually(t, func() bool { return allInjected(t, client, webhooks, src.CABundle()) }, eventually, poll,
		"the CA bundle is injected into every webhook of both configurations")

	// End to end: a client that trusts only what the webhook configuration says, and names the
	// server the way the API server does (<svc>.<ns>.svc), reaches our server.
	url := serveTLS(t, src)
	bundle := injectedBundles(t, client, webhooks)[0]
	serial, err := servedSerial(httpsClient(t, bundle, testService+"."+ns+".svc"), url)
	require.NoError(t, err)
	assert.Equal(t, leaf.SerialNumber, serial)

	// Someone overwrites the caBundle of one webhook of each configuration (an old manifest
	// re-applied, say): the watch notices and the bundle is put back.
	stranger := mustCA(t, time.Now(), time.Hour)
	ctx := context.Background()
	m, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, webhooks, metav1.GetOptions{})
	require.NoError(t, err)
	m.Webhooks[1].ClientConfig.CABundle = stranger.certPEM
	_, err = client.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, m, metav1.UpdateOptions{})
	require.NoError(t, err)
	v, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, webhooks, metav1.GetOptions{})
	require.NoError(t, err)
	v.Webhooks[0].ClientConfig.CABundle = nil
	_, err = client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, v, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return allInjected(t, client, webhooks, src.CABundle()) }, eventually, poll,
		"the overwritten caBundles are put back")
	_, after := readCA(t, client, ns)
	assert.Equal(t, ca.cert.Raw, after.cert.Raw, "putting the bundle back did not touch the CA")
}

func TestSelfSignedReplicasConvergeOnOneCA(t *testing.T) {
	client := apiServer(t)
	ns, webhooks := namespaceWithWebhooks(t, client)

	// Record every write to the CA Secret while the replicas start.
	w, err := client.CoreV1().Secrets(ns).Watch(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()

	const replicas = 3
	sources := make([]*SelfSignedSource, replicas)
	var wg sync.WaitGroup
	for i := range sources {
		wg.Go(func() { sources[i] = startSelfSigned(t, client, ns, webhooks, nil) })
	}
	wg.Wait()
	for _, src := range sources {
		require.Eventually(t, func() bool { return src.Healthy() == nil }, eventually, poll)
	}

	_, ca := readCA(t, client, ns)
	for i, src := range sources {
		assert.Equal(t, ca.bundle, src.CABundle(), "replica %d uses the CA in the Secret", i)
		assert.NoError(t, servingLeaf(t, src).CheckSignatureFrom(ca.cert), "replica %d serves a certificate signed by that CA", i)
	}
	require.Eventually(t, func() bool { return allInjected(t, client, webhooks, ca.bundle) }, eventually, poll)

	// The Secret was created once and never overwritten: every replica has read or written it
	// (each is healthy), so the watch must have delivered every write up to the Secret's
	// current version, and that is one creation.
	secret, _ := readCA(t, client, ns)
	var events []watch.EventType
	deadline := time.After(eventually)
collect:
	for {
		select {
		case ev := <-w.ResultChan():
			events = append(events, ev.Type)
			if obj, ok := ev.Object.(metav1.Object); ok && obj.GetResourceVersion() == secret.ResourceVersion {
				break collect
			}
		case <-deadline:
			t.Fatalf("the watch did not deliver the Secret's current version %s; got %v", secret.ResourceVersion, events)
		}
	}
	assert.Equal(t, []watch.EventType{watch.Added}, events, "the CA secret was written exactly once")
}

func TestSelfSignedResignsAtOnceWhenTheCAChanges(t *testing.T) {
	client := apiServer(t)
	ns, webhooks := namespaceWithWebhooks(t, client)
	src := startSelfSigned(t, client, ns, webhooks, nil)
	require.Eventually(t, func() bool { return src.Healthy() == nil }, eventually, poll)
	secret, oldCA := readCA(t, client, ns)
	oldLeaf := servingLeaf(t, src)

	// Another replica rotates the CA: new pair, bundle with the new CA first and the old one.
	newCA, err := newAuthority("rotated-ca", time.Now(), DefaultCADuration, oldCA)
	require.NoError(t, err)
	secret.Data = newCA.secretData()
	_, err = client.CoreV1().Secrets(ns).Update(context.Background(), secret, metav1.UpdateOptions{})
	require.NoError(t, err)

	// ResyncInterval is an hour: only the watch can make this happen in time.
	require.Eventually(t, func() bool {
		leaf := servingLeaf(t, src)
		return leaf.SerialNumber.Cmp(oldLeaf.SerialNumber) != 0 && leaf.CheckSignatureFrom(newCA.cert) == nil
	}, eventually, poll, "the serving certificate is re-signed by the new CA")
	require.Eventually(t, func() bool { return allInjected(t, client, webhooks, newCA.bundle) }, eventually, poll,
		"the new bundle (new and old CA) is injected")
	pool := certPool(t, injectedBundles(t, client, webhooks)[0])
	_, err = oldLeaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"})
	assert.NoError(t, err, "a replica still serving a certificate of the old CA stays trusted")
	_, err = servingLeaf(t, src).Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"})
	assert.NoError(t, err)

	_, inSecret := readCA(t, client, ns)
	assert.Equal(t, newCA.cert.Raw, inSecret.cert.Raw, "the source adopted the rotated CA rather than replacing it")
}

// TestSelfSignedRenewsOnTheClock drives the source with a fake clock: the serving certificate is
// renewed once two thirds of its life have passed (not before), and the CA is rotated in the
// Secret once two thirds of its own life have passed, with the serving certificate re-signed
// and the bundle (new and old CA) injected.
func TestSelfSignedRenewsOnTheClock(t *testing.T) {
	client := apiServer(t)
	ns, webhooks := namespaceWithWebhooks(t, client)
	clk := clocktesting.NewFakeClock(time.Now())
	src := startSelfSigned(t, client, ns, webhooks, func(o *SelfSignedOptions) {
		o.Clock = clk
		o.LeafDuration = time.Hour
		o.CADuration = 6 * time.Hour
		o.ResyncInterval = time.Minute
	})
	require.Eventually(t, func() bool { return src.Healthy() == nil }, eventually, poll)
	require.Eventually(t, func() bool { return allInjected(t, client, webhooks, src.CABundle()) }, eventually, poll)
	_, ca := readCA(t, client, ns)
	leaf := servingLeaf(t, src)

	// step moves the clock and waits for a pass that saw the new time. It does not guess when
	// the loop is idle: a pass may be running as the clock moves (one woken by the late watch
	// event of the source's own last write, say). That pass read the old time, and after it
	// the loop waits on a timer a whole resync after the new time. When the loop is found
	// waiting like that, a change to the Secret's annotations (a watch event, which moves
	// no clock) wakes it for another pass; at most one poke per pass seen.
	step := func(d time.Duration) {
		t.Helper()
		clk.Step(d)
		target := clk.Now().UnixNano()
		poked := int64(-1) // the pass count at the last poke
		require.Eventually(t, func() bool {
			if src.passTime.Load() >= target {
				return true
			}
			// The pass counter is read before HasWaiters: a pass that ends in between
			// leaves a higher count for the next try, never a missed poke.
			passes := int64(src.passes.Load())
			if clk.HasWaiters() && poked != passes {
				poked = passes
				t.Logf("the loop waits after %d passes without seeing the clock moved by %s: poking it", passes, d)
				// assert, not require: Eventually runs this off the test's goroutine.
				assert.NoError(t, pokeSecret(client, ns), "poking the source")
			}
			return false
		}, eventually, poll, "a pass saw the clock moved by %s", d)
	}

	// Less than a resync: the timer does not fire, so the pass is one a watch event wakes
	// (step's poke). Nothing is due, nothing changes.
	step(30 * time.Second)
	assert.Equal(t, leaf.SerialNumber, servingLeaf(t, src).SerialNumber, "a pass between ticks renews nothing early")

	// Just before the renewal moment: the same certificate keeps serving.
	step(RenewAt(leaf).Sub(clk.Now()) - time.Minute)
	assert.Equal(t, leaf.SerialNumber, servingLeaf(t, src).SerialNumber, "not renewed before two thirds of its life")

	// Past it: the next tick renews it, with the same CA.
	step(2 * time.Minute)
	renewed := servingLeaf(t, src)
	assert.NotEqual(t, leaf.SerialNumber, renewed.SerialNumber, "renewed after two thirds of its life")
	assert.NoError(t, renewed.CheckSignatureFrom(ca.cert))
	assert.WithinDuration(t, clk.Now().Add(-leafBackdate), renewed.NotBefore, time.Second, "issued at the fake clock's time")
	assert.False(t, NeedsRenewal(renewed, clk.Now()))
	_, same := readCA(t, client, ns)
	assert.Equal(t, ca.cert.Raw, same.cert.Raw, "the CA is not rotated with the serving certificate")

	// Past two thirds of the CA's life: rotated in the Secret, re-signed, re-injected.
	step(RenewAt(ca.cert).Sub(clk.Now()) + time.Minute)
	secret, err := client.CoreV1().Secrets(ns).Get(context.Background(), testSecret, metav1.GetOptions{})
	require.NoError(t, err)
	rotated, err := parseAuthority(secret.Data, clk.Now())
	require.NoError(t, err)
	assert.NotEqual(t, ca.cert.Raw, rotated.cert.Raw, "the CA was rotated")
	inBundle, err := pki.DecodeX509CertificateSetBytes(rotated.bundle)
	require.NoError(t, err)
	require.Len(t, inBundle, 2)
	assert.Equal(t, ca.cert.Raw, inBundle[1].Raw, "the old CA stays trusted")
	assert.NoError(t, servingLeaf(t, src).CheckSignatureFrom(rotated.cert), "re-signed by the new CA")
	assert.True(t, allInjected(t, client, webhooks, rotated.bundle), "the new bundle is injected")
}

// TestTLSConfig checks the one thing TLSConfig decides: nothing older than TLS 1.2.
func TestTLSConfig(t *testing.T) {
	ca := mustCA(t, time.Now(), time.Hour)
	pair, err := ca.signServing([]string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Now(), 30*time.Minute)
	require.NoError(t, err)
	src := &SelfSignedSource{clock: clock.RealClock{}}
	src.serving.Store(pair)
	cfg := TLSConfig(src)
	assert.Equal(t, uint16(tls.VersionTLS12), cfg.MinVersion)

	url := serveTLS(t, src)
	for _, tc := range []struct {
		name    string
		version uint16
		wantErr bool
	}{
		{"deny: TLS 1.1", tls.VersionTLS11, true},
		{"allow: TLS 1.2", tls.VersionTLS12, false},
		{"allow: TLS 1.3", tls.VersionTLS13, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), &tls.Config{
				RootCAs: certPool(t, ca.bundle), MinVersion: tc.version, MaxVersion: tc.version, //nolint:gosec // testing old versions on purpose
			})
			if tc.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.version, conn.ConnectionState().Version)
			_ = conn.Close()
		})
	}
}
