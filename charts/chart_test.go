package charts

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/deploy"
	"github.com/flink-admission/flink-admission/internal/containerargs"
	"github.com/flink-admission/flink-admission/internal/test/strictyaml"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

const (
	chartDir  = "flink-admission"
	namespace = "flink-admission-system"
	// testedKubernetes is the version the tests' kube-apiserver runs (hack/envtest-binaries.sh):
	// client-side renders assume it, as `helm template --kube-version` does.
	testedKubernetes = "v1.37.2"
)

func kubeVersion(t *testing.T) *common.KubeVersion {
	t.Helper()
	v, err := common.ParseKubeVersion(testedKubernetes)
	require.NoError(t, err)
	return v
}

// overlayCases pair chart values with the kustomize overlay that installs the same objects.
// The overlays name the image flink-admission:latest; the chart is given the same.
var overlayCases = []struct {
	overlay string
	values  string
}{
	{"self-signed", ``},
	{"cert-manager", `certificates: {mode: cert-manager}`},
	{"webhook-only", `controller: {enabled: false}`},
	{"scoped", `controller: {watchNamespaces: [team-b, team-c], clusterSelector: "flink.example.com/controller=flink-admission"}`},
	{"observability", `metrics: {serviceMonitor: {enabled: true}}`},
}

// sameImage makes the chart name the overlays' image.
const sameImage = `image: {repository: flink-admission, tag: latest}`

func values(t *testing.T, docs ...string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, d := range docs {
		var v map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(d), &v))
		out = merge(out, v)
	}
	return out
}

// merge merges b into a, maps recursively.
func merge(a, b map[string]any) map[string]any {
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := a[k].(map[string]any); ok {
				a[k] = merge(am, bm)
				continue
			}
		}
		a[k] = v
	}
	return a
}

func loadChart(t *testing.T) *chartv2.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	require.NoError(t, err)
	return c
}

// lintValues are the configurations the chart is linted, and loaded strictly, with.
var lintValues = []string{``, `certificates: {mode: cert-manager}`, `controller: {enabled: false}`,
	`metrics: {serviceMonitor: {enabled: true}}`, `{certificates: {mode: cert-manager}, metrics: {serviceMonitor: {enabled: true}}}`,
	`controller: {watchNamespaces: [a, b], clusterSelector: "team=x"}`, `replicaCount: 1`}

func TestLint(t *testing.T) {
	for _, vals := range lintValues {
		t.Run(vals, func(t *testing.T) {
			lint := action.NewLint()
			lint.Strict = true
			lint.Namespace = namespace
			lint.KubeVersion = kubeVersion(t)
			res := lint.Run([]string{chartDir}, values(t, vals))
			for _, m := range res.Messages {
				assert.Less(t, m.Severity, support.WarningSev, "%s", m)
			}
			assert.Empty(t, res.Errors)
		})
	}
}

// render is `helm template` with the CRDs: the manifests of a client-side dry-run install.
func render(t *testing.T, vals map[string]any) string {
	t.Helper()
	return renderIn(t, namespace, vals)
}

// renderIn is render into another release namespace.
func renderIn(t *testing.T, ns string, vals map[string]any) string {
	t.Helper()
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = "flink-admission"
	install.Namespace = ns
	install.IncludeCRDs = true
	install.Replace = true
	install.KubeVersion = kubeVersion(t)
	rel, err := install.Run(loadChart(t), vals)
	require.NoError(t, err)
	r, ok := rel.(*releasev1.Release)
	require.True(t, ok, "a %T", rel)
	return r.Manifest
}

// helmLabels are the labels the chart adds and the overlays have not.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"}

// objectsOf decodes a YAML stream into objects by kind/namespace/name, without Helm's labels
// (and without the part-of label, which Helm cannot put on a CRD from crds/).
func objectsOf(t *testing.T, stream string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(stream), 4096)
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		if obj == nil {
			continue
		}
		u := unstructured.Unstructured{Object: obj}
		l := u.GetLabels()
		for _, k := range append(helmLabels, "app.kubernetes.io/part-of") {
			delete(l, k)
		}
		if len(l) == 0 {
			unstructured.RemoveNestedField(obj, "metadata", "labels")
		} else {
			u.SetLabels(l)
		}
		key := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
		require.NotContains(t, out, key, "rendered twice")
		out[key] = obj
	}
}

