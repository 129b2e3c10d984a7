package realflink

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
)

// ServiceTransport is an http.RoundTripper that reaches a Service by its cluster DNS name
// (<service>.<namespace>.svc[.cluster.local]:<port>) as kube-proxy would: at one of its
// ready, non-terminating pods, at the Service port's target port. The control plane here has
// no DNS and no kube-proxy; a Service with no such pod refuses the connection, as a Service
// without endpoints does.
type ServiceTransport struct {
	// Reader reads Services and pods; a cache's reader keeps the API server's load low.
	Reader client.Reader
	// Base carries the request once it names a pod; a plain transport when nil.
	Base http.RoundTripper
}

var defaultBase = &http.Transport{
	DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
	MaxIdleConnsPerHost: 2,
	IdleConnTimeout:     30 * time.Second,
}

// FlinkClient is the controller's Flink REST client of fc through t: its JobManager Service.
func (t *ServiceTransport) FlinkClient(fc *v1beta1.FlinkCluster) (flinkclient.Client, error) {
	return flinkclient.New(controller.JobManagerURL(fc), &http.Client{Transport: t, Timeout: flinkclient.DefaultTimeout})
}

// RoundTrip implements http.RoundTripper.
func (t *ServiceTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	addr, err := t.resolve(r.Context(), r.URL.Host)
	if err != nil {
		return nil, err
	}
	out := r.Clone(r.Context())
	out.URL.Host = addr
	base := t.Base
	if base == nil {
		base = defaultBase
	}
	return base.RoundTrip(out)
}

// resolve is the pod address that serves host.
func (t *ServiceTransport) resolve(ctx context.Context, host string) (string, error) {
	name, portStr, err := net.SplitHostPort(host)
	if err != nil {
		return "", fmt.Errorf("dial tcp %s: %w", host, err)
	}
	parts := strings.Split(name, ".")
	if len(parts) < 3 || parts[2] != "svc" {
		// Not a Service's name: dial it as it is.
		return host, nil
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return "", fmt.Errorf("dial tcp %s: bad port", host)
	}
	svc := &corev1.Service{}
	if err := t.Reader.Get(ctx, types.NamespacedName{Namespace: parts[1], Name: parts[0]}, svc); err != nil {
		return "", fmt.Errorf("dial tcp %s: no such host (%w)", host, err)
	}
	target := port
	found := false
	for _, p := range svc.Spec.Ports {
		if int(p.Port) == port {
			found = true
			if p.TargetPort.IntValue() != 0 {
				target = p.TargetPort.IntValue()
			}
		}
	}
	if !found || len(svc.Spec.Selector) == 0 {
		return "", fmt.Errorf("dial tcp %s: connection refused (the Service has no such port or no selector)", host)
	}
	pods := &corev1.PodList{}
	if err := t.Reader.List(ctx, pods, client.InNamespace(svc.Namespace), client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(svc.Spec.Selector)}); err != nil {
		return "", fmt.Errorf("dial tcp %s: %w", host, err)
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; endpointReady(p) {
			return net.JoinHostPort(p.Status.PodIP, strconv.Itoa(target)), nil
		}
	}
	return "", fmt.Errorf("dial tcp %s: connection refused (the Service has no ready endpoint)", host)
}

// endpointReady reports whether the endpoints controller lists pod as a ready endpoint: it
// runs, has an IP, is Ready and not being deleted.
func endpointReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.PodIP == "" || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
