package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/controller/shard"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// versionedReader answers every Get with its cluster at its version, and counts the Gets.
type versionedReader struct {
	fc   *v1beta1.FlinkCluster
	gets int
}

func (v *versionedReader) at(rv string, mutate func(*v1beta1.FlinkCluster)) {
	fc := builder.MakeAppCluster("wc").Obj()
	fc.ResourceVersion = rv
	if mutate != nil {
		mutate(fc)
	}
	v.fc = fc
}

func (v *versionedReader) client(t *testing.T) client.Client {
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, v1beta1.AddToScheme(s))
	return interceptor.NewClient(fake.NewClientBuilder().WithScheme(s).Build(), interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			v.gets++
			v.fc.DeepCopyInto(obj.(*v1beta1.FlinkCluster))
			return nil
		},
	})
}

func recorded(fc *v1beta1.FlinkCluster) {
	fc.Finalizers = []string{Finalizer}
	fc.Status.State = v1beta1.ClusterStateRunning
}

func TestClusterReads(t *testing.T) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "default", Name: "wc"}
	setup := func(t *testing.T) (*Reconciler, *versionedReader, *versionedReader) {
		cache, api := &versionedReader{}, &versionedReader{}
		return &Reconciler{Client: cache.client(t), Reader: api.client(t)}, cache, api
	}
	// knowing is a replica that read the cluster at version 12 from the API server under
	// tenure, its cache at cached.
	knowing := func(t *testing.T, cached string, tenure uint64) (*Reconciler, *versionedReader, *versionedReader) {
		r, cache, api := setup(t)
		api.at("12", recorded)
		cache.at(cached, recorded)
		_, _, err := r.readCluster(ctx, key, tenure)
		require.NoError(t, err)
		return r, cache, api
	}

	t.Run("a cluster nothing was recorded on is read from the cache", func(t *testing.T) {
		r, cache, api := setup(t)
		cache.at("10", nil)
		fc, fresh, err := r.readCluster(ctx, key, 0)
		require.NoError(t, err)
		assert.False(t, fresh)
		assert.Equal(t, "10", fc.ResourceVersion)
		assert.Zero(t, api.gets)
	})

	t.Run("a recorded cluster this replica knows nothing of is read from the API server", func(t *testing.T) {
		r, cache, api := setup(t)
		cache.at("10", recorded)
		api.at("12", recorded)
		fc, fresh, err := r.readCluster(ctx, key, 0)
		require.NoError(t, err)
		assert.True(t, fresh, "another replica, or this one before a restart, may have written what the cache does not show yet")
		assert.Equal(t, "12", fc.ResourceVersion)
	})

	t.Run("a cache that shows this replica's last write is read", func(t *testing.T) {
		r, cache, api := knowing(t, "10", 0)
		written := api.fc.DeepCopy()
		written.ResourceVersion, written.Status.State = "13", v1beta1.ClusterStateUpdating
		r.wrote(written)

		cache.at("13", recorded)
		fc, fresh, err := r.readCluster(ctx, key, 0)
		require.NoError(t, err)
		assert.False(t, fresh)
		assert.Equal(t, "13", fc.ResourceVersion)
		assert.Equal(t, 1, api.gets, "no read of the API server once the cache shows the write")
	})

	t.Run("a cache behind this replica's own writes is replaced by the last of them", func(t *testing.T) {
		r, cache, api := knowing(t, "10", 0)
		for _, rv := range []string{"13", "14"} {
			written := api.fc.DeepCopy()
			written.ResourceVersion, written.Status.State = rv, v1beta1.ClusterStateUpdating
			r.wrote(written)
		}
		for _, behind := range []string{"12", "13"} {
			cache.at(behind, recorded)
			fc, fresh, err := r.readCluster(ctx, key, 0)
			require.NoError(t, err)
			assert.False(t, fresh)
			assert.Equal(t, "14", fc.ResourceVersion, "the cache at %s is behind this replica's write", behind)
			assert.Equal(t, v1beta1.ClusterStateUpdating, fc.Status.State)
		}
		assert.Equal(t, 1, api.gets)
	})

	t.Run("a version this replica does not know is read from the API server", func(t *testing.T) {
		r, cache, api := knowing(t, "12", 0)
		// A user's edit, or one that raced this replica's write: it may be older or newer
		// than what this replica knows.
		cache.at("11", recorded)
		api.at("15", recorded)
		fc, fresh, err := r.readCluster(ctx, key, 0)
		require.NoError(t, err)
		assert.True(t, fresh)
		assert.Equal(t, "15", fc.ResourceVersion)
	})

	t.Run("a new shard tenure forgets what this replica knew", func(t *testing.T) {
		r, _, api := knowing(t, "12", 1)
		// Another member owned the cluster meanwhile and wrote; the cache still shows what
		// this one knew.
		api.at("20", recorded)
		fc, fresh, err := r.readCluster(ctx, key, 2)
		require.NoError(t, err)
		assert.True(t, fresh)
		assert.Equal(t, "20", fc.ResourceVersion)
	})

	t.Run("a failed reconcile makes the next read fresh", func(t *testing.T) {
		r, _, _ := knowing(t, "12", 0)
		r.distrust(key, 0)
		_, fresh, err := r.readCluster(ctx, key, 0)
		require.NoError(t, err)
		assert.True(t, fresh, "a write whose answer was lost may have landed")
	})

	t.Run("a cluster being deleted is read from the API server", func(t *testing.T) {
		r, cache, api := setup(t)
		cache.at("10", func(fc *v1beta1.FlinkCluster) {
			recorded(fc)
			now := metav1.Now()
			fc.DeletionTimestamp = &now
		})
		api.at("11", recorded)
		_, fresh, err := r.readCluster(ctx, key, 0)
		require.NoError(t, err)
		assert.True(t, fresh)
	})
}

