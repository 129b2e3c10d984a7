package certs

import (
	"context"
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/cert-manager/cert-manager/pkg/util/pki"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// mustCA generates a CA valid for lifetime from now.
func mustCA(t *testing.T, now time.Time, lifetime time.Duration) *authority {
	t.Helper()
	ca, err := newAuthority("test-ca", now, lifetime, nil)
	require.NoError(t, err)
	return ca
}

// certPool returns a pool of the certificates in a PEM bundle.
func certPool(t *testing.T, bundle []byte) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(bundle), "bundle holds no certificate")
	return pool
}

func TestParseAuthority(t *testing.T) {
	now := issued
	ca := mustCA(t, now, 24*time.Hour)
	other := mustCA(t, now, 24*time.Hour)
	leaf, err := ca.signServing([]string{"svc"}, nil, now, time.Hour)
	require.NoError(t, err)
	leafPEM, err := pki.EncodeX509(leaf.Leaf)
	require.NoError(t, err)
	leafKey, err := pki.EncodePKCS8PrivateKey(leaf.PrivateKey)
	require.NoError(t, err)

	tests := []struct {
		name    string
		data    map[string][]byte
		wantErr string
	}{
		{"accept: a CA pair", ca.secretData(), ""},
		{"reject: empty secret", nil, "missing tls.crt or tls.key"},
		{"reject: no key", map[string][]byte{"tls.crt": ca.certPEM}, "missing tls.crt or tls.key"},
		{"reject: key of another CA", map[string][]byte{"tls.crt": ca.certPEM, "tls.key": other.keyPEM}, "invalid CA key pair"},
		{"reject: garbage", map[string][]byte{"tls.crt": []byte("not PEM"), "tls.key": []byte("not PEM")}, "invalid CA key pair"},
		{"reject: a serving certificate is not a CA", map[string][]byte{"tls.crt": leafPEM, "tls.key": leafKey}, "not a CA"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAuthority(tc.data, now)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, ca.cert.Raw, got.cert.Raw)
			assert.Equal(t, ca.bundle, got.bundle)
		})
	}
}

func TestTrustBundle(t *testing.T) {
	now := issued
	current := mustCA(t, now, 24*time.Hour)
	stillValid := mustCA(t, now.Add(-10*time.Hour), 24*time.Hour)
	expired := mustCA(t, now.Add(-48*time.Hour), 24*time.Hour)

	var previous []byte
	for _, ca := range []*authority{current, stillValid, expired} {
		previous = append(previous, ca.certPEM...)
	}
	previous = append(previous, []byte("trailing garbage is ignored by the PEM decoder\n")...)
	got, err := trustBundle(current.cert, previous, now)
	require.NoError(t, err)
	certs, err := pki.DecodeX509CertificateSetBytes(got)
	require.NoError(t, err)
	require.Len(t, certs, 2, "current once, the still valid previous CA, not the expired one")
	assert.Equal(t, current.cert.Raw, certs[0].Raw, "the current CA comes first")
	assert.Equal(t, stillValid.cert.Raw, certs[1].Raw)

	got, err = trustBundle(current.cert, []byte("not PEM at all"), now)
	require.NoError(t, err)
	assert.Equal(t, current.certPEM, got, "an unreadable previous bundle is dropped")
}

func TestNewAuthorityKeepsThePreviousCATrusted(t *testing.T) {
	now := issued
	old := mustCA(t, now.Add(-300*24*time.Hour), DefaultCADuration)
	next, err := newAuthority("test-ca", now, DefaultCADuration, old)
	require.NoError(t, err)
	certs, err := pki.DecodeX509CertificateSetBytes(next.bundle)
	require.NoError(t, err)
	require.Len(t, certs, 2)
	assert.Equal(t, next.cert.Raw, certs[0].Raw)
	assert.Equal(t, old.cert.Raw, certs[1].Raw)
	assert.True(t, next.cert.IsCA)
	assert.Equal(t, now.Add(-caBackdate), next.cert.NotBefore, "backdated for replicas whose clock is behind")
	assert.False(t, NeedsRenewal(next.cert, now.Add(-30*time.Minute)), "a replica 30 minutes behind accepts the new CA")
}

