package deploy_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/deploy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden from the rendered kustomizations")

// kustomization is a directory under deploy/ that users can build, and the golden file that
// holds its rendering.
type kustomization struct {
	name string // golden file name, testdata/golden/<name>.yaml
	dir  string // relative to deploy/
	// webhookOnly says the install runs no controller (--enable-controller=false).
	webhookOnly bool
}

var (
	base        = kustomization{name: "base", dir: "base"}
	certManager = kustomization{name: "cert-manager", dir: filepath.Join("overlays", "cert-manager")}
	selfSigned  = kustomization{name: "self-signed", dir: filepath.Join("overlays", "self-signed")}
	// webhookOnly is the self-signed install without the controller and its RBAC.
	webhookOnly = kustomization{name: "webhook-only", dir: filepath.Join("overlays", "webhook-only"), webhookOnly: true}
	// admissionPolicy is the webhook-less install: the CRD and a MutatingAdmissionPolicy.
	admissionPolicy = kustomization{name: "admission-policy", dir: filepath.Join("overlays", "admission-policy")}
	// scoped is the self-signed install whose controller runs the FlinkClusters of its
	// namespaces and selector only, under Roles (scoped_test.go checks its RBAC).
	scoped = kustomization{name: "scoped", dir: filepath.Join("overlays", "scoped")}

	// kustomizations are the webhook installs (and their base).
	kustomizations = []kustomization{base, certManager, selfSigned, webhookOnly}
	overlays       = []kustomization{certManager, selfSigned, webhookOnly}
	// everything is every directory users can build whose kinds the tests decode.
	everything = append(append([]kustomization(nil), kustomizations...), admissionPolicy, scoped)
	// observability adds the Prometheus Operator's kinds (deploy/components/observability),
	// which only the golden files and docs/alerts_test.go read.
	observability = kustomization{name: "observability", dir: filepath.Join("overlays", "observability")}
	goldens       = append(append([]kustomization(nil), everything...), observability)
)

// goldenHeader opens every golden file. The CRD is left out of the golden files: it is
// generated from api/v1beta1 (its own staleness check is `make verify-generated`), and
// TestRenderedCRDIsTheGeneratedOne proves that the kustomizations carry it unchanged.
const goldenHeader = "# Rendered by TestGolden (go test ./deploy -run TestGolden -update); do not edit.\n" +
	"# The FlinkCluster CRD (deploy/crd) is rendered too but not kept here.\n"

// render builds a kustomization with kustomize's Go API, as `kubectl apply -k` does. Each
// kustomization is built once per test binary; callers must not modify the result.
func render(t *testing.T, k kustomization) resmap.ResMap {
	t.Helper()
	b := built(k)
	b.renderOnce.Do(func() {
		b.m, b.renderErr = krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), k.dir)
	})
	require.NoError(t, b.renderErr, "rendering %s", k.dir)
	return b.m
}

// objects returns a kustomization's rendered objects, decoded once per test binary (the
// strict decoding of the CRD takes a second); callers must not modify them.
func objects(t *testing.T, k kustomization) []object {
	t.Helper()
	m := render(t, k)
	b := built(k)
	b.decodeOnce.Do(func() { b.objs, b.decodeErr = decodeAll(m) })
	require.NoError(t, b.decodeErr, "decoding %s", k.dir)
	return b.objs
}

type build struct {
	renderOnce, decodeOnce sync.Once
	m                      resmap.ResMap
	objs                   []object
	renderErr, decodeErr   error
}

var builds sync.Map // kustomization dir -> *build

func built(k kustomization) *build {
	b, _ := builds.LoadOrStore(k.dir, &build{})
	return b.(*build)
}

// goldenYAML is a rendering without the CRD, as the golden files hold it.
func goldenYAML(t *testing.T, m resmap.ResMap) []byte {
	t.Helper()
	var out bytes.Buffer
	out.WriteString(goldenHeader)
	for _, r := range m.Resources() {
		if r.GetKind() == "CustomResourceDefinition" {
			continue
		}
		y, err := r.AsYAML()
		require.NoError(t, err)
		out.WriteString("---\n")
		out.Write(y)
	}
	return out.Bytes()
}

