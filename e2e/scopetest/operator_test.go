package scopetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
)

// The stand-in for the flink-on-k8s-operator: it owns a cluster's objects as the operator
// does — the same names (<name>-configmap, <name>-jobmanager for the Service and the
// JobManager Job, <name>-taskmanager), the same labels (app=flink, cluster=<name>,
// component=...), a controller owner reference to the FlinkCluster — and writes a whole
// status of its own, with its job ID and revision names. operatorMarker tells its objects
// from this controller's.
const (
	operatorJobID    = "00000000000000000000000000000a11"
	operatorRevision = "-7b6d8c9f5d-1"
	operatorMarker   = "stand-in-operator"
)

// operatorLabels are the labels the operator puts on a component's objects and pods.
func operatorLabels(cluster, component string) map[string]string {
	return map[string]string{"app": "flink", "cluster": cluster, "component": component}
}

// operatorObjects are what the operator runs an Application-mode job cluster with.
func operatorObjects(fc *v1beta1.FlinkCluster) []client.Object {
	meta := func(name, component string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: fc.Namespace, Labels: operatorLabels(fc.Name, component),
			Annotations: map[string]string{"managed-by": operatorMarker}}
	}
	pod := func(component string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: operatorLabels(fc.Name, component)},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: component, Image: fc.Spec.Image.Name, Args: []string{component}}}},
		}
	}
	// The JobManager runs the job under the ID the stand-in gives it (the simulated
	// JobManager reads --job-id, as Flink's standalone entrypoint does).
	jm := pod("jobmanager")
	jm.Spec.Containers[0].Args = []string{"standalone-job", "--job-id", operatorJobID}
	tm := pod("taskmanager")
	tm.Spec.RestartPolicy = corev1.RestartPolicyAlways
	return []client.Object{
		&corev1.ConfigMap{ObjectMeta: meta(fc.Name+"-configmap", "configmap"),
			Data: map[string]string{resources.ConfigFileName(fc): "jobmanager.rpc.address: " + fc.Name + "-jobmanager\n"}},
		&corev1.Service{ObjectMeta: meta(fc.Name+"-jobmanager", "jobmanager"), Spec: corev1.ServiceSpec{
			Selector: operatorLabels(fc.Name, "jobmanager"),
			Ports:    []corev1.ServicePort{{Name: "ui", Port: 8081}}}},
		&batchv1.Job{ObjectMeta: meta(fc.Name+"-jobmanager", "jobmanager"), Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0), Template: jm}},
		&appsv1.StatefulSet{ObjectMeta: meta(fc.Name+"-taskmanager", "taskmanager"), Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1), ServiceName: fc.Name + "-taskmanager",
			Selector: &metav1.LabelSelector{MatchLabels: operatorLabels(fc.Name, "taskmanager")}, Template: tm}},
	}
}

// operatorRun is one reconcile of the stand-in operator: it creates its objects and records
// a running job in the status, as a whole-status update (as the operator does).
func operatorRun(t *testing.T, fc *v1beta1.FlinkCluster) []client.Object {
	t.Helper()
	ctx := context.Background()
	objs := operatorObjects(fc)
	for _, obj := range objs {
		require.NoError(t, controllerutil.SetControllerReference(fc, obj, scheme))
		require.NoError(t, k8s.Create(ctx, obj))
	}
	cur := get(t, fc)
	cur.Status = v1beta1.FlinkClusterStatus{
		State: v1beta1.ClusterStateRunning,
		Components: v1beta1.FlinkClusterComponentsStatus{
			Job: &v1beta1.JobStatus{ID: operatorJobID, State: v1beta1.JobStateRunning},
		},
		Revision: v1beta1.RevisionStatus{CurrentRevision: fc.Name + operatorRevision, NextRevision: fc.Name + operatorRevision},
	}
	require.NoError(t, k8s.Status().Update(ctx, cur))
	return objs
}
