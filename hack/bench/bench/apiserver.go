package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/deploy"
	"github.com/flink-admission/flink-admission/hack/bench/loadgen"
	"github.com/flink-admission/flink-admission/internal/devenv"
	"github.com/flink-admission/flink-admission/internal/test/benchdata"
	"github.com/flink-admission/flink-admission/webhook"
)

// typicalReview is decoded once: the scenarios make thousands of clusters from it.
var typicalReview = sync.OnceValues(func() (benchdata.Review, error) { return benchdata.Find("typical-mutate-create") })

// TypicalCluster returns the typical FlinkCluster (a production-like object, ~9 KB) named
// name in namespace ns: the object of the typical mutate CREATE review of package benchdata,
// as the API server passes it to the webhooks (the user's object with the CRD's schema
// defaults, which the API server would apply anyway).
func TypicalCluster(name, ns string) (*v1beta1.FlinkCluster, error) {
	r, err := typicalReview()
	if err != nil {
		return nil, err
	}
	fc := r.Object.DeepCopy()
	fc.APIVersion, fc.Kind = v1beta1.GroupVersion.String(), "FlinkCluster"
	fc.Name, fc.Namespace = name, ns
	return fc, nil
}

// FullCRD returns the embedded FlinkCluster CRD, CEL rules included.
func FullCRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(deploy.CRD, crd); err != nil {
		return nil, fmt.Errorf("decoding the embedded CRD: %w", err)
	}
	return crd, nil
}

// PlainCRD returns the embedded CRD with every x-kubernetes-validations rule removed (and
// how many lists of rules were removed): the same schema, without CEL.
func PlainCRD() (*apiextensionsv1.CustomResourceDefinition, int, error) {
	var doc any
	if err := yaml.Unmarshal(deploy.CRD, &doc); err != nil {
		return nil, 0, fmt.Errorf("decoding the embedded CRD: %w", err)
	}
	removed := stripKey(doc, "x-kubernetes-validations")
	raw, err := yaml.Marshal(doc)
	if err != nil {
		return nil, 0, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		return nil, 0, err
	}
	return crd, removed, nil
}

// stripKey deletes key from every map in v, recursively, and returns how many it deleted.
func stripKey(v any, key string) int {
	n := 0
	switch t := v.(type) {
	case map[string]any:
		if _, ok := t[key]; ok {
			delete(t, key)
			n++
		}
		for _, c := range t {
			n += stripKey(c, key)
		}
	case []any:
		for _, c := range t {
			n += stripKey(c, key)
		}
	}
	return n
}

// APIServerOptions configure RunAPIServer.
type APIServerOptions struct {
	// Config reaches the API server as an admin; the CRD must not be installed yet.
	Config *rest.Config
	// Objects is the number of FlinkClusters created, then updated, in each scenario;
	// Warmup objects go first and are not measured.
	Objects, Warmup int
	// WebhookURL is the running server's base URL; CAPEM the CA its certificate chains to.
	WebhookURL string
	CAPEM      []byte
	// RepoRoot holds deploy/base, whose webhook configurations are installed for (c).
	RepoRoot string
	// Progress receives what the run is doing.
	Progress io.Writer
	// MetricsDir, when set, receives the API server's and the webhook server's /metrics
	// after (a) and after (b) and (c) (apiserver-metrics-a.txt, apiserver-metrics-bc.txt,
	// serve-metrics-….txt), to see where the time of a write goes.
	MetricsDir string
	// ServeMetrics reads the webhook server's /metrics (ServeProcess.Metrics).
	ServeMetrics func(ctx context.Context) ([]byte, error)
	// ProfileSeconds, when positive, records CPU profiles of that length at the start of
	// the measured writes of (b) and (c) (run together) into MetricsDir: the API server's
	// (apiserver-cpu-bc.pprof) and, with ServeProfile, the webhook server's
	// (serve-cpu-bc.pprof).
	ProfileSeconds int
	// ServeProfile reads one of the webhook server's profiles (ServeProcess.Profile).
	ServeProfile func(ctx context.Context, name string) ([]byte, error)
	// Counter reads the webhook server's request counters (ServeProcess.Counter), to see that
	// the API server calls both webhooks before (c) is measured.
	Counter func(ctx context.Context, name string, labels map[string]string) (float64, error)
}

