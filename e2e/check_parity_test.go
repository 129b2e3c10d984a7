package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/check"
	"github.com/flink-admission/flink-admission/internal/test/paritycases"
)

// warningRecorder keeps the warnings the API server sends, as kubectl prints them.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.warnings
	w.warnings = nil
	sort.Strings(out)
	return out
}

// outcome is a verdict as both sides can state it.
type outcome struct {
	Allowed  bool
	Errors   []string // "field type", sorted
	Messages map[string]string
	Warnings []string
	Spec     map[string]any // the admitted spec, after every mutation (allowed only)
}

// TestCheckAgreesWithTheServer runs the whole parity table through `flink-admission check`
// (package check, as the command runs it) and through the running server on the real API
// server — mutating webhook, CRD rules, validating webhook — and requires the same verdict,
// the same errors (field, type and message), the same warnings and the same mutated object.
func TestCheckAgreesWithTheServer(t *testing.T) {
	ctx := context.Background()
	checker, err := check.New("")
	require.NoError(t, err)
	recorder := &warningRecorder{}
	cfg := rest.CopyConfig(dev.Env.Config)
	cfg.WarningHandler = recorder
	c, err := client.New(cfg, client.Options{Scheme: dev.Server.Manager.GetScheme()})
	require.NoError(t, err)
	etcd, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{dev.Env.Environment.ControlPlane.Etcd.URL.String()},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	require.NoError(t, err)
	defer func() { require.NoError(t, etcd.Close()) }()

	for _, tc := range paritycases.Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			ns := newNamespace(t, nil)
			newObj := tc.New.DeepCopy()
			newObj.Namespace = ns

			var stored *v1beta1.FlinkCluster
			if tc.Old != nil {
				stored = storeOld(t, ctx, c, etcd, tc, ns)
				recorder.take()
			}

			server := admitOnServer(t, ctx, c, recorder, newObj, stored)
			local := admitWithCheck(t, ctx, checker, newObj, stored)

			if diff := cmp.Diff(server, local); diff != "" {
				t.Errorf("the server and check disagree (-server +check):\n%s", diff)
			}
			if server.Allowed != tc.Allowed {
				t.Errorf("the server says allowed=%v, the table %v; errors %v", server.Allowed, tc.Allowed, server.Errors)
			}
		})
	}
}

// storeOld stores the old object of an update: through the server (mutated and validated)
// or, for an object that breaks a rule on its own (a cluster stored before the rule
// existed), straight in etcd in the form the server would have stored.
func storeOld(t *testing.T, ctx context.Context, c client.Client, etcd *clientv3.Client, tc paritycases.Case, ns string) *v1beta1.FlinkCluster {
	t.Helper()
	old := tc.Old.DeepCopy()
	old.Namespace = ns
	if !tc.OldBreaksRules {
		require.NoError(t, c.Create(ctx, old), "creating the old object")
		return old
	}
	checker, err := check.New(ns)
	require.NoError(t, err)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(old)
	require.NoError(t, err)
	res := checker.Run(ctx, []check.Document{{Source: "old", Object: u}}, nil)
	require.Len(t, res, 1)
	mutated := res[0].Object
	meta := mutated["metadata"].(map[string]any)
	meta["uid"] = uuid.NewString()
	meta["creationTimestamp"] = metav1.Now().UTC().Format(time.RFC3339)
	delete(mutated, "status")
	data, err := json.Marshal(mutated)
	require.NoError(t, err)
	key := path.Join("/registry", v1beta1.GroupVersion.Group, "flinkclusters", ns, old.Name)
	_, err = etcd.Put(ctx, key, string(data))
	require.NoError(t, err)
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: old.Name}, old))
	return old
}

func admitOnServer(t *testing.T, ctx context.Context, c client.Client, recorder *warningRecorder, obj, stored *v1beta1.FlinkCluster) outcome {
	t.Helper()
	obj = obj.DeepCopy()
	var err error
	if stored == nil {
		err = c.Create(ctx, obj)
	} else {
		obj.ResourceVersion = stored.ResourceVersion
		obj.UID = stored.UID
		err = c.Update(ctx, obj)
	}
	out := outcome{Warnings: recorder.take(), Messages: map[string]string{}}
	if err == nil {
		out.Allowed = true
		u, convErr := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		require.NoError(t, convErr)
		out.Spec = normalize(t, u["spec"])
		return out
	}
	var status apierrors.APIStatus
	require.True(t, errors.As(err, &status), "not an API status: %v", err)
	details := status.Status().Details
	require.NotNil(t, details, "a denial without causes: %v", err)
	for _, cause := range details.Causes {
		key := cause.Field + " " + string(cause.Type)
		out.Errors = append(out.Errors, key)
		out.Messages[key] = cause.Message
	}
	sort.Strings(out.Errors)
	return out
}

func admitWithCheck(t *testing.T, ctx context.Context, checker *check.Checker, obj, stored *v1beta1.FlinkCluster) outcome {
	t.Helper()
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	var olds []check.Document
	if stored != nil {
		o, err := runtime.DefaultUnstructuredConverter.ToUnstructured(stored)
		require.NoError(t, err)
		olds = []check.Document{{Source: "stored", Object: o}}
	}
	res := checker.Run(ctx, []check.Document{{Source: "new", Object: u}}, olds)
	require.Len(t, res, 1)
	r := res[0]
	out := outcome{Allowed: r.Allowed, Warnings: append([]string(nil), r.Warnings...), Messages: map[string]string{}}
	sort.Strings(out.Warnings)
	if len(out.Warnings) == 0 {
		out.Warnings = nil
	}
	if r.Allowed {
		out.Spec = normalize(t, r.Object["spec"])
		return out
	}
	for _, e := range r.Errors {
		key := e.Field + " " + e.Type
		out.Errors = append(out.Errors, key)
		out.Messages[key] = e.Message
	}
	sort.Strings(out.Errors)
	return out
}

// normalize turns a spec into plain JSON values so that both sides compare alike.
func normalize(t *testing.T, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	out := map[string]any{}
	require.NoError(t, json.Unmarshal(data, &out))
	return out
}