func overlayYAML(t *testing.T, overlay string) string {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join("..", "deploy", "overlays", overlay))
	require.NoError(t, err)
	y, err := m.AsYaml()
	require.NoError(t, err)
	return string(y)
}

// TestRenderEqualsOverlay: the chart installs, object by object and field by field, what the
// matching overlay installs, but for Helm's labels and the Namespace (Helm installs into an
// existing namespace: --create-namespace).
func TestRenderEqualsOverlay(t *testing.T) {
	for _, c := range overlayCases {
		t.Run(c.overlay, func(t *testing.T) {
			chart := objectsOf(t, render(t, values(t, sameImage, c.values)))
			kust := objectsOf(t, overlayYAML(t, c.overlay))
			delete(kust, "Namespace//"+namespace)
			if diff := cmp.Diff(kust, chart); diff != "" {
				t.Errorf("chart with %q renders differently from deploy/overlays/%s (-overlay +chart):\n%s", c.values, c.overlay, diff)
			}
		})
	}
}

// TestChartCRDIsTheGeneratedOne: crds/ is a copy of deploy/crd, which `make generate` writes.
func TestChartCRDIsTheGeneratedOne(t *testing.T) {
	got, err := os.ReadFile(filepath.Join(chartDir, "crds", "flinkoperator.k8s.io_flinkclusters.yaml"))
	require.NoError(t, err)
	assert.True(t, bytes.Equal(deploy.CRD, got), "charts/flink-admission/crds differs from deploy/crd: run make generate")
}

// TestChartFilesAreTheComponents: files/ holds copies of the observability component's alerts
// and dashboard, which `make generate` writes; the chart's templates read them.
func TestChartFilesAreTheComponents(t *testing.T) {
	for _, f := range []string{"prometheusrule.yaml", "dashboard.json"} {
		want, err := os.ReadFile(filepath.Join("..", "deploy", "components", "observability", f))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(chartDir, "files", f))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "charts/flink-admission/files/%s differs from deploy/components/observability: run make generate", f)
	}
}

// TestChartLoadsStrictly: the chart's own YAML and JSON files, and what its templates render
// for each configuration the tests use, load with a strict parser (a repeated key, which Helm
// and the API server resolve silently to the last, is refused).
func TestChartLoadsStrictly(t *testing.T) {
	var files int
	require.NoError(t, filepath.WalkDir(chartDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(p, filepath.Join(chartDir, "templates")) {
			return err
		}
		switch filepath.Ext(p) {
		case ".yaml", ".json":
			content, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.NoError(t, strictyaml.Check(content), p)
			files++
		}
		return nil
	}))
	assert.GreaterOrEqual(t, files, 5, "Chart.yaml, values.yaml, values.schema.json, crds/ and files/")
	for _, vals := range append(lintValues, `{replicaCount: 1, priorityClassName: "", networkPolicy: {enabled: false}, metrics: {secure: false, serviceMonitor: {enabled: true}}}`) {
		assert.NoError(t, strictyaml.Check([]byte(render(t, values(t, vals)))), "rendered with %s", vals)
	}
}