// Namespaces of the scenarios (each gets its own, so that the stored objects do not mix).
func scenarioNamespace(s string) string { return "bench-" + s }

// OpUpdateJobRunning is the operation of the updates of clusters whose job runs: the same
// change as "update", with the upgrade plan in the validating webhook's answer.
const OpUpdateJobRunning = "update, job running"

// benchJobID is the job ID the status of every benchmark cluster records.
const benchJobID = "4f3c0d5e9a8b7c6d5e4f3a2b1c0d9e8f"

// warmupLabel marks the unmeasured objects, so that they can be removed before the
// controller's memory is read with exactly Objects clusters.
const warmupLabel = "bench.flink-admission/warmup"

// RunAPIServer creates, then updates, Objects FlinkClusters one request at a time in each
// scenario, one per install a cluster admin can choose: (a) the CRD without CEL rules, (b)
// with them (the CRD rules alone), (c) with them and both webhooks, (d) with them and the
// webhook-less admission policy. (b), (c) and (d), whose ratios are the webhooks' and the
// policy's costs, run together, their writes interleaved (each scenario in its own
// namespace: the webhooks' namespace selector leaves out (b) and (d), the policy's binding
// selects (d) alone); (a) needs the CRD without rules and runs first.
func RunAPIServer(ctx context.Context, o APIServerOptions) (*APIServerResult, error) {
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	cfg := rest.CopyConfig(o.Config)
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit: it would be what we measure
	// The upgrade plan of each update of a running job is a warning: not one log line each.
	cfg.WarningHandler = rest.NoWarnings{}
	scheme := runtime.NewScheme()
	if err := v1beta1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	for _, s := range []string{ScenarioPlain, ScenarioCEL, ScenarioWebhooks, ScenarioPolicy} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scenarioNamespace(s)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}

	res := &APIServerResult{Objects: o.Objects}
	// measure runs the scenarios' writes interleaved (one scenario's create, then the
	// other's, and so on), so that they share the machine's load of the moment, the size of
	// etcd and the API server's heap: measured one after the other, the later one would
	// also pay for everything the earlier ones stored, and for the load of that minute.
	measure := func(scenarios ...string) error {
		var nss []string
		for _, s := range scenarios {
			fmt.Fprintf(progress, "api server (%s) %s: %d creates then %d updates\n", s, ScenarioDescriptions[s], o.Objects, o.Objects)
			nss = append(nss, scenarioNamespace(s))
		}
		if len(scenarios) > 1 {
			fmt.Fprintf(progress, "  (%s interleaved)\n", strings.Join(scenarios, ", "))
		}
		var profiles sync.WaitGroup
		profileErrs := make(chan error, 2)
		profile := func(file string, get func(context.Context) ([]byte, error)) {
			profiles.Go(func() {
				raw, err := get(ctx)
				if err == nil {
					err = os.WriteFile(filepath.Join(o.MetricsDir, file), raw, 0o644)
				}
				if err != nil {
					profileErrs <- fmt.Errorf("profiling: %s: %w", file, err)
				}
			})
		}
		name := strings.Join(scenarios, "")
		if o.ProfileSeconds > 0 && o.MetricsDir != "" && !slices.Equal(scenarios, []string{ScenarioPlain}) {
			secs := strconv.Itoa(o.ProfileSeconds)
			profile("apiserver-cpu-"+name+".pprof", func(ctx context.Context) ([]byte, error) {
				return apiServerCPUProfile(ctx, cs.CoreV1().RESTClient(), o.ProfileSeconds)
			})
			if slices.Contains(scenarios, ScenarioWebhooks) && o.ServeProfile != nil {
				profile("serve-cpu-"+name+".pprof", func(ctx context.Context) ([]byte, error) {
					return o.ServeProfile(ctx, "profile?seconds="+secs)
				})
			}
		}
		var servedBefore []byte
		if o.MetricsDir != "" && o.ServeMetrics != nil && slices.Contains(scenarios, ScenarioWebhooks) {
			raw, err := o.ServeMetrics(ctx)
			if err != nil {
				return fmt.Errorf("reading the webhook server's metrics: %w", err)
			}
			servedBefore = raw
		}
		byNamespace, err := createThenUpdate(ctx, c, nss, o.Objects, o.Warmup)
		profiles.Wait()
		close(profileErrs)
		for perr := range profileErrs {
			fmt.Fprintln(progress, perr)
		}
		if err != nil {
			return fmt.Errorf("scenarios (%s): %w", strings.Join(scenarios, ", "), err)
		}
		for i, s := range scenarios {
			ops := byNamespace[i]
			for j := range ops {
				ops[j].Scenario = s
				fmt.Fprintf(progress, "  (%s) %s: p50 %.2f ms, p99 %.2f ms\n", s, ops[j].Operation, ops[j].P50Ms, ops[j].P99Ms)
			}
			res.Ops = append(res.Ops, ops...)
		}
		if o.MetricsDir != "" {
			raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
			if err != nil {
				return fmt.Errorf("reading the API server's metrics: %w", err)
			}
			if err := os.WriteFile(filepath.Join(o.MetricsDir, "apiserver-metrics-"+name+".txt"), raw, 0o644); err != nil {
				return err
			}
			if o.ServeMetrics != nil {
				served, err := o.ServeMetrics(ctx)
				if err != nil {
					return fmt.Errorf("reading the webhook server's metrics: %w", err)
				}
				if err := os.WriteFile(filepath.Join(o.MetricsDir, "serve-metrics-"+name+".txt"), served, 0o644); err != nil {
					return err
				}
				if slices.Contains(scenarios, ScenarioWebhooks) {
					if res.WebhookCalls, err = ReadWebhookCalls(raw, servedBefore, served, o.WebhookURL); err != nil {
						fmt.Fprintf(progress, "  where the webhooks' time goes: %v\n", err)
					}
				}
			}
		}
		return nil
	}

	// (a) The CRD without CEL: a name over the rules' length limit is admitted.
	plain, _, err := PlainCRD()
	if err != nil {
		return nil, err
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("installing the CRD without CEL rules: %w", err)
	}
	if err := waitFor(ctx, "the CRD without CEL rules to be served", func() error { return probeCEL(ctx, c, false) }); err != nil {
		return nil, err
	}
	if err := measure(ScenarioPlain); err != nil {
		return res, err
	}

	// (b) The same CRD with its CEL rules: the long name is denied.
	full, err := FullCRD()
	if err != nil {
		return res, err
	}
	current, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, full.Name, metav1.GetOptions{})
	if err != nil {
		return res, err
	}
	current.Spec = full.Spec
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, current, metav1.UpdateOptions{}); err != nil {
		return res, fmt.Errorf("installing the CEL rules: %w", err)
	}
	if err := waitFor(ctx, "the CEL rules to be enforced", func() error { return probeCEL(ctx, c, true) }); err != nil {
		return res, err
	}
	// (c) Both webhooks, as deploy/base configures them, pointed at the running server; their
	// namespace selector also leaves out (b)'s and (d)'s namespaces, so that all three run
	// together.
	if err := installWebhooks(ctx, cs, o.WebhookURL, o.CAPEM, scenarioNamespace(ScenarioCEL), scenarioNamespace(ScenarioPolicy)); err != nil {
		return res, err
	}
	// (d) The admission-policy overlay's MutatingAdmissionPolicy, bound to (d)'s namespace.
	if err := installAdmissionPolicy(ctx, c, scenarioNamespace(ScenarioPolicy)); err != nil {
		return res, err
	}
	if err := waitFor(ctx, "the admission policy to mutate", func() error {
		return probePolicy(ctx, c, scenarioNamespace(ScenarioPolicy), true)
	}); err != nil {
		return res, err
	}
	if err := probePolicy(ctx, c, scenarioNamespace(ScenarioCEL), false); err != nil {
		return res, err
	}
	if err := waitFor(ctx, "the API server to call both webhooks", func() error {
		return probeWebhooks(ctx, c, o.Counter, scenarioNamespace(ScenarioWebhooks), true)
	}); err != nil {
		return res, err
	}
	if err := probeWebhooks(ctx, c, o.Counter, scenarioNamespace(ScenarioCEL), false); err != nil {
		return res, err
	}
	if err := measure(ScenarioCEL, ScenarioWebhooks, ScenarioPolicy); err != nil {
		return res, err
	}
	res.Ratios = apiServerRatios(res.Ops)
	return res, nil
}

