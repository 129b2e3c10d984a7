package scopetest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/policy"
)

// waitBound bounds every wait for the controller: reaching it fails the test; nothing
// asserts how long a step took.
const waitBound = 2 * time.Minute

// clusterSeq makes cluster names unique within the test binary: the garbage collector
// removes a deleted cluster's objects only some time later, and a test run again (-count)
// must not meet them under its clusters' names.
var clusterSeq atomic.Int32

// makeCluster returns an Application cluster named name-<n>, with the controller's selector
// label when labelled.
func makeCluster(name, ns string, labelled bool) *builder.FlinkClusterWrapper {
	w := builder.MakeFlinkCluster(fmt.Sprintf("%s-%d", name, clusterSeq.Add(1)), ns)
	if labelled {
		w.Label(selectorLabel, selectorValue)
	}
	return w
}

// create stores a cluster as the mutating webhook would (defaulted).
func create(t *testing.T, w *builder.FlinkClusterWrapper) *v1beta1.FlinkCluster {
	t.Helper()
	fc := w.Obj()
	policy.Default(fc)
	require.NoError(t, k8s.Create(context.Background(), fc))
	t.Cleanup(func() { removeCluster(t, fc) })
	return fc
}

// removeCluster deletes a cluster and, since a cluster may leave a test outside the scope
// with the controller's finalizer, removes the finalizer as docs/install.md tells a user to.
func removeCluster(t *testing.T, fc *v1beta1.FlinkCluster) {
	ctx := context.Background()
	if err := k8s.Delete(ctx, fc); apierrors.IsNotFound(err) {
		return
	}
	cur := &v1beta1.FlinkCluster{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(fc), cur); err != nil {
		return
	}
	if controllerutil.RemoveFinalizer(cur, controller.Finalizer) {
		_ = k8s.Update(ctx, cur)
	}
}

func get(t *testing.T, fc *v1beta1.FlinkCluster) *v1beta1.FlinkCluster {
	t.Helper()
	cur := &v1beta1.FlinkCluster{}
	require.NoError(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(fc), cur))
	return cur
}

// eventually waits until cond holds, within waitBound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, waitBound, 50*time.Millisecond, "waiting for %s", what)
}

func exists(obj client.Object, ns, name string) bool {
	return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj) == nil
}

// jobManagerCreated waits until the controller created the cluster's JobManager Job: once it
// has, with one worker, every reconcile started before this one's has finished.
func jobManagerCreated(t *testing.T, fc *v1beta1.FlinkCluster) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{}
	eventually(t, "the JobManager Job of "+fc.Namespace+"/"+fc.Name, func() bool {
		return exists(job, fc.Namespace, resources.JobManagerName(fc.Name))
	})
	return job
}

// assertUntouched: the controller wrote nothing for the cluster — no finalizer, no status,
// no object of its names, no Event about it.
func assertUntouched(t *testing.T, fc *v1beta1.FlinkCluster) {
	t.Helper()
	cur := get(t, fc)
	assert.Empty(t, cur.Finalizers, "%s/%s: no finalizer", fc.Namespace, fc.Name)
	assert.Empty(t, cur.Status.Conditions, "%s/%s: no condition, not even Managed", fc.Namespace, fc.Name)
	assert.Empty(t, cur.Status.Revision.CurrentRevision, "%s/%s: no status", fc.Namespace, fc.Name)
	for _, o := range []struct {
		obj  client.Object
		name string
	}{
		{&batchv1.Job{}, resources.JobManagerName(fc.Name)},
		{&corev1.Service{}, resources.JobManagerName(fc.Name)},
		{&corev1.ConfigMap{}, resources.ConfigMapName(fc.Name)},
		{&appsv1.StatefulSet{}, resources.TaskManagerName(fc.Name)},
	} {
		assert.False(t, exists(o.obj, fc.Namespace, o.name), "%s/%s: no %T %s", fc.Namespace, fc.Name, o.obj, o.name)
	}
	assert.Empty(t, eventsAbout(t, fc), "%s/%s: no Event", fc.Namespace, fc.Name)
}

func eventsAbout(t *testing.T, fc *v1beta1.FlinkCluster) []string {
	t.Helper()
	list := &eventsv1.EventList{}
	require.NoError(t, k8s.List(context.Background(), list, client.InNamespace(fc.Namespace)))
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == v1beta1.Kind && e.Regarding.Name == fc.Name {
			out = append(out, e.Reason+": "+e.Note)
		}
	}
	return out
}