func TestSignServing(t *testing.T) {
	now := time.Now() // verified below by crypto/x509 against the real time
	ca := mustCA(t, now, 24*time.Hour)
	dnsNames := ServiceDNSNames("webhook", "system", []string{"webhook.example"})
	cert, err := ca.signServing(dnsNames, []net.IP{net.ParseIP("127.0.0.1")}, now, time.Hour)
	require.NoError(t, err)
	leaf := cert.Leaf
	assert.Equal(t, []string{"webhook", "webhook.system", "webhook.system.svc", "webhook.system.svc.cluster.local", "webhook.example"}, leaf.DNSNames)
	assert.True(t, leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")))
	assert.False(t, leaf.IsCA)
	assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, leaf.ExtKeyUsage)
	assert.WithinDuration(t, now.Add(time.Hour), leaf.NotAfter, time.Second)
	assert.WithinDuration(t, now.Add(-leafBackdate), leaf.NotBefore, time.Second)
	for _, name := range []string{"webhook.system.svc", "127.0.0.1"} {
		_, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: certPool(t, ca.bundle)})
		assert.NoError(t, err, "verify as %s", name)
	}

	t.Run("never outlives its CA", func(t *testing.T) {
		short := mustCA(t, now, 30*time.Minute)
		cert, err := short.signServing([]string{"svc"}, nil, now, time.Hour)
		require.NoError(t, err)
		assert.Equal(t, short.cert.NotAfter, cert.Leaf.NotAfter)
	})
	t.Run("refuses to sign with an expired CA", func(t *testing.T) {
		_, err := ca.signServing([]string{"svc"}, nil, now.Add(25*time.Hour), time.Hour)
		assert.ErrorContains(t, err, "is not valid at")
	})
}

func TestNewSelfSignedSourceRejectsBadOptions(t *testing.T) {
	valid := SelfSignedOptions{Client: fake.NewClientset(), Namespace: "ns", SecretName: "ca", ServiceName: "svc"}
	tests := []struct {
		name    string
		mutate  func(*SelfSignedOptions)
		wantErr string
	}{
		{"deny: no client", func(o *SelfSignedOptions) { o.Client = nil }, "client is required"},
		{"deny: no namespace", func(o *SelfSignedOptions) { o.Namespace = "" }, "namespace of the CA secret is required"},
		{"deny: no secret name", func(o *SelfSignedOptions) { o.SecretName = "" }, "name of the CA secret is required"},
		{"deny: nothing names the server", func(o *SelfSignedOptions) { o.ServiceName = "" }, "service name, extra DNS names or IP addresses are required"},
		{"deny: empty extra DNS name", func(o *SelfSignedOptions) { o.ExtraDNSNames = []string{""} }, "extra DNS name 0 is empty"},
		{"deny: invalid IP", func(o *SelfSignedOptions) { o.IPAddresses = []net.IP{{1, 2}} }, "IP address 0 is invalid"},
		{"deny: leaf longer than a third of the CA", func(o *SelfSignedOptions) { o.CADuration, o.LeafDuration = 9*time.Hour, 4*time.Hour }, "must not exceed a third"},
		{"deny: negative duration", func(o *SelfSignedOptions) { o.ResyncInterval = -time.Second }, "durations must be positive"},
		{"allow: IP addresses only (dev mode)", func(o *SelfSignedOptions) { o.ServiceName, o.IPAddresses = "", []net.IP{net.IPv4(127, 0, 0, 1)} }, ""},
		{"allow: defaults", func(*SelfSignedOptions) {}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := valid
			tc.mutate(&opts)
			src, err := NewSelfSignedSource(opts)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.ErrorIs(t, src.Healthy(), ErrNoCertificate, "nothing is loaded before Start")
			_, err = src.GetCertificate(nil)
			assert.ErrorIs(t, err, ErrNoCertificate)
		})
	}
}

func TestSetCABundle(t *testing.T) {
	bundle := []byte("bundle")
	a := admissionregistrationv1.WebhookClientConfig{CABundle: []byte("old")}
	b := admissionregistrationv1.WebhookClientConfig{}
	assert.True(t, setCABundle([]*admissionregistrationv1.WebhookClientConfig{&a, &b}, bundle))
	assert.Equal(t, bundle, a.CABundle)
	assert.Equal(t, bundle, b.CABundle)
	assert.False(t, setCABundle([]*admissionregistrationv1.WebhookClientConfig{&a, &b}, bundle), "nothing to change the second time")
	assert.False(t, setCABundle(nil, bundle), "a configuration without webhooks needs no update")
}