// TestValues covers the settings no overlay has.
func TestValues(t *testing.T) {
	deployment := func(t *testing.T, vals string) map[string]any {
		objs := objectsOf(t, render(t, values(t, vals)))
		d, ok := objs["Deployment/"+namespace+"/flink-admission"]
		require.True(t, ok)
		return d
	}
	// args are the container's args as the kubelet runs them: $(NAME) of its env expanded.
	args := func(t *testing.T, d map[string]any) []string {
		cs, _, _ := unstructured.NestedSlice(d, "spec", "template", "spec", "containers")
		require.Len(t, cs, 1)
		var c corev1.Container
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(cs[0].(map[string]any), &c))
		return containerargs.Expand(&c, nil)
	}
	container := func(t *testing.T, d map[string]any) map[string]any {
		cs, _, _ := unstructured.NestedSlice(d, "spec", "template", "spec", "containers")
		return cs[0].(map[string]any)
	}

	t.Run("the controller's scope flags only when set", func(t *testing.T) {
		assert.NotContains(t, strings.Join(args(t, deployment(t, ``)), " "), "--watch-namespaces")
		assert.NotContains(t, strings.Join(args(t, deployment(t, ``)), " "), "--cluster-selector")
		a := args(t, deployment(t, `controller: {watchNamespaces: [team-a, team-b], clusterSelector: "flink.example/tier=prod"}`))
		assert.Contains(t, a, "--watch-namespaces=team-a,team-b")
		assert.Contains(t, a, "--cluster-selector=flink.example/tier=prod")
		a = args(t, deployment(t, `controller: {enabled: false, watchNamespaces: [team-a]}`))
		assert.NotContains(t, strings.Join(a, " "), "--watch-namespaces", "no scope without a controller")
	})
	t.Run("the validating webhooks read the controller's cluster selector", func(t *testing.T) {
		for _, c := range []struct{ vals, selector string }{
			{``, ""},
			{`controller: {clusterSelector: "team in (a,b),!legacy,flink.example/tier=prod"}`, "team in (a,b),!legacy,flink.example/tier=prod"},
			{`controller: {enabled: false, clusterSelector: "team=a"}`, ""},
		} {
			objs := objectsOf(t, render(t, values(t, c.vals)))
			_, want, err := deploy.WebhookConfigurations()
			require.NoError(t, err)
			require.NoError(t, deploy.SetClusterSelector(want, c.selector))
			var got admissionregistrationv1.ValidatingWebhookConfiguration
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(objs["ValidatingWebhookConfiguration//flink-admission"], &got))
			require.Len(t, got.Webhooks, len(want.Webhooks))
			for i := range want.Webhooks {
				assert.Equal(t, want.Webhooks[i].MatchConditions, got.Webhooks[i].MatchConditions, "%s: %s", c.vals, want.Webhooks[i].Name)
			}
			if c.selector != "" {
				assert.Contains(t, args(t, deployment(t, c.vals)), "--cluster-selector="+c.selector)
			}
		}
	})
	t.Run("more than one replica shares the fleet; one replica elects a leader", func(t *testing.T) {
		a := args(t, deployment(t, ``))
		assert.Contains(t, a, "--shard-fleet=true", "two replicas by default: each runs its share")
		assert.Contains(t, a, "--leader-elect=false")
		a = args(t, deployment(t, `replicaCount: 1`))
		assert.NotContains(t, strings.Join(a, " "), "--shard-fleet")
		assert.Contains(t, a, "--leader-elect=true")
	})
	t.Run("a Deployment-mode cluster no controller runs: warned by default, denied on request", func(t *testing.T) {
		assert.NotContains(t, strings.Join(args(t, deployment(t, ``)), " "), "--deployment-without-controller", "the binary's default, warn")
		assert.Contains(t, args(t, deployment(t, `deploymentWithoutController: deny`)), "--deployment-without-controller=deny")
	})
	t.Run("the audit: the binary's interval by default, another on request", func(t *testing.T) {
		assert.NotContains(t, strings.Join(args(t, deployment(t, ``)), " "), "--audit-interval", "the binary's default, 10m")
		assert.Contains(t, args(t, deployment(t, `auditInterval: 0s`)), "--audit-interval=0s")
		assert.Contains(t, args(t, deployment(t, `auditInterval: 1h30m`)), "--audit-interval=1h30m")
	})
	t.Run("image by digest", func(t *testing.T) {
		digest := "sha256:" + strings.Repeat("ab", 32)
		c := container(t, deployment(t, `image: {repository: registry.example/fa, tag: v9, digest: "`+digest+`"}`))
		assert.Equal(t, "registry.example/fa@"+digest, c["image"])
		c = container(t, deployment(t, ``))
		assert.Equal(t, "ghcr.io/flink-admission/flink-admission:"+loadChart(t).Metadata.AppVersion, c["image"], "the tag defaults to appVersion")
	})
	t.Run("replicas, resources, priority and placement", func(t *testing.T) {
		d := deployment(t, `{replicaCount: 3, priorityClassName: "", resources: {limits: {memory: 1Gi}}, nodeSelector: {pool: system}, tolerations: [{key: dedicated, operator: Exists}]}`)
		replicas, _, _ := unstructured.NestedFieldNoCopy(d, "spec", "replicas")
		assert.EqualValues(t, 3, replicas)
		_, has, _ := unstructured.NestedString(d, "spec", "template", "spec", "priorityClassName")
		assert.False(t, has, "an empty priorityClassName is left out")
		sel, _, _ := unstructured.NestedStringMap(d, "spec", "template", "spec", "nodeSelector")
		assert.Equal(t, map[string]string{"pool": "system"}, sel)
		tol, _, _ := unstructured.NestedSlice(d, "spec", "template", "spec", "tolerations")
		assert.Len(t, tol, 1)
		mem, _, _ := unstructured.NestedString(container(t, d), "resources", "limits", "memory")
		assert.Equal(t, "1Gi", mem)
	})
	t.Run("priority: the chart's own class, or an existing one", func(t *testing.T) {
		objs := objectsOf(t, render(t, values(t)))
		pc, ok := objs["PriorityClass//flink-admission-critical"]
		require.True(t, ok, "the chart creates its PriorityClass")
		assert.EqualValues(t, 1000000000, pc["value"])
		class, _, _ := unstructured.NestedString(objs["Deployment/"+namespace+"/flink-admission"], "spec", "template", "spec", "priorityClassName")
		assert.Equal(t, "flink-admission-critical", class)

		objs = objectsOf(t, render(t, values(t, `{priorityClassName: system-cluster-critical, priorityClass: {create: false}}`)))
		assert.NotContains(t, objs, "PriorityClass//system-cluster-critical")
		class, _, _ = unstructured.NestedString(objs["Deployment/"+namespace+"/flink-admission"], "spec", "template", "spec", "priorityClassName")
		assert.Equal(t, "system-cluster-critical", class)
	})
	t.Run("deny: creating a system- priority class", func(t *testing.T) {
		install := action.NewInstall(action.NewConfiguration())
		install.DryRunStrategy = action.DryRunClient
		install.ReleaseName, install.Namespace = "flink-admission", namespace
		install.KubeVersion = kubeVersion(t)
		_, err := install.Run(loadChart(t), values(t, `priorityClassName: system-cluster-critical`))
		assert.ErrorContains(t, err, "set priorityClass.create=false")
	})
	t.Run("metrics off: no Service, no port, no ServiceMonitor", func(t *testing.T) {
		objs := objectsOf(t, render(t, values(t, `metrics: {enabled: false, serviceMonitor: {enabled: true}}`)))
		assert.NotContains(t, objs, "Service/"+namespace+"/flink-admission-metrics")
		assert.NotContains(t, objs, "ServiceMonitor/"+namespace+"/flink-admission")
		assert.Contains(t, args(t, objs["Deployment/"+namespace+"/flink-admission"]), "--metrics-bind-address=0")
	})
	t.Run("ServiceMonitor verifies with the mode's CA", func(t *testing.T) {
		for mode, secret := range map[string]string{"self-signed": "flink-admission-ca", "cert-manager": "flink-admission-serving-cert"} {
			objs := objectsOf(t, render(t, values(t, `metrics: {serviceMonitor: {enabled: true}}`, `certificates: {mode: `+mode+`}`)))
			sm, ok := objs["ServiceMonitor/"+namespace+"/flink-admission"]
			require.True(t, ok, mode)
			eps, _, _ := unstructured.NestedSlice(sm, "spec", "endpoints")
			require.Len(t, eps, 1)
			name, _, _ := unstructured.NestedString(eps[0].(map[string]any), "tlsConfig", "ca", "secret", "name")
			assert.Equal(t, secret, name, mode)
		}
	})
	t.Run("one replica: no PodDisruptionBudget to block node drains", func(t *testing.T) {
		objs := objectsOf(t, render(t, values(t, `replicaCount: 1`)))
		assert.Contains(t, objs, "Deployment/"+namespace+"/flink-admission")
		assert.NotContains(t, objs, "PodDisruptionBudget/"+namespace+"/flink-admission")
		pdb, ok := objectsOf(t, render(t, values(t, `replicaCount: 3`)))["PodDisruptionBudget/"+namespace+"/flink-admission"]
		require.True(t, ok, "more than one replica: a PodDisruptionBudget")
		minAvailable, _, _ := unstructured.NestedFieldNoCopy(pdb, "spec", "minAvailable")
		assert.EqualValues(t, 1, minAvailable)
	})
	t.Run("another namespace: nothing names flink-admission-system", func(t *testing.T) {
		for _, vals := range lintValues {
			manifest := renderIn(t, "team-flink", values(t, vals))
			for i, line := range strings.Split(manifest, "\n") {
				assert.NotContains(t, line, namespace, "with %s, line %d", vals, i+1)
			}
		}
	})
	for _, c := range []struct{ name, values, wantErr string }{
		{"deny: an unknown certificate mode", `certificates: {mode: vault}`, "/certificates/mode"},
		{"deny: an unknown top-level key (replicas for replicaCount)", `replicas: 5`, "replicas"},
		{"deny: an unknown nested key", `metrics: {serviceMonitor: {enable: true}}`, "enable"},
		{"deny: an image digest that is not sha256", `image: {digest: latest}`, "digest"},
		{"deny: an audit interval that is not a duration", `auditInterval: hourly`, "auditInterval"},
		{"deny: a cluster selector that would end the match condition's string", `controller: {clusterSelector: 'team="a"'}`, "clusterSelector"},
		{"deny: a PodDisruptionBudget that keeps every replica", `{replicaCount: 2, podDisruptionBudget: {minAvailable: 2}}`, "podDisruptionBudget.minAvailable 2 must be below replicaCount 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			install := action.NewInstall(action.NewConfiguration())
			install.DryRunStrategy = action.DryRunClient
			install.ReleaseName, install.Namespace = "flink-admission", namespace
			install.KubeVersion = kubeVersion(t)
			_, err := install.Run(loadChart(t), values(t, c.values))
			assert.ErrorContains(t, err, c.wantErr)
		})
	}
}

