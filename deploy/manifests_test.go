package deploy_test

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/flink-admission/flink-admission/deploy"
	"github.com/flink-admission/flink-admission/internal/containerargs"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/policy"
	"github.com/flink-admission/flink-admission/webhook"
)

// Names the binary and the manifests agree on: the serve flags' defaults
// (package server), the Secrets and the Lease it uses.
const (
	namespace             = "flink-admission-system"
	serviceAccountName    = "flink-admission"
	deploymentName        = "flink-admission"
	appLabel              = "app.kubernetes.io/name"
	serviceName           = "flink-admission-webhook"
	metricsServiceName    = "flink-admission-metrics"
	metricsReaderRole     = "flink-admission-metrics-reader"
	webhookConfigName     = "flink-admission"
	mutatingWebhookName   = "mflinkcluster.flinkoperator.k8s.io"
	validatingWebhookName = "vflinkcluster.flinkoperator.k8s.io"
	// stagedWebhookName is the validating webhook of namespaces under staged enforcement.
	stagedWebhookName = "vflinkcluster-warn.flinkoperator.k8s.io"
	servingCertSecret = "flink-admission-serving-cert"
	servingCertDir    = "/var/run/flink-admission/serving-certs"
	caSecretName      = "flink-admission-ca"
	leaseName         = "flink-admission.flinkoperator.k8s.io"
	image             = "flink-admission:latest"
	priorityClassName = "flink-admission-critical"
	// highestUserDefinablePriority is the API server's limit for a PriorityClass whose name
	// does not start with system- (k8s.io/kubernetes/pkg/apis/scheduling).
	highestUserDefinablePriority = int32(1000000000)
)

// webhookView is what the Mutating and Validating webhook types share.
type webhookView struct {
	name                    string
	clientConfig            admissionregistrationv1.WebhookClientConfig
	rules                   []admissionregistrationv1.RuleWithOperations
	failurePolicy           *admissionregistrationv1.FailurePolicyType
	namespaceSelector       *metav1.LabelSelector
	objectSelector          *metav1.LabelSelector
	sideEffects             *admissionregistrationv1.SideEffectClass
	timeoutSeconds          *int32
	admissionReviewVersions []string
	matchConditions         []admissionregistrationv1.MatchCondition
}

func mutatingView(w admissionregistrationv1.MutatingWebhook) webhookView {
	return webhookView{w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.NamespaceSelector,
		w.ObjectSelector, w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.MatchConditions}
}

func validatingView(w admissionregistrationv1.ValidatingWebhook) webhookView {
	return webhookView{w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.NamespaceSelector,
		w.ObjectSelector, w.SideEffects, w.TimeoutSeconds, w.AdmissionReviewVersions, w.MatchConditions}
}

// webhooksOf returns the webhooks of the two webhook configurations, by kind ("mutating",
// "validating", "validating-warn" for staged enforcement), with the path each must call.
func webhooksOf(t *testing.T, objs []object) map[string]struct {
	view webhookView
	path string
} {
	t.Helper()
	mwc := one[*admissionregistrationv1.MutatingWebhookConfiguration](t, objs, webhookConfigName)
	vwc := one[*admissionregistrationv1.ValidatingWebhookConfiguration](t, objs, webhookConfigName)
	require.Len(t, mwc.Webhooks, 1)
	require.Len(t, vwc.Webhooks, 2)
	return map[string]struct {
		view webhookView
		path string
	}{
		"mutating":        {mutatingView(mwc.Webhooks[0]), webhook.MutatePath},
		"validating":      {validatingView(vwc.Webhooks[0]), webhook.ValidatePath},
		"validating-warn": {validatingView(vwc.Webhooks[1]), webhook.ValidateWarnPath},
	}
}

