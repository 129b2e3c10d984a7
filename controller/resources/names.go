// Package resources builds the Kubernetes objects of a FlinkCluster: the Flink configuration
// ConfigMap, the JobManager Service and workload (a Job or a Deployment) and the TaskManager
// workload. Builders are pure: the same cluster, revision and savepoint give the same objects.
package resources

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// Labels every object and pod of a cluster carries. The selector labels (app, cluster,
// component) never change over a cluster's life, so the Deployment selector and the Service
// selector stay valid across revisions.
const (
	LabelApp       = "app"
	LabelCluster   = "cluster"
	LabelComponent = "component"
	// LabelRevision names the spec revision an object was built from.
	LabelRevision = "flinkoperator.k8s.io/revision-name"
	// LabelJobID names the Flink job ID of the deploy a JobManager workload and its pods run.
	LabelJobID = "flinkoperator.k8s.io/job-id"

	AppFlink             = "flink"
	ComponentJobManager  = "jobmanager"
	ComponentTaskManager = "taskmanager"
	JobManagerContainer  = "jobmanager"
	TaskManagerContainer = "taskmanager"
	configVolume         = "flink-config"
	configMountPath      = "/opt/flink/conf"
	hadoopConfigVolume   = "hadoop-config"
	gcpServiceAccountVol = "gcp-service-account"
)

// ConfigMapName is the name of the Flink configuration ConfigMap.
func ConfigMapName(clusterName string) string { return clusterName + "-configmap" }

// JobManagerName is the name of the JobManager Service and of its Job or Deployment.
func JobManagerName(clusterName string) string { return clusterName + "-jobmanager" }

// TaskManagerName is the name of the TaskManager StatefulSet or Deployment.
func TaskManagerName(clusterName string) string { return clusterName + "-taskmanager" }

// SelectorLabels select a component's pods of every revision.
func SelectorLabels(clusterName, component string) map[string]string {
	return map[string]string{LabelApp: AppFlink, LabelCluster: clusterName, LabelComponent: component}
}

// componentLabels are the labels of a component's objects and pods at a revision.
func componentLabels(clusterName, component, revision string) map[string]string {
	l := SelectorLabels(clusterName, component)
	if revision != "" {
		l[LabelRevision] = revision
	}
	return l
}

func ownerRef(fc *v1beta1.FlinkCluster) []metav1.OwnerReference {
	return []metav1.OwnerReference{*metav1.NewControllerRef(fc, v1beta1.GroupVersion.WithKind(v1beta1.Kind))}
}

func objectMeta(fc *v1beta1.FlinkCluster, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       fc.Namespace,
		Labels:          labels,
		OwnerReferences: ownerRef(fc),
	}
}

// JobManagerPorts returns the effective rpc, blob, query and ui ports.
func JobManagerPorts(fc *v1beta1.FlinkCluster) (rpc, blob, query, ui int32) {
	return fc.Spec.JobManager.GetPorts()
}

// TaskManagerPorts returns the effective data, rpc and query ports.
func TaskManagerPorts(fc *v1beta1.FlinkCluster) (data, rpc, query int32) {
	return fc.Spec.TaskManager.GetPorts()
}
