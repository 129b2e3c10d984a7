package controller

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"

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
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(secret.Data[restTLSCAKey]) {
		return nil, fmt.Errorf("the Secret %s/%s has no PEM certificate in %s: the CA of the JobManager's REST certificate is needed to verify it", fc.Namespace, name, restTLSCAKey)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: restServerName(fc)}
	if flinkBool(fc, flinkRESTSSLMutualAuth, false) {
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
	if !flinkBool(fc, flinkSSLVerifyHostname, true) {
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
	return cfg, nil
}

// DefaultFlinkTLSClient reaches the cluster's JobManager Service over HTTPS with cfg.
func DefaultFlinkTLSClient(fc *v1beta1.FlinkCluster, cfg *tls.Config) (flinkclient.Client, error) {
	_, _, _, ui := resources.JobManagerPorts(fc)
	return flinkclient.New(fmt.Sprintf("https://%s:%d", restServerName(fc), ui), TLSHTTPClient(cfg))
}

// TLSHTTPClient is an HTTP client for Flink's REST API with cfg, bounded by
// flinkclient.DefaultTimeout like the plain one.
func TLSHTTPClient(cfg *tls.Config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	return &http.Client{Timeout: flinkclient.DefaultTimeout, Transport: tr}
}