func TestWebhookConfigurations(t *testing.T) {
	wantNames := map[string]string{"mutating": mutatingWebhookName, "validating": validatingWebhookName, "validating-warn": stagedWebhookName}
	for _, k := range kustomizations {
		objs := objects(t, k)
		svc := one[*corev1.Service](t, objs, serviceName)
		for kind, w := range webhooksOf(t, objs) {
			t.Run(k.name+"/"+kind, func(t *testing.T) {
				v := w.view
				assert.Equal(t, wantNames[kind], v.name)

				// The API server calls the Service, on the port that reaches the webhook server,
				// at the path the binary serves.
				assert.Nil(t, v.clientConfig.URL)
				require.NotNil(t, v.clientConfig.Service)
				assert.Equal(t, svc.Name, v.clientConfig.Service.Name)
				assert.Equal(t, svc.Namespace, v.clientConfig.Service.Namespace)
				require.NotNil(t, v.clientConfig.Service.Path)
				assert.Equal(t, w.path, *v.clientConfig.Service.Path)
				require.NotNil(t, v.clientConfig.Service.Port)
				assert.Equal(t, "webhook", servicePortName(t, svc, *v.clientConfig.Service.Port))
				assert.Empty(t, v.clientConfig.CABundle, "the CA bundle is injected at run time, never shipped")

				require.NotNil(t, v.failurePolicy)
				assert.Equal(t, admissionregistrationv1.Fail, *v.failurePolicy)
				require.NotNil(t, v.sideEffects)
				assert.Equal(t, admissionregistrationv1.SideEffectClassNone, *v.sideEffects)
				assert.Equal(t, []string{"v1"}, v.admissionReviewVersions)
				require.NotNil(t, v.timeoutSeconds)
				assert.LessOrEqual(t, *v.timeoutSeconds, int32(10))
				assert.Positive(t, *v.timeoutSeconds)

				// Scope: the namespace selector, and the match conditions that
				// TestWebhooksSendOnlyJudgedChanges evaluates.
				if v.objectSelector != nil {
					assert.Empty(t, v.objectSelector.MatchLabels)
					assert.Empty(t, v.objectSelector.MatchExpressions)
				}
				require.NotNil(t, v.namespaceSelector)
				selector, err := metav1.LabelSelectorAsSelector(v.namespaceSelector)
				require.NoError(t, err)
				// Every namespace but two is judged by exactly one validating webhook: the
				// staged one where the namespace is labelled for it.
				for ns, judged := range map[string]bool{
					"kube-system": false, namespace: false, // never block the cluster or itself
					"default": true, "team-a": true, "kube-public": true,
				} {
					for _, enforcement := range []string{"", policy.EnforcementWarn, "deny"} {
						// The API server sets kubernetes.io/metadata.name on every namespace.
						nsLabels := labels.Set{corev1.LabelMetadataName: ns}
						if enforcement != "" {
							nsLabels[policy.EnforcementLabel] = enforcement
						}
						staged := enforcement == policy.EnforcementWarn
						want := judged && (kind == "mutating" || staged == (kind == "validating-warn"))
						assert.Equal(t, want, selector.Matches(nsLabels), "namespace %s (%s=%s) selected", ns, policy.EnforcementLabel, enforcement)
					}
				}

				// The rules, evaluated by the API server's own matcher.
				for _, c := range []struct {
					op          admission.Operation
					resource    schema.GroupVersionResource
					subresource string
					want        bool
				}{
					{admission.Create, flinkClusters, "", true},
					{admission.Update, flinkClusters, "", true},
					{admission.Delete, flinkClusters, "", false},
					{admission.Connect, flinkClusters, "", false},
					// The controller's status writes do not go through the webhook.
					{admission.Update, flinkClusters, "status", false},
					{admission.Update, flinkClusters, "scale", false},
					{admission.Create, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "", false},
					{admission.Create, schema.GroupVersionResource{Group: "flinkoperator.k8s.io", Version: "v1alpha1", Resource: "flinkclusters"}, "", false},
				} {
					assert.Equal(t, c.want, rulesMatch(v.rules, c.op, c.resource, c.subresource),
						"%s %s/%s", c.op, c.resource, c.subresource)
				}
			})
		}
	}
}

// TestStagedWebhookIsTheValidatingOne: the staged webhook differs from the validating one
// only by its name, its path and the namespaces it selects, so that a staged namespace is
// judged by the same rules, conditions, timeout and failure policy.
func TestStagedWebhookIsTheValidatingOne(t *testing.T) {
	for _, k := range append(append([]kustomization(nil), kustomizations...), scoped) {
		t.Run(k.name, func(t *testing.T) {
			vwc := one[*admissionregistrationv1.ValidatingWebhookConfiguration](t, objects(t, k), webhookConfigName)
			require.Len(t, vwc.Webhooks, 2)
			enforced, staged := vwc.Webhooks[0].DeepCopy(), vwc.Webhooks[1].DeepCopy()
			for _, w := range []*admissionregistrationv1.ValidatingWebhook{enforced, staged} {
				w.Name, w.NamespaceSelector = "", nil
				if w.ClientConfig.Service != nil {
					w.ClientConfig.Service.Path = nil
				}
			}
			assert.Equal(t, enforced, staged)
		})
	}
}

var flinkClusters = schema.GroupVersionResource{Group: "flinkoperator.k8s.io", Version: "v1beta1", Resource: "flinkclusters"}

// rulesMatch reports whether any rule selects the request, as the API server decides it.
func rulesMatch(rs []admissionregistrationv1.RuleWithOperations, op admission.Operation, gvr schema.GroupVersionResource, subresource string) bool {
	attr := admission.NewAttributesRecord(nil, nil, schema.GroupVersionKind{Group: gvr.Group, Version: gvr.Version, Kind: "Any"},
		"team-a", "x", gvr, subresource, op, nil, false, nil)
	for _, r := range rs {
		if (&rules.Matcher{Rule: r, Attr: attr}).Matches() {
			return true
		}
	}
	return false
}

// servicePortName returns the name of the Service port with the given number.
func servicePortName(t *testing.T, svc *corev1.Service, port int32) string {
	t.Helper()
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			return p.Name
		}
	}
	t.Fatalf("service %s has no port %d", svc.Name, port)
	return ""
}

