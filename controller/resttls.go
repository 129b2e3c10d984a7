package controller

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
)

// RESTTLSSecretAnnotation names the Secret, in the FlinkCluster's namespace, that holds what
// the controller needs to reach a JobManager whose REST endpoint serves TLS
// (security.ssl.rest.enabled: true): ca.crt, the PEM CA the JobManager's certificate is
// verified against, and, when Flink asks for client certificates
// (security.ssl.rest.authentication-enabled: true), tls.crt and tls.key, the client
// certificate the controller presents. A cert-manager Certificate's Secret has these keys,
// and its keystores (PKCS12 or JKS) serve Flink's keystore and truststore settings.
const RESTTLSSecretAnnotation = "flinkclusters.flinkoperator.k8s.io/rest-tls-secret"

// Flink's REST SSL options the controller reads from spec.flinkProperties.
const (
	flinkRESTSSLEnabled     = "security.ssl.rest.enabled"
	flinkRESTSSLMutualAuth  = "security.ssl.rest.authentication-enabled"
	flinkSSLVerifyHostname  = "security.ssl.verify-hostname"
	restTLSCAKey            = "ca.crt"
	restTLSClientCertKey    = corev1.TLSCertKey
	restTLSClientPrivateKey = corev1.TLSPrivateKeyKey
)

// flinkBool reads a boolean Flink option: true when set to "true" (any case), def when unset.
func flinkBool(fc *v1beta1.FlinkCluster, key string, def bool) bool {
	v, ok := fc.Spec.FlinkProperties[key]
	if !ok || strings.TrimSpace(v) == "" {
		return def
	}
	return strings.EqualFold(strings.TrimSpace(v), "true")
}

// restServerName is the name the JobManager's REST certificate must carry: the JobManager
// Service's DNS name, which the controller connects to.
func restServerName(fc *v1beta1.FlinkCluster) string {
	return fmt.Sprintf("%s.%s.svc", resources.JobManagerName(fc.Name), fc.Namespace)
}