func TestGolden(t *testing.T) {
	for _, k := range goldens {
		t.Run(k.name, func(t *testing.T) {
			got := goldenYAML(t, render(t, k))
			golden := filepath.Join("testdata", "golden", k.name+".yaml")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, got, 0o644))
				return
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "missing golden file: go test ./deploy -run TestGolden -update")
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s renders differently from %s (-golden +rendered); when intended, "+
					"run go test ./deploy -run TestGolden -update and review the diff:\n%s", k.dir, golden, diff)
			}
		})
	}
}

// TestRenderedCRDIsTheGeneratedOne: no transformer (images, namespace, labels) may touch the
// CRD's schema; only the common label is added.
func TestRenderedCRDIsTheGeneratedOne(t *testing.T) {
	var generated apiextensionsv1.CustomResourceDefinition
	require.NoError(t, yaml.UnmarshalStrict(deploy.CRD, &generated))
	for _, k := range everything {
		t.Run(k.name, func(t *testing.T) {
			crds := all[*apiextensionsv1.CustomResourceDefinition](objects(t, k))
			require.Len(t, crds, 1)
			got := crds[0].DeepCopy()
			require.Equal(t, map[string]string{"app.kubernetes.io/part-of": "flink-admission"}, got.Labels)
			got.Labels = nil
			if diff := cmp.Diff(&generated, got); diff != "" {
				t.Errorf("rendered CRD differs from deploy.CRD (-generated +rendered):\n%s", diff)
			}
		})
	}
}

// scheme knows every kind the kustomizations render.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, cmapi.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// object is a typed Kubernetes object.
type object interface {
	runtime.Object
	GetName() string
	GetNamespace() string
	GetAnnotations() map[string]string
}

// decodeAll decodes every rendered resource into its typed Go object, strictly: an unknown or
// misspelt field (which the API server would drop or reject) is an error.
func decodeAll(m resmap.ResMap) ([]object, error) {
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	var objs []object
	for _, r := range m.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		obj, _, err := decoder.Decode(y, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", r.CurId(), err)
		}
		o, ok := obj.(object)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", r.CurId())
		}
		objs = append(objs, o)
	}
	return objs, nil
}

// all returns the objects of type T.
func all[T object](objs []object) []T {
	var out []T
	for _, o := range objs {
		if typed, ok := o.(T); ok {
			out = append(out, typed)
		}
	}
	return out
}

// one returns the object of type T with the given name, failing the test when there is not
// exactly one.
func one[T object](t *testing.T, objs []object, name string) T {
	t.Helper()
	var found []T
	for _, o := range all[T](objs) {
		if o.GetName() == name {
			found = append(found, o)
		}
	}
	var zero T
	require.Len(t, found, 1, "want exactly one %T named %q", zero, name)
	return found[0]
}

func TestDecodeAllRejectsUnknownFields(t *testing.T) {
	// The strict decoder is what makes the structural tests catch typos: prove it does.
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	_, _, err := decoder.Decode([]byte("apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {selectr: {a: b}}\n"), nil, nil)
	require.ErrorContains(t, err, "selectr")
}

// TestImageOverride: what the base's header tells users to write to use their own image.
func TestImageOverride(t *testing.T) {
	for _, k := range overlays {
		t.Run(k.name, func(t *testing.T) {
			abs, err := filepath.Abs(k.dir)
			require.NoError(t, err)
			dir := t.TempDir()
			rel, err := filepath.Rel(dir, abs) // kustomize refuses absolute paths
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(
				"resources:\n- "+rel+"\n"+
					"images:\n- name: flink-admission\n  newName: registry.example.com/flink-admission\n  newTag: v1.2.3\n"), 0o644))
			m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
			require.NoError(t, err)
			objs, err := decodeAll(m)
			require.NoError(t, err)
			d := one[*appsv1.Deployment](t, objs, deploymentName)
			require.Len(t, d.Spec.Template.Spec.Containers, 1)
			assert.Equal(t, "registry.example.com/flink-admission:v1.2.3", d.Spec.Template.Spec.Containers[0].Image)
		})
	}
}