// containerPort resolves a port (number or name) of a container.
func containerPort(t *testing.T, c corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	t.Fatalf("container %s has no port named %q", c.Name, p.StrVal)
	return 0
}

// serveFlags parses a container's args: the `serve` subcommand, then --name=value flags,
// each given once (a flag appended twice by two patches would be ambiguous).
func serveFlags(t *testing.T, args []string) map[string]string {
	t.Helper()
	require.NotEmpty(t, args)
	require.Equal(t, "serve", args[0])
	flags := map[string]string{}
	for _, a := range args[1:] {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		require.True(t, ok && strings.HasPrefix(a, "--"), "argument %q is not --name=value", a)
		_, dup := flags[name]
		require.False(t, dup, "flag --%s given twice", name)
		flags[name] = value
	}
	return flags
}

// bindPort returns the port of a host:port bind address.
func bindPort(t *testing.T, addr string) int32 {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	n, err := strconv.ParseInt(port, 10, 32)
	require.NoError(t, err)
	return int32(n)
}

// workload returns the Deployment, its only container and its parsed flags.
func workload(t *testing.T, objs []object) (*appsv1.Deployment, corev1.Container, map[string]string) {
	t.Helper()
	d := one[*appsv1.Deployment](t, objs, deploymentName)
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	c := d.Spec.Template.Spec.Containers[0]
	return d, c, serveFlags(t, containerargs.Expand(&c, nil))
}

func TestDeployment(t *testing.T) {
	for _, k := range kustomizations {
		t.Run(k.name, func(t *testing.T) {
			objs := objects(t, k)
			d, c, flags := workload(t, objs)
			pod := d.Spec.Template.Spec
			podLabels := labels.Set(d.Spec.Template.Labels)

			assert.Equal(t, namespace, d.Namespace)
			require.NotNil(t, d.Spec.Replicas)
			assert.Equal(t, int32(2), *d.Spec.Replicas)
			assert.Equal(t, deploymentName, podLabels[appLabel])
			assertSelects(t, d.Spec.Selector, podLabels, "deployment selector")
			require.NotNil(t, d.Spec.Strategy.RollingUpdate)
			assert.Equal(t, intstr.FromInt32(0), *d.Spec.Strategy.RollingUpdate.MaxUnavailable, "a rollout never drops below two serving replicas")

			// Identity: the service account the RBAC binds, with a token (the binary uses the API).
			assert.Equal(t, serviceAccountName, pod.ServiceAccountName)
			assert.Equal(t, namespace, one[*corev1.ServiceAccount](t, objs, serviceAccountName).Namespace)
			require.NotNil(t, pod.AutomountServiceAccountToken)
			assert.True(t, *pod.AutomountServiceAccountToken)

			// Hardening, on the pod and on the container.
			psc := pod.SecurityContext
			require.NotNil(t, psc)
			assert.Equal(t, ptr.To(true), psc.RunAsNonRoot)
			assert.Equal(t, ptr.To(int64(65532)), psc.RunAsUser)
			require.NotNil(t, psc.SeccompProfile)
			assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, psc.SeccompProfile.Type)
			assert.False(t, pod.HostNetwork || pod.HostPID || pod.HostIPC)
			csc := c.SecurityContext
			require.NotNil(t, csc)
			assert.Equal(t, ptr.To(false), csc.AllowPrivilegeEscalation)
			assert.Equal(t, ptr.To(true), csc.ReadOnlyRootFilesystem)
			assert.NotEqual(t, ptr.To(true), csc.Privileged)
			require.NotNil(t, csc.Capabilities)
			assert.Equal(t, []corev1.Capability{"ALL"}, csc.Capabilities.Drop)
			assert.Empty(t, csc.Capabilities.Add)
			if csc.RunAsUser != nil {
				assert.Equal(t, int64(65532), *csc.RunAsUser)
			}
			if csc.SeccompProfile != nil {
				assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, csc.SeccompProfile.Type)
			}

			assert.Equal(t, image, c.Image)
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, hasReq := c.Resources.Requests[r]
				limit, hasLimit := c.Resources.Limits[r]
				assert.True(t, hasReq && hasLimit, "%s request and limit set", r)
				assert.LessOrEqual(t, req.Cmp(limit), 0, "%s request within its limit", r)
			}

			// --namespace is left to its default, the pod's namespace from the downward API.
			assert.NotContains(t, flags, "namespace")
			env := map[string]corev1.EnvVar{}
			for _, e := range c.Env {
				env[e.Name] = e
			}
			require.Contains(t, env, "POD_NAMESPACE")
			require.NotNil(t, env["POD_NAMESPACE"].ValueFrom)
			require.NotNil(t, env["POD_NAMESPACE"].ValueFrom.FieldRef)
			assert.Equal(t, "metadata.namespace", env["POD_NAMESPACE"].ValueFrom.FieldRef.FieldPath)

			// Flags and ports agree with each other, with the Service and with the probes.
			ports := map[string]int32{}
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
			}
			assert.Equal(t, map[string]int32{"webhook": 9443, "metrics": 8443, "health": 8081}, ports)
			assert.Equal(t, strconv.Itoa(int(ports["webhook"])), flags["webhook-port"])
			assert.Equal(t, ports["metrics"], bindPort(t, flags["metrics-bind-address"]))
			assert.Equal(t, "true", flags["metrics-secure"], "/metrics over HTTPS, authenticated and authorized")
			assert.Equal(t, ports["health"], bindPort(t, flags["health-probe-bind-address"]))
			assert.Equal(t, serviceName, flags["service-name"])
			assert.Equal(t, webhookConfigName, flags["mutating-webhook-configuration"])
			assert.Equal(t, webhookConfigName, flags["validating-webhook-configuration"])
			assert.Equal(t, "false", flags["leader-elect"], "the replicas share the fleet, no one leads it")
			assert.Equal(t, "true", flags["shard-fleet"])
			assert.Equal(t, strconv.FormatBool(!k.webhookOnly), flags["enable-controller"])
			// The webhook fails closed: it must be scheduled before workloads that can wait, in a
			// class of its own that any namespace may use.
			assert.Equal(t, priorityClassName, pod.PriorityClassName)
			pc := one[*schedulingv1.PriorityClass](t, objs, priorityClassName)
			assert.Greater(t, pc.Value, int32(0))
			assert.LessOrEqual(t, pc.Value, highestUserDefinablePriority, "a class outside system- may have at most %d", highestUserDefinablePriority)
			assert.False(t, pc.GlobalDefault, "only the webhook's pods")
			for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
				require.NotNil(t, probe)
				require.NotNil(t, probe.HTTPGet, "%s is an HTTP probe", path)
				assert.Equal(t, path, probe.HTTPGet.Path)
				assert.Equal(t, ports["health"], containerPort(t, c, probe.HTTPGet.Port))
			}

			// Spread: one replica per node (hard), across zones (soft), and anti-affinity.
			byKey := map[string]corev1.TopologySpreadConstraint{}
			for _, tsc := range pod.TopologySpreadConstraints {
				byKey[tsc.TopologyKey] = tsc
				assertSelects(t, tsc.LabelSelector, podLabels, "spread constraint "+tsc.TopologyKey)
			}
			require.Contains(t, byKey, corev1.LabelHostname)
			require.Contains(t, byKey, corev1.LabelTopologyZone)
			assert.Equal(t, corev1.ScheduleAnyway, byKey[corev1.LabelTopologyZone].WhenUnsatisfiable)
			require.NotNil(t, pod.Affinity)
			require.NotNil(t, pod.Affinity.PodAntiAffinity)
			preferred := pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
			require.Len(t, preferred, 1)
			assert.Equal(t, corev1.LabelHostname, preferred[0].PodAffinityTerm.TopologyKey)
			assertSelects(t, preferred[0].PodAffinityTerm.LabelSelector, podLabels, "pod anti-affinity")
		})
	}
}