// createThenUpdate creates n typical clusters in each of the namespaces one request at a
// time, then updates each one (a flinkProperties value changed, as in the shared validate
// UPDATE review), then updates each one again once its status says that its job runs
// (OpUpdateJobRunning: the validating webhook's answer then carries the upgrade plan), and
// returns the latencies of each operation by namespace (in the order of namespaces). The namespaces take turns, the first one alternating, so that none is
// systematically measured right after another's write. warmup clusters are created and
// updated first, unmeasured.
func createThenUpdate(ctx context.Context, c client.Client, namespaces []string, n, warmup int) ([][]APIServerOp, error) {
	k := len(namespaces)
	run := func(prefix string, count int, labels map[string]string) (creates, updates, running [][]time.Duration, err error) {
		creates, updates, running = make([][]time.Duration, k), make([][]time.Duration, k), make([][]time.Duration, k)
		created := make([][]*v1beta1.FlinkCluster, k)
		turn := func(i, j int) int { return (i + j) % k } // the namespace of the j-th write of round i
		for i := range count {
			for j := range k {
				ns := turn(i, j)
				fc, err := TypicalCluster(fmt.Sprintf("%s-%04d", prefix, i), namespaces[ns])
				if err != nil {
					return nil, nil, nil, err
				}
				fc.Labels = labels
				t0 := time.Now()
				if err := c.Create(ctx, fc); err != nil {
					return nil, nil, nil, fmt.Errorf("creating %s/%s: %w", fc.Namespace, fc.Name, err)
				}
				creates[ns] = append(creates[ns], time.Since(t0))
				created[ns] = append(created[ns], fc)
			}
		}
		for i := range count {
			for j := range k {
				ns := turn(i, j)
				fc := created[ns][i]
				fc.Spec.FlinkProperties["execution.checkpointing.interval"] = "120s"
				t0 := time.Now()
				if err := c.Update(ctx, fc); err != nil {
					return nil, nil, nil, fmt.Errorf("updating %s/%s: %w", fc.Namespace, fc.Name, err)
				}
				updates[ns] = append(updates[ns], time.Since(t0))
			}
		}
		// The job runs, as the controller records it (unmeasured: no webhook sees the status
		// subresource).
		for i := range count {
			for j := range k {
				fc := created[turn(i, j)][i]
				fc.Status.State = v1beta1.ClusterStateRunning
				fc.Status.Components.Job = &v1beta1.JobStatus{ID: benchJobID, State: v1beta1.JobStateRunning, FlinkVersion: fc.Spec.FlinkVersion}
				if err := c.Status().Update(ctx, fc); err != nil {
					return nil, nil, nil, fmt.Errorf("recording the job of %s/%s as running: %w", fc.Namespace, fc.Name, err)
				}
			}
		}
		for i := range count {
			for j := range k {
				ns := turn(i, j)
				fc := created[ns][i]
				fc.Spec.FlinkProperties["execution.checkpointing.interval"] = "180s"
				t0 := time.Now()
				if err := c.Update(ctx, fc); err != nil {
					return nil, nil, nil, fmt.Errorf("updating %s/%s, its job running: %w", fc.Namespace, fc.Name, err)
				}
				running[ns] = append(running[ns], time.Since(t0))
			}
		}
		return creates, updates, running, nil
	}
	if warmup > 0 {
		if _, _, _, err := run("warmup", warmup, map[string]string{warmupLabel: "true"}); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	creates, updates, running, err := run("fc", n, nil)
	if err != nil {
		return nil, err
	}
	out := make([][]APIServerOp, k)
	for i := range k {
		out[i] = []APIServerOp{latencyOp("create", creates[i]), latencyOp("update", updates[i]), latencyOp(OpUpdateJobRunning, running[i])}
	}
	return out, nil
}

func latencyOp(op string, d []time.Duration) APIServerOp {
	slices.Sort(d)
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	out := APIServerOp{Operation: op, Count: len(d), P50Ms: ms(loadgen.Percentile(d, 50)), P99Ms: ms(loadgen.Percentile(d, 99))}
	if len(d) > 0 {
		out.MeanMs = ms(sum / time.Duration(len(d)))
	}
	return out
}

// apiServerRatios divides scenario (c)'s and (d)'s latencies by (a)'s and (b)'s, and (b)'s
// by (a)'s, for each operation.
func apiServerRatios(ops []APIServerOp) []Ratio {
	find := func(s, op string) *APIServerOp {
		for i := range ops {
			if ops[i].Scenario == s && ops[i].Operation == op {
				return &ops[i]
			}
		}
		return nil
	}
	var out []Ratio
	for _, op := range []string{"create", "update", OpUpdateJobRunning} {
		for _, pair := range [][2]string{{ScenarioWebhooks, ScenarioPlain}, {ScenarioWebhooks, ScenarioCEL}, {ScenarioCEL, ScenarioPlain},
			{ScenarioPolicy, ScenarioPlain}, {ScenarioPolicy, ScenarioCEL}} {
			num, den := find(pair[0], op), find(pair[1], op)
			if num == nil || den == nil || den.P50Ms == 0 || den.P99Ms == 0 {
				continue
			}
			out = append(out, Ratio{Operation: op, Of: pair[0] + "/" + pair[1], P50: num.P50Ms / den.P50Ms, P99: num.P99Ms / den.P99Ms})
		}
	}
	return out
}

// probeCEL checks whether the API server enforces the CEL rules (wantEnforced) or not, with a
// dry-run create of a cluster whose name is over the rules' length limit (a CEL-only rule).
func probeCEL(ctx context.Context, c client.Client, wantEnforced bool) error {
	fc, err := TypicalCluster("bench-probe-a-name-longer-than-the-forty-eight-characters-the-rules-allow", scenarioNamespace(ScenarioPlain))
	if err != nil {
		return err
	}
	err = c.Create(ctx, fc, client.DryRunAll)
	switch {
	case wantEnforced && apierrors.IsInvalid(err), !wantEnforced && err == nil:
		return nil
	case err != nil && !apierrors.IsInvalid(err):
		return err // not served yet
	case wantEnforced:
		return errors.New("a name over the CEL length limit is still admitted")
	default:
		return fmt.Errorf("a name over the CEL length limit is denied without CEL rules: %w", err)
	}
}

// probeWebhooks makes a dry-run create in ns and checks that both webhooks answered it
// (want) or that neither did: the API server loads webhook configurations asynchronously and
// admits without them until then.
func probeWebhooks(ctx context.Context, c client.Client, counter func(context.Context, string, map[string]string) (float64, error), ns string, want bool) error {
	count := func() (float64, float64, error) {
		m, err := counter(ctx, "controller_runtime_webhook_requests_total", map[string]string{"webhook": webhook.MutatePath, "code": "200"})
		if err != nil {
			return 0, 0, err
		}
		v, err := counter(ctx, "controller_runtime_webhook_requests_total", map[string]string{"webhook": webhook.ValidatePath, "code": "200"})
		return m, v, err
	}
	m0, v0, err := count()
	if err != nil {
		return err
	}
	fc, err := TypicalCluster("bench-probe", ns)
	if err != nil {
		return err
	}
	if err := c.Create(ctx, fc, client.DryRunAll); err != nil {
		return err
	}
	m1, v1, err := count()
	if err != nil {
		return err
	}
	switch {
	case want && (m1 <= m0 || v1 <= v0):
		return fmt.Errorf("a dry-run create in %s did not reach both webhooks yet", ns)
	case !want && (m1 != m0 || v1 != v0):
		return fmt.Errorf("a dry-run create in %s, which the webhooks' namespace selector leaves out, reached them", ns)
	}
	return nil
}

// installAdmissionPolicy creates deploy/overlays/admission-policy's
// MutatingAdmissionPolicy and its binding, the binding restricted to the namespace ns.
func installAdmissionPolicy(ctx context.Context, c client.Client, ns string) error {
	raw, err := fs.ReadFile(deploy.Files(), "overlays/admission-policy/mutatingadmissionpolicy.yaml")
	if err != nil {
		return err
	}
	for doc := range strings.SplitSeq(string(raw), "\n---\n") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			return fmt.Errorf("reading the admission policy: %w", err)
		}
		if obj.GetKind() == "MutatingAdmissionPolicyBinding" {
			selector := map[string]any{"matchLabels": map[string]any{corev1.LabelMetadataName: ns}}
			if err := unstructured.SetNestedMap(obj.Object, selector, "spec", "matchResources", "namespaceSelector"); err != nil {
				return err
			}
		}
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("installing the admission policy's %s: %w", obj.GetKind(), err)
		}
	}
	return nil
}

