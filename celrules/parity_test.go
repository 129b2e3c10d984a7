package celrules_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/celrules"
	"github.com/flink-admission/flink-admission/internal/test/paritycases"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
	"github.com/flink-admission/flink-admission/policy"
)

// The API server is started on first use, so that the in-process tests of this package run
// without it, and stopped once by TestMain.
var (
	envOnce sync.Once
	env     *testenv.Env
	envErr  error
)

func TestMain(m *testing.M) {
	// The API server's warnings (ratcheted rule violations) are expected here.
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the API server:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// apiServer returns a client of the shared API server, with only the CRD installed.
func apiServer(t *testing.T) client.Client {
	t.Helper()
	envOnce.Do(func() { env, envErr = testenv.Start(testenv.Options{}) })
	require.NoError(t, envErr, "starting kube-apiserver and etcd (KUBEBUILDER_ASSETS)")
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, v1beta1.AddToScheme(scheme))
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}

// verdict is one evaluator's answer.
type verdict struct {
	errs []string // "path: detail"
	// paths of the errors
	paths []string
}

func (v verdict) allowed() bool { return len(v.paths) == 0 }

func fromErrorList(errs field.ErrorList) verdict {
	var v verdict
	for _, e := range errs {
		v.paths = append(v.paths, e.Field)
		v.errs = append(v.errs, e.Field+": "+e.Detail)
	}
	return v
}

// evalPolicy is the webhook: its defaulting, then its validation. The stored object went
// through the mutating webhook too when it was created, so it is defaulted as well.
func evalPolicy(c paritycases.Case) verdict {
	obj := c.New.DeepCopy()
	policy.Default(obj)
	if c.Old == nil {
		errs, _ := policy.ValidateCreate(obj)
		return fromErrorList(errs)
	}
	old := c.Old.DeepCopy()
	policy.Default(old)
	errs, _ := policy.ValidateUpdate(old, obj)
	return fromErrorList(errs)
}

// evalCEL is package celrules: the API server's defaulting, then the CRD's rules.
func evalCEL(t *testing.T, v *celrules.Validator, c paritycases.Case) verdict {
	t.Helper()
	toU := func(fc *v1beta1.FlinkCluster) map[string]any {
		if fc == nil {
			return nil
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fc.DeepCopy())
		require.NoError(t, err)
		v.Default(u)
		return u
	}
	return fromErrorList(v.Validate(context.Background(), toU(c.New), toU(c.Old)))
}

// fromAPIError turns the API server's answer into a verdict: nil is allowed, an Invalid
// status is a denial with its causes, and anything else fails the test.
func fromAPIError(t *testing.T, what string, err error) verdict {
	t.Helper()
	if err == nil {
		return verdict{}
	}
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("%s: not a validation error: %v", what, err)
	}
	var v verdict
	for _, cause := range status.Status().Details.Causes {
		v.paths = append(v.paths, cause.Field)
		v.errs = append(v.errs, cause.Field+": "+cause.Message)
	}
	if len(v.paths) == 0 {
		t.Fatalf("%s: a denial without causes: %v", what, err)
	}
	return v
}

// TestParity runs every shared case through the policy, celrules and a real API server
// (only the CRD installed, no webhooks) and requires the same verdict from all three and,
// for a denial, the expected field paths in each one's errors.
func TestParity(t *testing.T) {
	cases := paritycases.Cases()
	require.GreaterOrEqual(t, len(cases), 40, "the parity table is too small to cover every rule")
	v, err := celrules.New()
	require.NoError(t, err)
	c := apiServer(t)
	ctx := context.Background()

	// Every case gets its own namespace, so that the objects (all named after their case's
	// builder, e.g. "app") do not collide, and the policy judges the same namespace.
	for i := range cases {
		ns := fmt.Sprintf("parity-%02d", i)
		for _, fc := range []*v1beta1.FlinkCluster{cases[i].Old, cases[i].New} {
			if fc != nil {
				fc.Namespace = ns
			}
		}
		require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}

	start := time.Now()
	stored := storeOldObjects(t, c, v, cases)
	t.Logf("API server: old objects stored in %v", time.Since(start).Round(time.Millisecond))
	apiVerdicts := make([]verdict, len(cases))
	for i, tc := range cases {
		apiVerdicts[i] = admitOnAPIServer(t, c, tc, stored[i])
	}
	t.Logf("API server: %d cases in %v", len(cases), time.Since(start).Round(time.Millisecond))

	rules, err := v.Rules()
	require.NoError(t, err)
	denials := make([]int, len(rules)) // parity cases each rule denies in celrules
	for i, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			require.Equal(t, tc.Allowed, strings.HasPrefix(tc.Name, "allow:"), "the case name says allow or deny")
			pol, cel, api := evalPolicy(tc), evalCEL(t, v, tc), apiVerdicts[i]
			for _, e := range cel.errs {
				r, err := celrules.RuleDenying(rules, strings.SplitN(e, ": ", 2)[1], tc.Old != nil)
				require.NoError(t, err)
				denials[r]++
			}

			crdAllowed, crdPaths := tc.Allowed, tc.Paths
			if tc.CRDPaths != nil {
				crdPaths = tc.CRDPaths
			}
			check := func(who string, got verdict, wantAllowed bool, wantPaths []string) {
				t.Helper()
				if got.allowed() != wantAllowed {
					t.Errorf("%s: allowed=%v, want %v; errors: %q", who, got.allowed(), wantAllowed, got.errs)
					return
				}
				for _, p := range wantPaths {
					if !wantAllowed && !slices.Contains(got.paths, p) {
						t.Errorf("%s: denied without an error on %s; errors: %q", who, p, got.errs)
					}
				}
			}
			check("policy", pol, tc.Allowed, tc.Paths)
			check("celrules", cel, crdAllowed, crdPaths)
			check("API server", api, crdAllowed, crdPaths)
			// The in-process CEL must say what the API server's CEL says, error for error;
			// the API server may add its schema errors (enum, maximum), which celrules
			// leaves out.
			require.ElementsMatch(t, cel.errs, celErrorsOf(api, rules), "celrules and the API server's CEL give different errors")
		})
	}

	t.Run("every rule denies a parity case", func(t *testing.T) {
		var lines []string
		for i, r := range rules {
			n := denials[i]
			where := r.Path + r.FieldPath
			if where == "" {
				where = "<root>"
			}
			lines = append(lines, fmt.Sprintf("%3d  %-64s  %.50s", n, where, r.Rule))
			if n == 0 {
				t.Errorf("no parity case is denied by the rule at %q %s: %s", r.Path, r.FieldPath, r.Rule)
			}
		}
		sort.Strings(lines)
		t.Logf("denials per rule:\n%s", strings.Join(lines, "\n"))
	})
}