// assertSelects asserts that a label selector selects the pod labels.
func assertSelects(t *testing.T, ls *metav1.LabelSelector, podLabels labels.Set, what string) {
	t.Helper()
	require.NotNil(t, ls, what)
	s, err := metav1.LabelSelectorAsSelector(ls)
	require.NoError(t, err, what)
	assert.False(t, s.Empty(), "%s selects everything", what)
	assert.True(t, s.Matches(podLabels), "%s does not select the webhook pods", what)
}

func TestPodDisruptionBudgetAndService(t *testing.T) {
	for _, k := range kustomizations {
		t.Run(k.name, func(t *testing.T) {
			objs := objects(t, k)
			d, c, _ := workload(t, objs)
			podLabels := labels.Set(d.Spec.Template.Labels)

			pdbs := all[*policyv1.PodDisruptionBudget](objs)
			require.Len(t, pdbs, 1)
			pdb := pdbs[0]
			assert.Equal(t, namespace, pdb.Namespace)
			require.NotNil(t, pdb.Spec.MinAvailable)
			assert.Equal(t, intstr.FromInt32(1), *pdb.Spec.MinAvailable)
			assert.Less(t, pdb.Spec.MinAvailable.IntVal, *d.Spec.Replicas, "a drain can evict one replica")
			assertSelects(t, pdb.Spec.Selector, podLabels, "PDB selector")

			svc := one[*corev1.Service](t, objs, serviceName)
			assert.Equal(t, namespace, svc.Namespace)
			require.NotEmpty(t, svc.Spec.Selector)
			assert.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels), "the Service selects the webhook pods")
			targets := map[int32]int32{}
			for _, p := range svc.Spec.Ports {
				targets[p.Port] = containerPort(t, c, p.TargetPort)
			}
			assert.Equal(t, map[int32]int32{443: 9443}, targets, "the webhook's Service exposes the admission port only")

			// The metrics have a Service of their own, on the metrics container port.
			msvc := one[*corev1.Service](t, objs, metricsServiceName)
			assert.Equal(t, namespace, msvc.Namespace)
			assert.True(t, labels.SelectorFromSet(msvc.Spec.Selector).Matches(podLabels), "the metrics Service selects the webhook pods")
			require.Len(t, msvc.Spec.Ports, 1)
			assert.Equal(t, "https", msvc.Spec.Ports[0].Name)
			assert.Equal(t, int32(8443), containerPort(t, c, msvc.Spec.Ports[0].TargetPort))
		})
	}
}

