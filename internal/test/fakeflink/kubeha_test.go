package fakeflink_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
	"github.com/flink-admission/flink-admission/internal/test/testenv"
)

// TestKubeHA runs leadership, recovery and cleanup with the HA ConfigMaps in a real API
// server, and checks them there as the controller will read them.
func TestKubeHA(t *testing.T) {
	env, err := testenv.Start(testenv.Options{WithoutCRD: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	k8s, err := client.New(env.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	ctx := context.Background()
	ha := &fakeflink.KubeHA{Client: k8s, Namespace: "default"}
	c := newCluster(t, fakeflink.Options{HA: ha})

	a := c.Start(fakeflink.Config{Name: "jm-a", Properties: haProps()})
	b := c.Start(fakeflink.Config{Name: "jm-b", Properties: haProps()})
	require.True(t, a.Leads())
	a.CompleteCheckpoint(jobID)

	cm := &corev1.ConfigMap{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: "default", Name: flinkha.ClusterConfigMapName(clusterID)}, cm))
	assert.True(t, flinkha.IsHAConfigMap(cm, clusterID), "Flink's labels: %v", cm.Labels)
	l, ok := flinkha.Leader(cm)
	require.True(t, ok)
	assert.Equal(t, a.URL(), l.Address)
	assert.Equal(t, []string{jobID}, flinkha.JobGraphs(cm))
	list := &corev1.ConfigMapList{}
	require.NoError(t, k8s.List(ctx, list, client.InNamespace("default"), client.MatchingLabels(flinkha.Labels(clusterID))))
	assert.Len(t, list.Items, 2, "the cluster's and the job's ConfigMaps")

	a.Kill()
	c.Advance(15 * time.Second)
	require.True(t, b.Leads())
	assert.Equal(t, "file:/checkpoints/"+jobID+"/chk-1", b.RestoredFrom(jobID))
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm))
	l, ok = flinkha.Leader(cm)
	require.True(t, ok)
	assert.Equal(t, b.URL(), l.Address)

	require.NoError(t, restClient(t, c.URL()).CancelJob(ctx, jobID))
	assert.Equal(t, flinkclient.JobStateCanceled, b.JobState(jobID))
	require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(cm), cm))
	assert.Empty(t, flinkha.JobGraphs(cm), "a terminated job's graph is removed")

	b.Exit()
	require.NoError(t, k8s.List(ctx, list, client.InNamespace("default"), client.MatchingLabels(flinkha.Labels(clusterID))))
	assert.Empty(t, list.Items, "the application's end deletes the HA ConfigMaps")
}

// TestKubeHAPutReplacesWhatWasRead: a write of what was read is one request, as Flink's read
// and replace is; a write over a version someone else changed meanwhile still lands.
func TestKubeHAPutReplacesWhatWasRead(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	var calls []string
	k8s := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).Build(), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			calls = append(calls, "get")
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			calls = append(calls, "create")
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			calls = append(calls, "update")
			return c.Update(ctx, obj, opts...)
		},
	})
	ha := &fakeflink.KubeHA{Client: k8s, Namespace: "default"}
	name := flinkha.ClusterConfigMapName(clusterID)

	require.NoError(t, ha.Put(ctx, flinkha.NewConfigMap("", name, clusterID)))
	assert.Equal(t, []string{"create"}, calls, "a new ConfigMap: one create")

	cm, err := ha.Get(ctx, name)
	require.NoError(t, err)
	calls = nil
	cm.Data = map[string]string{"k": "ours"}
	require.NoError(t, ha.Put(ctx, cm))
	assert.Equal(t, []string{"update"}, calls, "what was read: one update")

	stale, err := ha.Get(ctx, name)
	require.NoError(t, err)
	other := stale.DeepCopy()
	other.Data = map[string]string{"k": "someone else's"}
	require.NoError(t, k8s.Update(ctx, other))
	calls = nil
	stale.Data = map[string]string{"k": "ours again"}
	require.NoError(t, ha.Put(ctx, stale))
	assert.Equal(t, []string{"update", "get", "update"}, calls, "a conflict: read again and written over")
	got, err := ha.Get(ctx, name)
	require.NoError(t, err)
	assert.Equal(t, "ours again", got.Data["k"])
}