// celErrorsOf keeps the API server's errors that come from the CRD's rules (their message
// is a rule's message), in celrules' "path: message" form.
func celErrorsOf(api verdict, rules []celrules.Rule) []string {
	var out []string
	for i, e := range api.errs {
		for _, r := range rules {
			if strings.HasSuffix(e, ": "+r.Message) {
				out = append(out, api.paths[i]+": "+r.Message)
				break
			}
		}
	}
	return out
}

// storeOldObjects creates the old object of every update case and returns them as stored.
//
// An old object that breaks a create rule of the CRD (OldBreaksRules) stands for a cluster
// stored before the rule existed, which the API server with the rule cannot create. It is
// written straight into etcd, where an older CRD would have left it, and read back through
// the API server, which defaults it as it does every stored object. (Serving the CRD
// without its rules for a while would do too, but each switch makes the API server rebuild
// the CRD's storage and OpenAPI, which takes seconds to tens of seconds on a busy machine.)
//
// The flag itself is checked: such an old object must be denied on create by the CRD's
// rules, and every other one is created through the API server, so it must be accepted.
func storeOldObjects(t *testing.T, c client.Client, v *celrules.Validator, cases []paritycases.Case) []*v1beta1.FlinkCluster {
	t.Helper()
	ctx := context.Background()
	etcd, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{env.Environment.ControlPlane.Etcd.URL.String()},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, etcd.Close()) }()

	stored := make([]*v1beta1.FlinkCluster, len(cases))
	for i, tc := range cases {
		if tc.Old == nil {
			require.False(t, tc.OldBreaksRules, "%s: OldBreaksRules on a create", tc.Name)
			continue
		}
		createErrs := evalCEL(t, v, paritycases.Case{New: tc.Old})
		require.Equal(t, tc.OldBreaksRules, !createErrs.allowed(),
			"%s: OldBreaksRules is %v but the CRD's rules give %q on creating Old", tc.Name, tc.OldBreaksRules, createErrs.errs)
		old := tc.Old.DeepCopy()
		if !tc.OldBreaksRules {
			require.NoError(t, c.Create(ctx, old), "%s: creating the old object", tc.Name)
			stored[i] = old
			continue
		}
		putInEtcd(t, etcd, old)
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(old), old), "%s: reading the old object written to etcd", tc.Name)
		stored[i] = old
	}
	return stored
}

// putInEtcd writes fc where the API server keeps custom resources (the default
// --etcd-prefix, which envtest keeps), as JSON, the way the API server would have stored
// it: with a uid and a creation time, and without status, which a create ignores.
func putInEtcd(t *testing.T, etcd *clientv3.Client, fc *v1beta1.FlinkCluster) {
	t.Helper()
	fc = fc.DeepCopy()
	fc.UID = types.UID(uuid.NewString())
	fc.CreationTimestamp = metav1.Now()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fc)
	require.NoError(t, err)
	delete(u, "status")
	data, err := json.Marshal(u)
	require.NoError(t, err)
	key := path.Join("/registry", v1beta1.GroupVersion.Group, "flinkclusters", fc.Namespace, fc.Name)
	_, err = etcd.Put(context.Background(), key, string(data))
	require.NoError(t, err, "writing %s", key)
}

// admitOnAPIServer creates the case's new object, or updates the stored old object to it,
// and returns the API server's verdict.
func admitOnAPIServer(t *testing.T, c client.Client, tc paritycases.Case, stored *v1beta1.FlinkCluster) verdict {
	t.Helper()
	ctx := context.Background()
	obj := tc.New.DeepCopy()
	if tc.Old == nil {
		return fromAPIError(t, tc.Name+": create", c.Create(ctx, obj))
	}
	require.NotNil(t, stored, "%s: the old object was not stored", tc.Name)
	obj.ResourceVersion = stored.ResourceVersion
	return fromAPIError(t, tc.Name+": update", c.Update(ctx, obj))
}