// TestNetworkPolicy: ingress to the webhook pods is limited to the admission and metrics
// ports; the health port is not reachable from other pods.
func TestNetworkPolicy(t *testing.T) {
	for _, k := range kustomizations {
		t.Run(k.name, func(t *testing.T) {
			objs := objects(t, k)
			d, c, _ := workload(t, objs)
			np := one[*networkingv1.NetworkPolicy](t, objs, "flink-admission")
			assert.Equal(t, namespace, np.Namespace)
			assertSelects(t, &np.Spec.PodSelector, labels.Set(d.Spec.Template.Labels), "NetworkPolicy podSelector")
			assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, np.Spec.PolicyTypes)
			open := map[int32]bool{}
			for _, rule := range np.Spec.Ingress {
				assert.Empty(t, rule.From, "the API server's and Prometheus' addresses are not known in advance")
				require.NotEmpty(t, rule.Ports, "a rule without ports opens every port")
				for _, p := range rule.Ports {
					require.NotNil(t, p.Port)
					open[containerPort(t, c, *p.Port)] = true
				}
			}
			assert.Equal(t, map[int32]bool{9443: true, 8443: true}, open)
		})
	}
}

// placeholder is how the overlays write a namespace that replacements fill in.
var placeholder = regexp.MustCompile(`\bNAMESPACE\b`)

// clusterScoped are the kinds the installs render that live in no namespace.
var clusterScoped = map[string]bool{
	"Namespace": true, "CustomResourceDefinition": true, "ClusterRole": true, "ClusterRoleBinding": true,
	"MutatingWebhookConfiguration": true, "ValidatingWebhookConfiguration": true,
	"MutatingAdmissionPolicy": true, "MutatingAdmissionPolicyBinding": true, "PriorityClass": true,
}

// TestNamespaceSetInOnePlace: the namespace is written once, in deploy/base's
// kustomization; a copy of deploy/ with only that line changed renders every kustomization
// (each overlay, the observability component included) without a trace of the old namespace
// (object namespaces, ServiceAccount subjects, selectors, DNS and TLS server names,
// annotations, alert expressions), and with every namespaced object in the new one but the
// scoped install's Roles and RoleBindings in its watched namespaces.
func TestNamespaceSetInOnePlace(t *testing.T) {
	const moved = "team-flink"
	mem := filesys.MakeFsInMemory()
	require.NoError(t, fs.WalkDir(deploy.Files(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		content, err := fs.ReadFile(deploy.Files(), p)
		if err != nil {
			return err
		}
		if p == "base/kustomization.yaml" {
			line := "\nnamespace: " + namespace + "\n"
			require.Equal(t, 1, strings.Count(string(content), line), "deploy/base sets the namespace in one line")
			content = []byte(strings.Replace(string(content), line, "\nnamespace: "+moved+"\n", 1))
		}
		return mem.WriteFile(path.Join("/deploy", p), content)
	}))
	watched := map[string]bool{"team-b": true, "team-c": true} // the scoped overlay's namespaces/
	for _, k := range goldens {
		t.Run(k.name, func(t *testing.T) {
			m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, path.Join("/deploy", filepath.ToSlash(k.dir)))
			require.NoError(t, err)
			y, err := m.AsYaml()
			require.NoError(t, err)
			// Line by line: a failure names the line, not the whole rendering.
			for i, line := range strings.Split(string(y), "\n") {
				assert.False(t, strings.Contains(line, namespace), "line %d still names %s: %s", i+1, namespace, line)
				assert.False(t, placeholder.MatchString(line), "line %d has a placeholder left unreplaced: %s", i+1, line)
			}
			for _, r := range m.Resources() {
				id := r.CurId().String()
				switch ns := r.GetNamespace(); {
				case clusterScoped[r.GetKind()]:
					assert.Empty(t, ns, "%s is cluster-scoped", id)
				case k == scoped && watched[ns]:
					assert.Contains(t, []string{"Role", "RoleBinding"}, r.GetKind(), "%s: only the controller's RBAC goes into a watched namespace", id)
				default:
					assert.Equal(t, moved, ns, "%s is in the install's namespace", id)
				}
				if r.GetKind() != "RoleBinding" && r.GetKind() != "ClusterRoleBinding" {
					continue
				}
				subjects, err := r.GetSlice("subjects")
				require.NoError(t, err, id)
				for _, s := range subjects {
					if s, ok := s.(map[string]any); ok && s["kind"] == "ServiceAccount" {
						assert.Equal(t, moved, s["namespace"], "%s binds the ServiceAccount %v of the install's namespace", id, s["name"])
					}
				}
			}
		})
	}
}

