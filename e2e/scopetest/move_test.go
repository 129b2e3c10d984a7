package scopetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/policy"
)

// operatorPods are the pods of the operator's objects of fc (and, once the controller runs
// it, the controller's: they carry the same app and cluster labels).
func operatorPods(t *testing.T, fc *v1beta1.FlinkCluster) []corev1.Pod {
	t.Helper()
	list := &corev1.PodList{}
	require.NoError(t, k8s.List(context.Background(), list, client.InNamespace(fc.Namespace),
		client.MatchingLabels{"app": "flink", "cluster": fc.Name}))
	return list.Items
}

// kubectl runs a command of docs/install.md as the user, a cluster admin.
func kubectl(t *testing.T, args ...string) {
	t.Helper()
	out, err := env.Kubectl(args...).CombinedOutput()
	require.NoError(t, err, "kubectl %v:\n%s", args, out)
}

// TestMoveNamespaceFromOperator runs the move of docs/install.md ("Moving a namespace from
// the operator") on the real API server: namespace team-c is in the controller's
// --watch-namespaces (step 1), its clusters are still the operator's (unlabelled); the
// controller leaves the operator's objects and status alone while they are; then, with the
// operator stopped, the user takes the final savepoint (Flink is not simulated here: its
// location is given), deletes the operator's objects, clears its status and labels the
// cluster with fromSavepoint set — and the controller deploys the job from that savepoint.
func TestMoveNamespaceFromOperator(t *testing.T) {
	ctx := context.Background()
	const ns = "team-c"
	const savepoint = "s3://flink/savepoints/orders/savepoint-0a11-1f2e3d4c5b6a"

	// The operator's cluster: its default job mode, Detached, which this controller does
	// not run.
	fc := create(t, makeCluster("orders", ns, false).JobMode(v1beta1.JobModeDetached).JarFile("/opt/flink/usrlib/orders.jar"))
	name := fc.Name
	operatorRun(t, fc)
	// A change to one of the operator's objects wakes this controller (the objects carry its
	// cache's label and a controller reference to the cluster); it must still do nothing.
	kubectl(t, "-n", ns, "annotate", "configmap", name+"-configmap", "touched=yes")
	jobManagerCreated(t, create(t, makeCluster("sentinel-move", ns, true)))
	before := get(t, fc)
	assert.Empty(t, before.Finalizers, "no finalizer on the operator's cluster")
	assert.Empty(t, before.Status.Conditions, "no condition in the operator's status")
	assert.Equal(t, operatorJobID, before.Status.Components.Job.ID, "the operator's status is intact")
	assert.Empty(t, eventsAbout(t, fc))
	for _, obj := range operatorObjects(fc) {
		require.NoError(t, k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj))
		assert.Equal(t, operatorMarker, obj.GetAnnotations()["managed-by"], "%T %s is still the operator's", obj, obj.GetName())
	}

	// The operator's JobManager pod, made by the real Job controller, runs on the KWOK node.
	eventually(t, "the operator's JobManager pod running", func() bool {
		pods := operatorPods(t, fc)
		return len(pods) == 1 && pods[0].Status.Phase == corev1.PodRunning && pods[0].Spec.NodeName != ""
	})

	// Step 3.2, as written: kubectl waits for the objects to be gone, and a foreground
	// deletion ends only once the garbage collector deleted their dependents, the
	// JobManager pods first — so that two JobManagers never run the job at once.
	kubectl(t, "-n", ns, "delete", "job,statefulset,deployment,service,configmap,ingress", "-l", "app=flink,cluster="+name, "--cascade=foreground")
	assert.Empty(t, operatorPods(t, fc), "the operator's JobManager pods are gone once the delete returns")
	for _, obj := range operatorObjects(fc) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		assert.True(t, apierrors.IsNotFound(err), "the operator's %T %s is gone before the controller deploys: %v", obj, obj.GetName(), err)
	}
	// Step 3c: the operator's status goes.
	kubectl(t, "-n", ns, "patch", "flinkcluster", name, "--subresource=status", "--type=merge", "-p", `{"status":null}`)
	// Step 3d: into the scope, in Application mode, from the savepoint. The validating webhook
	// admits this update: a job update that names its savepoint needs no other.
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}},"spec":{"job":{"mode":"Application","fromSavepoint":%q}}}`,
		selectorLabel, selectorValue, savepoint)
	old := get(t, fc)
	moved := old.DeepCopy()
	require.NoError(t, json.Unmarshal([]byte(patch), moved))
	moved.Labels = map[string]string{selectorLabel: selectorValue}
	errs, _ := policy.ValidateUpdate(old, moved)
	require.Empty(t, errs, "the webhook admits the hand-over patch")
	errs, warnings := policy.ValidateControllerScope(old, moved, policy.ControllerScope{Running: true, Scope: overlayScope})
	require.Empty(t, errs)
	require.Empty(t, warnings)
	kubectl(t, "-n", ns, "patch", "flinkcluster", name, "--type=merge", "-p", patch)

	// The controller runs it: its own JobManager Job, a new job ID, restoring the savepoint.
	job := jobManagerCreated(t, fc)
	eventually(t, "Managed=True and the finalizer on the moved cluster", func() bool {
		cur := get(t, fc)
		return meta.IsStatusConditionTrue(cur.Status.Conditions, controller.ConditionManaged) &&
			controllerutil.ContainsFinalizer(cur, controller.Finalizer)
	})
	cur := get(t, fc)
	assert.True(t, metav1.IsControlledBy(job, cur))
	assert.NotContains(t, job.Annotations, "managed-by", "the JobManager Job is the controller's, not the operator's")
	require.NotNil(t, cur.Status.Components.Job)
	assert.NotEqual(t, operatorJobID, cur.Status.Components.Job.ID, "a job ID of the controller's own")
	assert.Equal(t, cur.Status.Components.Job.ID, job.Labels[resources.LabelJobID])
	assert.Equal(t, savepoint, cur.Status.Components.Job.FromSavepoint, "the deploy restores the operator's final savepoint")
	cm := &corev1.ConfigMap{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.ConfigMapName(name)}, cm))
	assert.Contains(t, fmt.Sprint(cm.Data), resources.KeySavepointPath+": "+savepoint, "the Flink configuration restores the savepoint")
	assert.NotContains(t, cm.Annotations, "managed-by")
	sts := &appsv1.StatefulSet{}
	eventually(t, "the controller's TaskManagers", func() bool { return exists(sts, ns, resources.TaskManagerName(name)) })
	assert.NotContains(t, sts.Annotations, "managed-by")
	assert.False(t, exists(&batchv1.Job{}, ns, name+"-job-submitter"), "no submitter: the JobManager runs the application")
}