// TestClustersOutsideTheScopeGetNothing: a cluster outside --watch-namespaces or
// --cluster-selector gets nothing, whatever its mode; inside, an Application cluster is run
// and a session cluster is told Managed=False. The clusters outside are created first: once
// the controller has handled the ones inside, it has had every chance to touch them.
func TestClustersOutsideTheScopeGetNothing(t *testing.T) {
	outside := []*v1beta1.FlinkCluster{
		create(t, makeCluster("ns-outside", "team-a", true)),
		create(t, makeCluster("label-outside", "team-b", false)),
		create(t, makeCluster("session-ns-outside", "team-a", true).SessionCluster()),
		create(t, makeCluster("session-label-outside", "team-c", false).SessionCluster()),
		create(t, makeCluster("label-other-value", "team-c", false).Label(selectorLabel, "flink-operator")),
	}
	session := create(t, makeCluster("session-inside", "team-b", true).SessionCluster())
	app := create(t, makeCluster("app-inside", "team-c", true))

	job := jobManagerCreated(t, app)
	assert.True(t, metav1.IsControlledBy(job, get(t, app)), "the JobManager Job is owned by its cluster")
	eventually(t, "Managed=True and the finalizer on the Application cluster inside", func() bool {
		cur := get(t, app)
		return meta.IsStatusConditionTrue(cur.Status.Conditions, controller.ConditionManaged) &&
			controllerutil.ContainsFinalizer(cur, controller.Finalizer)
	})
	eventually(t, "Managed=False on the session cluster inside", func() bool {
		c := meta.FindStatusCondition(get(t, session).Status.Conditions, controller.ConditionManaged)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "--cluster-selector")
	})
	eventually(t, "the NotManaged Event of the session cluster inside", func() bool { return len(eventsAbout(t, session)) > 0 })

	for _, fc := range outside {
		assertUntouched(t, fc)
	}
}

// TestLabelChangeTakesClusterOutAndBack: a cluster whose labels leave the selector is left as
// it is — its objects, status and finalizer stay, and a spec change is not applied — until
// its labels bring it back, when the controller picks it up where it left it.
func TestLabelChangeTakesClusterOutAndBack(t *testing.T) {
	fc := create(t, makeCluster("mover", "team-b", true).TaskManagerReplicas(1))
	jobManagerCreated(t, fc)
	sts := &appsv1.StatefulSet{}
	eventually(t, "the TaskManagers and the Managed condition", func() bool {
		return exists(sts, fc.Namespace, resources.TaskManagerName(fc.Name)) &&
			meta.IsStatusConditionTrue(get(t, fc).Status.Conditions, controller.ConditionManaged)
	})
	require.Equal(t, ptr.To[int32](1), sts.Spec.Replicas)

	// Out of the selector, with a change the controller would apply in place.
	updateCluster(t, fc, func(cur *v1beta1.FlinkCluster) {
		delete(cur.Labels, selectorLabel)
		cur.Spec.TaskManager.Replicas = ptr.To[int32](3)
	})
	jobManagerCreated(t, create(t, makeCluster("sentinel-1", "team-b", true)))
	frozen := get(t, fc)
	jobManagerCreated(t, create(t, makeCluster("sentinel-2", "team-b", true)))

	after := get(t, fc)
	assert.Equal(t, frozen.Status, after.Status, "the status is not written outside the scope")
	assert.True(t, controllerutil.ContainsFinalizer(after, controller.Finalizer), "the finalizer stays")
	require.True(t, exists(sts, fc.Namespace, resources.TaskManagerName(fc.Name)), "the TaskManagers stay")
	assert.Equal(t, ptr.To[int32](1), sts.Spec.Replicas, "the change is not applied outside the scope")
	assert.True(t, exists(&batchv1.Job{}, fc.Namespace, resources.JobManagerName(fc.Name)), "the JobManager stays")

	// Back in: the change is applied.
	updateCluster(t, fc, func(cur *v1beta1.FlinkCluster) { cur.Labels = map[string]string{selectorLabel: selectorValue} })
	eventually(t, "the TaskManagers scaled to 3 once back in the scope", func() bool {
		return exists(sts, fc.Namespace, resources.TaskManagerName(fc.Name)) && ptr.Deref(sts.Spec.Replicas, 0) == 3
	})
}

// updateCluster changes the cluster as a user's edit would: on the latest version, again when
// the controller wrote it in between (its status updates change the resource version).
func updateCluster(t *testing.T, fc *v1beta1.FlinkCluster, mutate func(*v1beta1.FlinkCluster)) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := get(t, fc)
		mutate(cur)
		return k8s.Update(context.Background(), cur)
	}))
}