// writeVerbs are what the controller needs on the kinds it owns.
var writeVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// wantWebhookClusterRules is what every replica needs cluster-wide, with or without the
// controller: its two webhook configurations (self-signed CA injection), the reviews that
// authenticate and authorize the callers of /metrics, and the audit's list of the clusters and
// its PolicyReports.
var wantWebhookClusterRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"admissionregistration.k8s.io"}, Resources: []string{"mutatingwebhookconfigurations", "validatingwebhookconfigurations"},
		ResourceNames: []string{webhookConfigName}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
	{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{"flinkoperator.k8s.io"}, Resources: []string{"flinkclusters"}, Verbs: []string{"list"}},
	{APIGroups: []string{"wgpolicyk8s.io"}, Resources: []string{"policyreports"}, Verbs: []string{"get", "list", "create", "update", "patch"}},
}

// wantControllerClusterRules is what the controller needs cluster-wide: no more, no less.
// Pods are never created or changed: their owners (Jobs, Deployments, StatefulSets) do that.
var wantControllerClusterRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"flinkoperator.k8s.io"}, Resources: []string{"flinkclusters"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
	{APIGroups: []string{"flinkoperator.k8s.io"}, Resources: []string{"flinkclusters/status"}, Verbs: []string{"get", "update", "patch"}},
	{APIGroups: []string{"flinkoperator.k8s.io"}, Resources: []string{"flinkclusters/finalizers"}, Verbs: []string{"update"}},
	{APIGroups: []string{""}, Resources: []string{"configmaps", "services"}, Verbs: writeVerbs},
	{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets"}, Verbs: writeVerbs},
	{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: writeVerbs},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: writeVerbs},
	{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: writeVerbs},
	{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}, Verbs: writeVerbs},
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
}

// wantWebhookNamespaceRules is what every replica needs in its own namespace: its CA Secret,
// by name (create cannot be restricted by name).
var wantWebhookNamespaceRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{caSecretName}, Verbs: []string{"get", "list", "watch", "update"}},
	{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}},
}

// wantControllerNamespaceRules is the controller's leader-election Lease and the shard
// members' Leases (one per replica, named after its pod).
var wantControllerNamespaceRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{leaseName}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "update", "delete"}},
}

// wantRules is what an install grants its service account: the webhook's rules, and the
// controller's unless it runs none.
func wantRules(k kustomization) (cluster, namespaced []rbacv1.PolicyRule) {
	cluster = append(cluster, wantWebhookClusterRules...)
	namespaced = append(namespaced, wantWebhookNamespaceRules...)
	if !k.webhookOnly {
		cluster = append(cluster, wantControllerClusterRules...)
		namespaced = append(namespaced, wantControllerNamespaceRules...)
	}
	return cluster, namespaced
}

func TestRBAC(t *testing.T) {
	for _, k := range kustomizations {
		t.Run(k.name, func(t *testing.T) {
			objs := objects(t, k)
			for _, cr := range all[*rbacv1.ClusterRole](objs) {
				assert.Nil(t, cr.AggregationRule, "%s aggregates other roles", cr.Name)
				assertNoWildcards(t, "ClusterRole "+cr.Name, cr.Rules)
				for _, r := range cr.Rules {
					assert.NotContains(t, r.Resources, "secrets", "ClusterRole %s grants secrets cluster-wide", cr.Name)
				}
			}
			for _, r := range all[*rbacv1.Role](objs) {
				assertNoWildcards(t, "Role "+r.Name, r.Rules)
			}

			clusterRules, namespaceRules := grantedRules(t, objs)
			wantCluster, wantNamespaced := wantRules(k)
			assertSameRules(t, "cluster-wide", wantCluster, clusterRules)
			assertSameRules(t, "namespaced", wantNamespaced, namespaceRules)

			// Prometheus' role: read /metrics, nothing else; bound by the user to its scraper.
			reader := one[*rbacv1.ClusterRole](t, objs, metricsReaderRole)
			assert.Equal(t, []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}, reader.Rules)
		})
	}
}