// probePolicy makes a dry-run create of the Deployment-mode sample in ns and checks that the
// admission policy set its shutdown default (want) or did not: the API server loads
// policies asynchronously.
func probePolicy(ctx context.Context, c client.Client, ns string, want bool) error {
	raw, err := deploy.Sample("deployment-mode.yaml")
	if err != nil {
		return err
	}
	fc := &v1beta1.FlinkCluster{}
	if err := yaml.UnmarshalStrict(raw, fc); err != nil {
		return fmt.Errorf("reading the Deployment-mode sample: %w", err)
	}
	fc.Name, fc.Namespace = "bench-probe-policy", ns
	if err := c.Create(ctx, fc, client.DryRunAll); err != nil {
		return err
	}
	_, got := fc.Spec.FlinkProperties["execution.shutdown-on-application-finish"]
	switch {
	case want && !got:
		return fmt.Errorf("a dry-run create in %s did not get the admission policy's defaults yet", ns)
	case !want && got:
		return fmt.Errorf("a dry-run create in %s, which the admission policy's binding leaves out, got its defaults", ns)
	}
	return nil
}

// installWebhooks creates deploy/base's two webhook configurations, pointed at baseURL and
// trusting caPEM, with the namespaces exclude added to those their namespace selector leaves
// out.
func installWebhooks(ctx context.Context, cs kubernetes.Interface, baseURL string, caPEM []byte, exclude ...string) error {
	mutating, validating, err := devenv.WebhookConfigurations(baseURL)
	if err != nil {
		return err
	}
	excludeFrom := func(sel *metav1.LabelSelector) error {
		for i := range sel.MatchExpressions {
			if e := &sel.MatchExpressions[i]; e.Key == corev1.LabelMetadataName && e.Operator == metav1.LabelSelectorOpNotIn {
				e.Values = append(e.Values, exclude...)
				return nil
			}
		}
		return fmt.Errorf("the webhooks' namespace selector has no %s NotIn expression to add %v to", corev1.LabelMetadataName, exclude)
	}
	for i := range mutating.Webhooks {
		mutating.Webhooks[i].ClientConfig.CABundle = caPEM
		if err := excludeFrom(mutating.Webhooks[i].NamespaceSelector); err != nil {
			return err
		}
	}
	for i := range validating.Webhooks {
		validating.Webhooks[i].ClientConfig.CABundle = caPEM
		if err := excludeFrom(validating.Webhooks[i].NamespaceSelector); err != nil {
			return err
		}
	}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the MutatingWebhookConfiguration: %w", err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, validating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the ValidatingWebhookConfiguration: %w", err)
	}
	return nil
}

// waitFor polls check every 200 ms until it returns nil, for at most two minutes.
func waitFor(ctx context.Context, what string, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, err)
		case <-tick.C:
		}
	}
}
