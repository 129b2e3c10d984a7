package scopetest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
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
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
	"github.com/flink-admission/flink-admission/policy"
)

// operatorJobManagerPods are the JobManager pods of the operator's objects of fc (and, once the
// controller runs it, the controller's: they carry the same labels). TaskManager pods, which
// the StatefulSet controller makes, are left out.
func operatorJobManagerPods(t *testing.T, fc *v1beta1.FlinkCluster) []corev1.Pod {
	t.Helper()
	list := &corev1.PodList{}
	require.NoError(t, k8s.List(context.Background(), list, client.InNamespace(fc.Namespace),
		client.MatchingLabels{"app": "flink", "cluster": fc.Name, "component": "jobmanager"}))
	return list.Items
}

// kubectl runs a command of docs/install.md as the user, a cluster admin.
func kubectl(t *testing.T, args ...string) {
	t.Helper()
	out, err := env.Kubectl(args...).CombinedOutput()
	require.NoError(t, err, "kubectl %v:\n%s", args, out)
}

// TestMoveNamespaceFromOperator runs the move of docs/install.md ("Moving a namespace from
// the operator") on the real control plane: namespace team-c is in the controller's
// --watch-namespaces (step 1), its clusters are still the operator's (unlabelled); the
// controller leaves the operator's objects and status alone while they are; then, with the
// operator stopped, the user takes the final savepoint with the doc's curl commands against
// the simulated JobManager of the operator's pod, deletes the operator's objects (its pods
// gone first), clears its status and labels the cluster with fromSavepoint set to the
// location Flink returned — and the controller's JobManager restores exactly that savepoint.
func TestMoveNamespaceFromOperator(t *testing.T) {
	ctx := context.Background()
	const ns = "team-c"

	// The operator's cluster: its default job mode, Detached, which this controller does
	// not run.
	w := makeCluster("orders", ns, false).JobMode(v1beta1.JobModeDetached).JarFile("/opt/flink/usrlib/orders.jar")
	// Its Flink: the operator's JobManager and, after the move, the controller's share it as
	// they share the savepoint storage.
	flink := fakeflink.NewCluster(fakeflink.Options{
		ClusterID: resources.HAClusterID(w.Obj()), HA: &fakeflink.KubeHA{Client: k8s, Namespace: ns},
		Program: fakeflink.Program{JobName: "orders"},
	})
	fakes.Store(ns+"/"+w.Obj().Name, flink)
	t.Cleanup(func() {
		assert.Empty(t, flink.Violations(), "what Flink must never do to a job (two runs at once, a rerun after its end)")
		fakes.Delete(ns + "/" + w.Obj().Name)
		flink.Close()
	})
	fc := create(t, w)
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

	// The operator's JobManager pod, made by the real Job controller, runs on the KWOK node,
	// and its simulated JobManager runs the job.
	var operatorJM *fakeflink.JobManager
	eventually(t, "the operator's JobManager pod running the job", func() bool {
		pods := operatorJobManagerPods(t, fc)
		if len(pods) != 1 || pods[0].Status.Phase != corev1.PodRunning || pods[0].Spec.NodeName == "" {
			return false
		}
		operatorJM = sim.Process(ns, pods[0].Name)
		return operatorJM != nil && operatorJM.JobState(operatorJobID) == flinkclient.JobStateRunning
	})

	// Step 3.1: the final savepoint, with the doc's curl commands; only their placeholders are
	// filled in (the port-forward's address, the job ID, spec.job.savepointsDir, the request
	// ID). Without curl on the machine, Go's HTTP client sends the same requests (runCurl).
	out, err := env.Kubectl("-n", ns, "get", "flinkcluster", name, "-o", "jsonpath={.status.components.job.id}").Output()
	require.NoError(t, err)
	jobID := string(out)
	require.Equal(t, operatorJobID, jobID)
	flinkURL, err := url.Parse(flink.URL())
	require.NoError(t, err)
	with := map[string]string{docRESTAddress: flinkURL.Host, "<job id>": jobID, "<spec.job.savepointsDir>": *fc.Spec.Job.SavepointsDir}
	cmds := moveCurlCommands(t)
	require.Len(t, cmds, 2, "install.md's step 3.1 has two curl commands: stop-with-savepoint, then its status")
	var triggered struct {
		RequestID string `json:"request-id"`
	}
	runCurl(t, fill(t, cmds[0], with), &triggered)
	require.NotEmpty(t, triggered.RequestID, "stop-with-savepoint answers a request-id")
	with["<request-id>"] = triggered.RequestID
	var location string
	eventually(t, "the savepoint operation COMPLETED", func() bool {
		var status struct {
			Status    struct{ ID string } `json:"status"`
			Operation *struct {
				Location     string `json:"location"`
				FailureCause any    `json:"failure-cause"`
			} `json:"operation"`
		}
		runCurl(t, fill(t, cmds[1], with), &status)
		if status.Status.ID != flinkclient.OperationCompleted {
			return false
		}
		require.NotNil(t, status.Operation)
		require.Nil(t, status.Operation.FailureCause, "the final savepoint failed")
		location = status.Operation.Location
		return true
	})
	require.True(t, strings.HasPrefix(location, *fc.Spec.Job.SavepointsDir+"/"), "the savepoint %s is in spec.job.savepointsDir", location)
	var ended []string
	for _, e := range flink.Executions() {
		if e.JobID == jobID {
			ended = append(ended, e.State)
		}
	}
	assert.Equal(t, []string{flinkclient.JobStateFinished}, ended, "stop-with-savepoint ended the operator's one execution of the job")

	// Step 3.2, as written: kubectl waits for the objects to be gone, and a foreground
	// deletion ends only once the garbage collector deleted their dependents, the
	// JobManager pods first — so that two JobManagers never run the job at once.
	kubectl(t, "-n", ns, "delete", "job,statefulset,deployment,service,configmap,ingress", "-l", "app=flink,cluster="+name, "--cascade=foreground")
	assert.Empty(t, operatorJobManagerPods(t, fc), "the operator's JobManager pods are gone once the delete returns")
	assert.False(t, operatorJM.Alive(), "the operator's JobManager process ended")
	for _, obj := range operatorObjects(fc) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		assert.True(t, apierrors.IsNotFound(err), "the operator's %T %s is gone before the controller deploys: %v", obj, obj.GetName(), err)
	}
	// Step 3.3: the operator's status goes.
	kubectl(t, "-n", ns, "patch", "flinkcluster", name, "--subresource=status", "--type=merge", "-p", `{"status":null}`)
	// Step 3.4: into the scope, in Application mode, from the savepoint Flink returned,
	// through the live webhooks: the validating webhook admits it without a warning (a job
	// update that names its savepoint needs no other).
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}},"spec":{"job":{"mode":"Application","fromSavepoint":%q}}}`,
		selectorLabel, selectorValue, location)
	old := get(t, fc)
	// The webhooks judge this cluster's updates: a change they deny is denied here.
	out, err = env.Kubectl("-n", ns, "patch", "flinkcluster", name, "--type=merge", "--dry-run=server", "-p", `{"spec":{"flinkVersion":"latest"}}`).CombinedOutput()
	require.Error(t, err, "the validating webhook denies an invalid flinkVersion:\n%s", out)
	assert.Contains(t, string(out), "spec.flinkVersion")
	out, err = env.Kubectl("-n", ns, "patch", "flinkcluster", name, "--type=merge", "-p", patch).CombinedOutput()
	require.NoError(t, err, "the webhook admits the hand-over patch:\n%s", out)
	assert.NotContains(t, string(out), "Warning:", "the webhook has nothing to warn of")
	// The scope check of a webhook beside the controller (this test's webhooks serve without
	// one): the moved cluster is inside the scope, so no Deployment is left unrun.
	errs, warnings := policy.ValidateControllerScope(old, get(t, fc), policy.ControllerScope{Running: true, Scope: overlayScope})
	require.Empty(t, errs)
	require.Empty(t, warnings)

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
	assert.Equal(t, location, cur.Status.Components.Job.FromSavepoint, "the deploy restores the operator's final savepoint")
	newID := cur.Status.Components.Job.ID
	// The controller's JobManager, simulated on its pod, runs the job from exactly that
	// savepoint.
	eventually(t, "the controller's JobManager running the job from the savepoint", func() bool {
		for _, e := range flink.Executions() {
			if e.JobID == newID && e.End.IsZero() {
				return true
			}
		}
		return false
	})
	for _, e := range flink.Executions() {
		if e.JobID == newID {
			assert.Equal(t, location, e.RestoredFrom, "the controller's job restores the savepoint Flink returned in step 3.1")
			assert.False(t, e.Recovered, "submitted by main(), not recovered from the operator's HA data")
		}
	}
	eventually(t, "the moved job Running in the status", func() bool {
		j := get(t, fc).Status.Components.Job
		return j != nil && j.State == v1beta1.JobStateRunning
	})
	// (The ConfigMap's execution.savepoint.path is not checked: the controller drops it once
	// the job runs, so that a restarted JobManager does not rewind to the savepoint; the
	// execution above read it when the controller's JobManager started.)
	cm := &corev1.ConfigMap{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: resources.ConfigMapName(name)}, cm))
	assert.NotContains(t, cm.Annotations, "managed-by")
	sts := &appsv1.StatefulSet{}
	eventually(t, "the controller's TaskManagers", func() bool { return exists(sts, ns, resources.TaskManagerName(name)) })
	assert.NotContains(t, sts.Annotations, "managed-by")
	assert.False(t, exists(&batchv1.Job{}, ns, name+"-job-submitter"), "no submitter: the JobManager runs the application")
}