// grantedRules returns the rules the webhook's service account gets: through
// ClusterRoleBindings (cluster-wide) and through RoleBindings to Roles in its namespace.
func grantedRules(t *testing.T, objs []object) (clusterRules, namespaceRules []rbacv1.PolicyRule) {
	t.Helper()
	isOurs := func(subjects []rbacv1.Subject) bool {
		for _, s := range subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == serviceAccountName && s.Namespace == namespace {
				return true
			}
		}
		return false
	}
	for _, b := range all[*rbacv1.ClusterRoleBinding](objs) {
		if isOurs(b.Subjects) {
			require.Equal(t, "ClusterRole", b.RoleRef.Kind)
			clusterRules = append(clusterRules, one[*rbacv1.ClusterRole](t, objs, b.RoleRef.Name).Rules...)
		}
	}
	for _, b := range all[*rbacv1.RoleBinding](objs) {
		if !isOurs(b.Subjects) {
			continue
		}
		assert.Equal(t, namespace, b.Namespace)
		require.Equal(t, "Role", b.RoleRef.Kind, "RoleBinding %s: a ClusterRole here could grant more than the namespace needs", b.Name)
		role := one[*rbacv1.Role](t, objs, b.RoleRef.Name)
		require.Equal(t, b.Namespace, role.Namespace)
		namespaceRules = append(namespaceRules, role.Rules...)
	}
	return clusterRules, namespaceRules
}

// TestRBACCoversKubebuilderMarkers: the Go packages declare the permissions they use as
// +kubebuilder:rbac markers (controller-gen's syntax). The installed roles must grant every
// one of them, so that a permission added in code but not here fails a test, not a cluster.
func TestRBACCoversKubebuilderMarkers(t *testing.T) {
	for _, k := range kustomizations {
		t.Run(k.name, func(t *testing.T) {
			// A webhook-only install needs what every package but the controller declares.
			cluster, namespaced := markerRules(t, testenv.RepoRoot(), k.webhookOnly)
			require.NotEmpty(t, cluster, "no +kubebuilder:rbac markers found in the repository")
			granted, grantedInNamespace := grantedRules(t, objects(t, k))
			if ok, missing := rbacvalidation.Covers(granted, cluster); !ok {
				t.Errorf("cluster-wide RBAC misses rules the code declares: %v", missing)
			}
			if ok, missing := rbacvalidation.Covers(grantedInNamespace, namespaced); !ok {
				t.Errorf("namespaced RBAC misses rules the code declares: %v", missing)
			}
		})
	}
}

// markerRules reads the +kubebuilder:rbac markers of the repository's non-test Go files:
// rules with a namespace= are namespaced, the others cluster-wide. withoutController leaves
// out the controller's package tree.
func markerRules(t *testing.T, root string, withoutController bool) (cluster, namespaced []rbacv1.PolicyRule) {
	t.Helper()
	marker := regexp.MustCompile(`^\s*//\s*\+kubebuilder:rbac:(.*)$`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if withoutController && path == filepath.Join(root, "controller") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(src), "\n") {
			m := marker.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			rule, ns, err := parseRBACMarker(m[1])
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if ns != "" {
				namespaced = append(namespaced, rule)
			} else {
				cluster = append(cluster, rule)
			}
		}
		return nil
	})
	require.NoError(t, err)
	return cluster, namespaced
}

// parseRBACMarker parses the arguments of a +kubebuilder:rbac marker, such as
// groups=apps,resources=deployments;statefulsets,verbs=get;list.
func parseRBACMarker(args string) (rbacv1.PolicyRule, string, error) {
	var rule rbacv1.PolicyRule
	var ns string
	for _, arg := range strings.Split(args, ",") {
		key, value, ok := strings.Cut(arg, "=")
		if !ok {
			return rule, "", fmt.Errorf("marker argument %q is not key=value", arg)
		}
		values := strings.Split(strings.Trim(value, `"`), ";")
		switch key {
		case "groups":
			rule.APIGroups = values
		case "resources":
			rule.Resources = values
		case "verbs":
			rule.Verbs = values
		case "resourceNames":
			rule.ResourceNames = values
		case "urls":
			rule.NonResourceURLs = values
		case "namespace":
			ns = strings.Trim(value, `"`)
		default:
			return rule, "", fmt.Errorf("unknown marker argument %q", key)
		}
	}
	return rule, ns, nil
}

