package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// The Flink ConfigMap is read as this replica last wrote it: from the cache once it shows that
// version, from what it wrote while the cache shows nothing or a version it wrote before, and
// from the API server when the cache shows a version it never knew.
func TestTheFlinkConfigMapIsReadAsThisReplicaLastWroteIt(t *testing.T) {
	ctx := context.Background()
	fc := builder.MakeAppCluster("wc").Deployment().Obj()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	api := fake.NewClientBuilder().WithScheme(s).Build()
	apiReads := 0
	reader := interceptor.NewClient(api.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			apiReads++
			return c.Get(ctx, key, obj, opts...)
		},
	})
	var cached *corev1.ConfigMap // what the cache shows; nil: not the ConfigMap yet
	cache := interceptor.NewClient(api.(client.WithWatch), interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			if cached == nil {
				return apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, key.Name)
			}
			cached.DeepCopyInto(obj.(*corev1.ConfigMap))
			return nil
		},
	})
	r := &Reconciler{Client: cache, Reader: reader}
	c := &cycle{r: r, fc: fc, st: &fc.Status}
	r.known.Store(c.key(fc.Name), &knownCluster{})

	cm, err := resources.ConfigMap(fc, resources.Deploy{Revision: "wc-r1", JobID: "0123456789abcdef0123456789abcdef"})
	require.NoError(t, err)
	require.NoError(t, api.Create(ctx, cm))
	c.wroteOwned(cm)

	got, err := c.ownConfigMap(ctx)
	require.NoError(t, err)
	assert.Equal(t, cm.ResourceVersion, got.ResourceVersion, "what this replica wrote")
	assert.Zero(t, apiReads, "nothing read from the API server while the cache shows nothing yet")

	// The replica updates it; the cache still shows the version it created.
	created := cm.DeepCopy()
	cm.Data["extra"] = "x"
	require.NoError(t, api.Update(ctx, cm))
	c.wroteOwned(cm)
	cached = created
	got, err = c.ownConfigMap(ctx)
	require.NoError(t, err)
	assert.Zero(t, apiReads, "the cache shows a version this replica wrote before: what it wrote last")
	assert.Equal(t, cm.ResourceVersion, got.ResourceVersion)

	unknown := cm.DeepCopy()
	unknown.ResourceVersion = "someone-else-" + cm.ResourceVersion
	cached = unknown
	got, err = c.ownConfigMap(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, apiReads, "a version this replica never knew: read from the API server")
	assert.Equal(t, cm.ResourceVersion, got.ResourceVersion)

	cached = cm
	apiReads = 0
	got, err = c.ownConfigMap(ctx)
	require.NoError(t, err)
	assert.Zero(t, apiReads, "the cache shows the version written: read from it")
	assert.Equal(t, cm.ResourceVersion, got.ResourceVersion)
}