// The caches may not show a JobManager pod created just before: its absence is confirmed from
// the API server before the next JobManager is created, and the reconcile looks again.
func TestAbsenceSeenInTheCachesIsConfirmedFromTheAPIServer(t *testing.T) {
	ctx := context.Background()
	fc := updatingCluster(t)
	r, cl := reconcilerWith(t, fc, func() error { return nil })
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wc-jobmanager-old", Namespace: "default",
		Labels: resources.SelectorLabels("wc", resources.ComponentJobManager)}}
	require.NoError(t, cl.Create(ctx, pod))

	c := r.newCycle(fc)
	ok, err := c.confirmAbsent(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "the API server shows a pod the cache did not")
	assert.Equal(t, lookAgainNow, c.out.requeue)
	assert.Empty(t, c.obs.pods, "the observation stays the one the reconcile decided from")
	assert.False(t, c.fresh)

	require.NoError(t, cl.Get(ctx, client.ObjectKeyFromObject(pod), pod))
	c.obs.pods = []corev1.Pod{*pod}
	ok, err = c.confirmAbsent(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "the caches showed everything the API server does")

	require.NoError(t, cl.Delete(ctx, pod))
	ok, err = c.confirmAbsent(ctx)
	require.NoError(t, err)
	assert.True(t, ok, "a pod gone since the caches showed it confirms the absence")

	// A cluster's first deploy: no status, nothing of this replica's own. A pod of the
	// cluster's name that the cache does not show (an earlier cluster's, a user's) still
	// holds it back.
	first := builder.MakeAppCluster("wc").Deployment().Obj()
	c = r.newCycle(first)
	require.NoError(t, cl.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "wc-jobmanager-new", Namespace: "default",
		Labels: resources.SelectorLabels("wc", resources.ComponentJobManager)}}))
	ok, err = c.confirmAbsent(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "a cluster's first deploy confirms the absence from the API server too")
}

func TestOwnedLater(t *testing.T) {
	members := []string{"a", "b", "c"}
	var ofA string
	for i := 0; ofA == ""; i++ {
		if k := fmt.Sprintf("ns/c%d", i); shard.Owner(k, members) == "a" {
			ofA = k
		}
	}
	for _, tc := range []struct {
		name string
		view shard.View
		want bool
	}{
		{"its own cluster while its right lapsed: it looks again", shard.View{Self: "a", Members: members}, true},
		{"its own cluster while it acts: Begin said no for another reason", shard.View{Self: "a", Members: members, Acting: true}, false},
		{"another member's cluster: its gain is told by a view change", shard.View{Self: "b", Members: members}, false},
		{"not a member yet: its join is a view change", shard.View{Self: "a", Members: []string{"b", "c"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ownedLater(tc.view, ofA))
		})
	}
}

// Within a deploy in progress a cached HA view without the job's graph is taken as it is
// (main() has not submitted it yet), but not when it is the evidence that the job's HA data
// is gone (jobHAGone), on which a job fails for good: that is read from the API server.
func TestHAGoneEvidenceInADeployInProgressIsReadFromTheAPIServer(t *testing.T) {
	ctx := context.Background()
	const jobID = "0123456789abcdef0123456789abcdef"
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	started := t0.Add(time.Minute)
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	fc := builder.MakeAppCluster("wc").Deployment().Obj()
	fc.Status.Components.Job = &v1beta1.JobStatus{ID: jobID, State: v1beta1.JobStateDeploying}
	clusterID := resources.HAClusterID(fc)
	clusterCM := func(graph bool) *corev1.ConfigMap {
		cm := flinkha.NewConfigMap(fc.Namespace, flinkha.ClusterConfigMapName(clusterID), clusterID)
		cm.CreationTimestamp = metav1.NewTime(started.Add(5 * time.Second))
		cm.Data = map[string]string{}
		if graph {
			cm.Data[flinkha.JobGraphKey(jobID)] = "graph"
		}
		return cm
	}
	pod := builder.SetRunning(builder.Pod("wc", "wc-jobmanager-1", "wc-r1", t0), started)
	observe := func(t *testing.T, cached ...client.Object) (c *cycle, apiLists int) {
		api := interceptor.NewClient(fake.NewClientBuilder().WithScheme(s).WithObjects(pod.DeepCopy(), clusterCM(true)).Build(), interceptor.Funcs{
			List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if _, ok := list.(*corev1.ConfigMapList); ok {
					apiLists++
				}
				return cl.List(ctx, list, opts...)
			},
		})
		r := &Reconciler{
			Client:   fake.NewClientBuilder().WithScheme(s).WithObjects(pod.DeepCopy()).Build(),
			Reader:   api,
			HAReader: fake.NewClientBuilder().WithScheme(s).WithObjects(cached...).Build(),
		}
		f := fc.DeepCopy()
		c = &cycle{r: r, fc: f, st: &f.Status, now: started.Add(time.Minute), mode: v1beta1.JobManagerDeploymentTypeDeployment,
			obs: observed{jmDeployment: &appsv1.Deployment{}, wl: &state.Workload{Revision: "wc-r1", JobID: jobID}}}
		require.True(t, c.deployInProgress())
		require.NoError(t, c.observePodsAndHA(ctx))
		return c, apiLists
	}

	c, lists := observe(t, clusterCM(false))
	assert.Equal(t, 1, lists, "a cached view that says the job's HA data is gone is read again")
	assert.True(t, c.obs.ha.jobGraphStored(jobID), "the API server's view is the one decided on")
	assert.Empty(t, c.haMetadataGone())

	_, lists = observe(t)
	assert.Zero(t, lists, "no HA ConfigMap cached yet (the JobManager does not lead yet): nothing is gone")
}