func TestParseRBACMarker(t *testing.T) {
	rule, ns, err := parseRBACMarker(`groups="",resources=pods;services,verbs=get;delete,namespace=x`)
	require.NoError(t, err)
	assert.Equal(t, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods", "services"}, Verbs: []string{"get", "delete"}}, rule)
	assert.Equal(t, "x", ns)
	_, _, err = parseRBACMarker("groups=apps,colour=blue")
	assert.Error(t, err)
}

// assertSameRules asserts that the granted rules cover what the binary needs and nothing
// more, as the API server's RBAC escalation check compares rules.
func assertSameRules(t *testing.T, scope string, want, granted []rbacv1.PolicyRule) {
	t.Helper()
	if ok, missing := rbacvalidation.Covers(granted, want); !ok {
		t.Errorf("%s RBAC misses rules the binary needs: %v", scope, missing)
	}
	if ok, extra := rbacvalidation.Covers(want, granted); !ok {
		t.Errorf("%s RBAC grants more than the binary needs: %v", scope, extra)
	}
}

func assertNoWildcards(t *testing.T, what string, rs []rbacv1.PolicyRule) {
	t.Helper()
	for i, r := range rs {
		for field, values := range map[string][]string{
			"apiGroups": r.APIGroups, "resources": r.Resources, "verbs": r.Verbs,
			"resourceNames": r.ResourceNames, "nonResourceURLs": r.NonResourceURLs,
		} {
			for _, v := range values {
				assert.False(t, strings.Contains(v, "*"), "%s rule %d: wildcard in %s: %q", what, i, field, v)
			}
		}
	}
}

func TestCertManagerOverlay(t *testing.T) {
	objs := objects(t, certManager)
	d, c, flags := workload(t, objs)
	svc := one[*corev1.Service](t, objs, serviceName)

	// The serving certificate: for the Service's DNS names, into the mounted Secret.
	cert := one[*cmapi.Certificate](t, objs, servingCertSecret)
	assert.Equal(t, namespace, cert.Namespace)
	assert.Equal(t, servingCertSecret, cert.Spec.SecretName)
	assert.Subset(t, cert.Spec.DNSNames, []string{
		fmt.Sprintf("%s.%s.svc", svc.Name, svc.Namespace),
		fmt.Sprintf("%s.%s.svc.cluster.local", svc.Name, svc.Namespace),
	})
	assert.False(t, cert.Spec.IsCA)
	assert.Contains(t, cert.Spec.Usages, cmapi.UsageServerAuth)
	assertIssuedInOverlay(t, objs, cert, 0)

	// cainjector copies the CA into both configurations.
	for _, cfg := range []object{
		one[*admissionregistrationv1.MutatingWebhookConfiguration](t, objs, webhookConfigName),
		one[*admissionregistrationv1.ValidatingWebhookConfiguration](t, objs, webhookConfigName),
	} {
		assert.Equal(t, cert.Namespace+"/"+cert.Name, cfg.GetAnnotations()[cmapi.WantInjectAnnotation], "%T", cfg)
	}

	// The binary reads the mounted Secret.
	assert.Equal(t, "files", flags["cert-mode"])
	assert.Equal(t, servingCertDir, flags["cert-dir"])
	assert.Equal(t, "tls.crt", flags["cert-name"])
	assert.Equal(t, "tls.key", flags["key-name"])
	var volume string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == servingCertSecret {
			volume = v.Name
		}
	}
	require.NotEmpty(t, volume, "no volume for Secret %s", servingCertSecret)
	var mounted bool
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			mounted = true
			assert.Equal(t, servingCertDir, m.MountPath)
			assert.True(t, m.ReadOnly)
		}
	}
	assert.True(t, mounted, "volume %s not mounted", volume)
}

// assertIssuedInOverlay follows a Certificate's issuer chain inside the overlay down to a
// self-signed Issuer: every Issuer it needs is installed with it.
func assertIssuedInOverlay(t *testing.T, objs []object, cert *cmapi.Certificate, depth int) {
	t.Helper()
	require.Less(t, depth, 3, "issuer chain too long or circular")
	ref := cert.Spec.IssuerRef
	require.Equal(t, cmapi.IssuerKind, ref.Kind, "certificate %s: a namespaced Issuer, installed with the overlay", cert.Name)
	assert.Contains(t, []string{"", "cert-manager.io"}, ref.Group)
	issuer := one[*cmapi.Issuer](t, objs, ref.Name)
	require.Equal(t, cert.Namespace, issuer.Namespace)
	switch {
	case issuer.Spec.SelfSigned != nil:
	case issuer.Spec.CA != nil:
		var ca *cmapi.Certificate
		for _, c := range all[*cmapi.Certificate](objs) {
			if c.Namespace == issuer.Namespace && c.Spec.SecretName == issuer.Spec.CA.SecretName {
				ca = c
			}
		}
		require.NotNil(t, ca, "no Certificate fills the CA Secret %s of Issuer %s", issuer.Spec.CA.SecretName, issuer.Name)
		assert.True(t, ca.Spec.IsCA, "Certificate %s signs certificates", ca.Name)
		assertIssuedInOverlay(t, objs, ca, depth+1)
	default:
		t.Fatalf("Issuer %s is neither self-signed nor a CA", issuer.Name)
	}
}

func TestSelfSignedOverlay(t *testing.T) {
	objs := objects(t, selfSigned)
	d, c, flags := workload(t, objs)
	assert.Equal(t, "self-signed", flags["cert-mode"])
	assert.Equal(t, caSecretName, flags["ca-secret-name"])
	assert.Empty(t, d.Spec.Template.Spec.Volumes)
	assert.Empty(t, c.VolumeMounts)
	assert.Empty(t, all[*cmapi.Certificate](objs))
	assert.Empty(t, all[*cmapi.Issuer](objs))
	for _, cfg := range []object{
		one[*admissionregistrationv1.MutatingWebhookConfiguration](t, objs, webhookConfigName),
		one[*admissionregistrationv1.ValidatingWebhookConfiguration](t, objs, webhookConfigName),
	} {
		assert.NotContains(t, cfg.GetAnnotations(), cmapi.WantInjectAnnotation, "the binary injects the CA, not cainjector")
	}
}