// TestInstallOnAPIServer installs the chart on a real kube-apiserver: first as
// `helm install --dry-run=server` (every object sent with dryRun=All: the API server's
// validation and admission, nothing stored), then for real, then `helm upgrade` to another
// configuration (the controller off: its RBAC is deleted). There is no released chart yet:
// once v0.1.0 is cut, its archive belongs in testdata/ as the version to upgrade from.
func TestInstallOnAPIServer(t *testing.T) {
	env, err := testenv.Start(testenv.Options{WithoutCRD: true})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })
	kubectl := func(args ...string) string {
		out, err := env.Kubectl(args...).CombinedOutput()
		require.NoError(t, err, "kubectl %v: %s", args, out)
		return string(out)
	}
	kubectl("create", "namespace", namespace)

	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &env.Kubeconfig
	ns := namespace
	flags.Namespace = &ns
	cfg := action.NewConfiguration()
	require.NoError(t, cfg.Init(flags, namespace, "secret"))
	ctx := context.Background()

	dry := action.NewInstall(cfg)
	dry.ReleaseName, dry.Namespace = "flink-admission", namespace
	dry.DryRunStrategy = action.DryRunServer
	// Nothing runs pods here (no kubelet): wait for hooks only, of which the chart has none.
	dry.WaitStrategy = kube.HookOnlyStrategy
	_, err = dry.RunWithContext(ctx, loadChart(t), values(t))
	require.NoError(t, err, "helm install --dry-run=server")
	assert.Contains(t, kubectl("get", "deployments", "-n", namespace), "No resources found", "a dry run stores nothing")

	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = "flink-admission", namespace
	install.WaitStrategy = kube.HookOnlyStrategy
	_, err = install.RunWithContext(ctx, loadChart(t), values(t))
	require.NoError(t, err, "helm install")
	kubectl("get", "-n", namespace, "deployment/flink-admission", "service/flink-admission-webhook", "service/flink-admission-metrics",
		"networkpolicy/flink-admission", "role/flink-admission-leader-election")
	kubectl("get", "clusterrole/flink-admission-controller", "crd/flinkclusters.flinkoperator.k8s.io",
		"mutatingwebhookconfiguration/flink-admission", "validatingwebhookconfiguration/flink-admission")

	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = namespace
	upgrade.WaitStrategy = kube.HookOnlyStrategy
	_, err = upgrade.RunWithContext(ctx, "flink-admission", loadChart(t), values(t, `controller: {enabled: false}`))
	require.NoError(t, err, "helm upgrade")
	out, _ := env.Kubectl("get", "clusterrole/flink-admission-controller").CombinedOutput()
	assert.Contains(t, string(out), "NotFound", "the upgrade to webhook-only removes the controller's RBAC")
	args := kubectl("get", "-n", namespace, "deployment/flink-admission", "-o", "jsonpath={.spec.template.spec.containers[0].args}")
	assert.Contains(t, args, "--enable-controller=false")
}