// fakeSource returns a source on a fake clientset, for the ensureCA races that a real API
// server cannot be made to lose on demand.
func fakeSource(t *testing.T, client *fake.Clientset, now time.Time) *SelfSignedSource {
	t.Helper()
	src, err := NewSelfSignedSource(SelfSignedOptions{
		Client: client, Namespace: "ns", SecretName: "ca", ServiceName: "svc",
		Clock: clocktesting.NewFakeClock(now),
	})
	require.NoError(t, err)
	return src
}

func caSecret(ca *authority) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: "ns", ResourceVersion: "1"},
		Type:       corev1.SecretTypeTLS,
		Data:       ca.secretData(),
	}
}

var secretsResource = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// TestEnsureCAAdoptsTheWinnersCAAfterLosingTheCreateRace: another replica creates the Secret
// between our read (not found) and our create. We must adopt its CA, not overwrite it.
func TestEnsureCAAdoptsTheWinnersCAAfterLosingTheCreateRace(t *testing.T) {
	now := issued
	winner := mustCA(t, now, DefaultCADuration)
	client := fake.NewClientset()
	creates, updates := 0, 0
	client.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		creates++
		require.NoError(t, client.Tracker().Add(caSecret(winner)))
		return true, nil, apierrors.NewAlreadyExists(secretsResource.GroupResource(), "ca")
	})
	client.PrependReactor("update", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		updates++
		return false, nil, nil
	})

	got, err := fakeSource(t, client, now).ensureCA(context.Background(), now)
	require.NoError(t, err)
	assert.Equal(t, winner.cert.Raw, got.cert.Raw, "adopted the winner's CA")
	assert.Equal(t, 1, creates)
	assert.Zero(t, updates, "never overwrote the winner's CA")
}

// TestEnsureCAAdoptsTheWinnersRotation: two replicas find the CA due for rotation; the other
// one's update lands first, ours gets Conflict. We must re-read and adopt its new CA instead of
// rotating a second time.
func TestEnsureCAAdoptsTheWinnersRotation(t *testing.T) {
	now := issued
	due := mustCA(t, now.Add(-300*24*time.Hour), DefaultCADuration)
	require.True(t, NeedsRenewal(due.cert, now))
	winner := mustCA(t, now, DefaultCADuration)
	client := fake.NewClientset(caSecret(due))
	updates := 0
	client.PrependReactor("update", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		updates++
		require.NoError(t, client.Tracker().Update(secretsResource, caSecret(winner), "ns"))
		return true, nil, apierrors.NewConflict(secretsResource.GroupResource(), "ca", nil)
	})

	got, err := fakeSource(t, client, now).ensureCA(context.Background(), now)
	require.NoError(t, err)
	assert.Equal(t, winner.cert.Raw, got.cert.Raw, "adopted the winner's rotation")
	assert.Equal(t, 1, updates, "did not rotate a second time")
}

func TestEnsureCARotatesWithTheResourceVersionItRead(t *testing.T) {
	now := issued
	due := mustCA(t, now.Add(-300*24*time.Hour), DefaultCADuration)
	client := fake.NewClientset(caSecret(due))
	var sent *corev1.Secret
	client.PrependReactor("update", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sent = a.(k8stesting.UpdateAction).GetObject().(*corev1.Secret).DeepCopy()
		return false, nil, nil
	})

	got, err := fakeSource(t, client, now).ensureCA(context.Background(), now)
	require.NoError(t, err)
	require.NotNil(t, sent)
	assert.Equal(t, "1", sent.ResourceVersion, "the update is conditional on what was read")
	assert.NotEqual(t, due.cert.Raw, got.cert.Raw, "rotated")
	assert.False(t, NeedsRenewal(got.cert, now))
	pool := certPool(t, sent.Data[SecretCAKey])
	assert.Len(t, pool.Subjects(), 2, "the bundle keeps the previous CA trusted") //nolint:staticcheck // Subjects is fine for counting
}