// restTLS is the TLS configuration for the cluster's REST endpoint, nil when it serves plain
// HTTP. It verifies the JobManager's certificate against the Secret's CA and, unless
// security.ssl.verify-hostname is false, for the Service's DNS name. The error says what to
// fix: the annotation, the Secret, or its keys.
func (r *Reconciler) restTLS(ctx context.Context, fc *v1beta1.FlinkCluster) (*tls.Config, error) {
	if !flinkBool(fc, flinkRESTSSLEnabled, false) {
		return nil, nil
	}
	name := fc.Annotations[RESTTLSSecretAnnotation]
	if name == "" {
		return nil, fmt.Errorf("%s is true: annotate the FlinkCluster with %s=<Secret> naming a Secret with %s, the CA of the JobManager's REST certificate",
			flinkRESTSSLEnabled, RESTTLSSecretAnnotation, restTLSCAKey)
	}
	secret := &corev1.Secret{}
	// The API reader, not the cache: the controller watches no Secrets, and needs only get on
	// this one.
	if err := r.Reader.Get(ctx, types.NamespacedName{Namespace: fc.Namespace, Name: name}, secret); err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s (annotation %s) for the Flink REST TLS settings: %w", fc.Namespace, name, RESTTLSSecretAnnotation, err)
	}
	mutual, verifyHostname := flinkBool(fc, flinkRESTSSLMutualAuth, false), flinkBool(fc, flinkSSLVerifyHostname, true)
	cluster := types.NamespacedName{Namespace: fc.Namespace, Name: fc.Name}
	key := restTLSKey(restServerName(fc), mutual, verifyHostname, secret)
	if cfg := restTLSConfigs.lookup(cluster, key); cfg != nil {
		return cfg, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(secret.Data[restTLSCAKey]) {
		return nil, fmt.Errorf("the Secret %s/%s has no PEM certificate in %s: the CA of the JobManager's REST certificate is needed to verify it", fc.Namespace, name, restTLSCAKey)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: restServerName(fc)}
	if mutual {
		crt, key := secret.Data[restTLSClientCertKey], secret.Data[restTLSClientPrivateKey]
		if len(crt) == 0 || len(key) == 0 {
			return nil, fmt.Errorf("%s is true: the Secret %s/%s needs %s and %s, the client certificate the controller presents",
				flinkRESTSSLMutualAuth, fc.Namespace, name, restTLSClientCertKey, restTLSClientPrivateKey)
		}
		pair, err := tls.X509KeyPair(crt, key)
		if err != nil {
			return nil, fmt.Errorf("the Secret %s/%s: the client certificate in %s and %s: %w", fc.Namespace, name, restTLSClientCertKey, restTLSClientPrivateKey, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if !verifyHostname {
		// As Flink's own clients with verify-hostname false: the chain is verified, the name
		// is not. crypto/tls verifies both or neither, so the chain is checked here.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the JobManager presented no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter})
			return err
		}
	}
	restTLSConfigs.store(cluster, key, cfg)
	return cfg, nil
}

// restTLSKey identifies what a cluster's REST TLS configuration is made of: the name
// verified, the two Flink options and the Secret's keys that are read. A Secret rewritten
// with the same content (a cert-manager renewal that changes nothing, a resync) keeps the
// key, and so the configuration and its connections.
func restTLSKey(serverName string, mutual, verifyHostname bool, secret *corev1.Secret) string {
	h := sha256.New()
	part := func(b []byte) {
		_ = binary.Write(h, binary.BigEndian, uint64(len(b)))
		h.Write(b)
	}
	part([]byte(serverName))
	part([]byte(strconv.FormatBool(mutual) + strconv.FormatBool(verifyHostname)))
	part(secret.Data[restTLSCAKey])
	if mutual {
		part(secret.Data[restTLSClientCertKey])
		part(secret.Data[restTLSClientPrivateKey])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// restTLSConfigs holds, for each cluster, its REST TLS configuration and the HTTP client built
// for it, so that reconciles reuse one transport and its kept-alive connections instead of
// building a transport (and a TLS handshake) per reconcile and leaving it open.
var restTLSConfigs = &restTLSCache{byCluster: map[types.NamespacedName]*restTLSEntry{}, byConfig: map[*tls.Config]*restTLSEntry{}}

// restTLSCache maps each cluster to its current configuration, and each configuration to
// its client. A configuration replaced (the Secret or the Flink options changed) has its
// idle connections closed; an entry lives as long as the process, one per cluster with
// REST TLS.
type restTLSCache struct {
	mu        sync.Mutex
	byCluster map[types.NamespacedName]*restTLSEntry
	byConfig  map[*tls.Config]*restTLSEntry
}

type restTLSEntry struct {
	key    string
	cfg    *tls.Config
	client *http.Client // built on first use
}

// lookup returns the cluster's configuration when it was made from key, nil otherwise.
func (c *restTLSCache) lookup(cluster types.NamespacedName, key string) *tls.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byCluster[cluster]; e != nil && e.key == key {
		return e.cfg
	}
	return nil
}

// store makes cfg, made from key, the cluster's configuration, and closes the idle
// connections of the one it replaces (those in use close when their request ends).
func (c *restTLSCache) store(cluster types.NamespacedName, key string, cfg *tls.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.byCluster[cluster]; old != nil {
		delete(c.byConfig, old.cfg)
		if old.client != nil {
			old.client.CloseIdleConnections()
		}
	}
	e := &restTLSEntry{key: key, cfg: cfg}
	c.byCluster[cluster], c.byConfig[cfg] = e, e
}

// client returns the HTTP client of cfg: the one built for it before when cfg is a cluster's
// current configuration, a new one otherwise.
func (c *restTLSCache) client(cfg *tls.Config) *http.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.byConfig[cfg]
	if e == nil {
		return newTLSHTTPClient(cfg)
	}
	if e.client == nil {
		e.client = newTLSHTTPClient(cfg)
	}
	return e.client
}

// DefaultFlinkTLSClient reaches the cluster's JobManager Service over HTTPS with cfg.
func DefaultFlinkTLSClient(fc *v1beta1.FlinkCluster, cfg *tls.Config) (flinkclient.Client, error) {
	_, _, _, ui := resources.JobManagerPorts(fc)
	return flinkclient.New(fmt.Sprintf("https://%s:%d", restServerName(fc), ui), TLSHTTPClient(cfg))
}

// TLSHTTPClient is an HTTP client for Flink's REST API with cfg, bounded by
// flinkclient.DefaultTimeout like the plain one. For a configuration the controller made for
// a cluster it is the same client, and so the same connections, on every reconcile until
// the configuration changes.
func TLSHTTPClient(cfg *tls.Config) *http.Client {
	return restTLSConfigs.client(cfg)
}

func newTLSHTTPClient(cfg *tls.Config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	return &http.Client{Timeout: flinkclient.DefaultTimeout, Transport: tr}
}