// TestRenderingWithoutACluster: `helm template` without a cluster assumes Kubernetes v1.20,
// which the chart's kubeVersion refuses; the `helm template` commands the chart's README and
// docs/install.md give CI users pass --kube-version, and render.
func TestRenderingWithoutACluster(t *testing.T) {
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName, install.Namespace = "flink-admission", namespace
	_, err := install.Run(loadChart(t), values(t))
	require.ErrorContains(t, err, "kubeVersion", "Helm's offline default is refused: the docs must say --kube-version")

	for _, doc := range []string{filepath.Join(chartDir, "README.md"), filepath.Join("..", "docs", "install.md")} {
		content, err := os.ReadFile(doc)
		require.NoError(t, err)
		var commands int
		for _, line := range strings.Split(string(content), "\n") {
			cmd, ok := strings.CutPrefix(line, "$ helm template ")
			if !ok {
				continue
			}
			commands++
			var version string
			args := strings.Fields(cmd)
			for i, a := range args {
				if v, ok := strings.CutPrefix(a, "--kube-version="); ok {
					version = v
				} else if a == "--kube-version" && i+1 < len(args) {
					version = args[i+1]
				}
			}
			require.NotEmpty(t, version, "%s: %q has no --kube-version", doc, line)
			v, err := common.ParseKubeVersion(version)
			require.NoError(t, err, "%s: %q", doc, line)
			install.KubeVersion = v
			_, err = install.Run(loadChart(t), values(t))
			assert.NoError(t, err, "%s: %q", doc, line)
		}
		assert.Positive(t, commands, "%s shows a helm template command for CI", doc)
	}
}

// TestNotesSayWhatHelmLeavesAlone: after an install, the notes say that `helm upgrade` leaves
// the CRD as it is, and what `helm uninstall` leaves behind (the CRD, the clusters'
// finalizers).
func TestNotesSayWhatHelmLeavesAlone(t *testing.T) {
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName, install.Namespace = "flink-admission", namespace
	install.KubeVersion = kubeVersion(t)
	rel, err := install.Run(loadChart(t), values(t))
	require.NoError(t, err)
	r, ok := rel.(*releasev1.Release)
	require.True(t, ok, "a %T", rel)
	require.NotNil(t, r.Info)
	for _, want := range []string{"`helm upgrade` never updates the CRD", "kubectl apply --server-side --force-conflicts -f flink-admission/crds/",
		"Helm keeps the CRD", "finalizer"} {
		assert.Contains(t, r.Info.Notes, want)
	}
}
