package resources

import (
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// TaskManagerReplicas is the desired TaskManager count (the CRD default when unset).
func TaskManagerReplicas(fc *v1beta1.FlinkCluster) int32 {
	return fc.Spec.TaskManager.GetReplicas()
}

// TaskManagerPodTemplate is the pod of a TaskManager.
func TaskManagerPodTemplate(fc *v1beta1.FlinkCluster, revision string) corev1.PodTemplateSpec {
	tm := fc.Spec.TaskManager
	if tm == nil {
		tm = &v1beta1.TaskManagerSpec{}
	}
	data, rpc, query := TaskManagerPorts(fc)
	common := commonPodParts(fc)
	container := corev1.Container{
		Name:            TaskManagerContainer,
		Image:           fc.Spec.Image.Name,
		ImagePullPolicy: pullPolicy(fc),
		Args:            []string{"taskmanager"},
		Ports: append([]corev1.ContainerPort{
			{Name: "data", ContainerPort: data},
			{Name: "rpc", ContainerPort: rpc},
			{Name: "query", ContainerPort: query},
		}, extraPorts(tm.ExtraPorts)...),
		Env:                      common.env,
		EnvFrom:                  slices.Clone(fc.Spec.EnvFrom),
		Resources:                *tm.Resources.DeepCopy(),
		VolumeMounts:             append(common.mounts, tm.VolumeMounts...),
		LivenessProbe:            tm.LivenessProbe.DeepCopy(),
		ReadinessProbe:           tm.ReadinessProbe.DeepCopy(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	return withBatchScheduling(fc, corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      mergeLabels(tm.PodLabels, componentLabels(fc.Name, ComponentTaskManager, revision)),
			Annotations: maps.Clone(tm.PodAnnotations),
		},
		Spec: corev1.PodSpec{
			InitContainers:     initContainers(tm.InitContainers, common),
			Containers:         append([]corev1.Container{container}, tm.Sidecars...),
			Volumes:            append(common.volumes, tm.Volumes...),
			NodeSelector:       maps.Clone(tm.NodeSelector),
			Tolerations:        slices.Clone(tm.Tolerations),
			Affinity:           tm.Affinity.DeepCopy(),
			HostAliases:        slices.Clone(tm.HostAliases),
			SecurityContext:    tm.SecurityContext.DeepCopy(),
			ServiceAccountName: deref(fc.Spec.ServiceAccountName),
			ImagePullSecrets:   pullSecrets(fc),
			SchedulerName:      schedulerName(fc),
		},
	})
}

// TaskManagerStatefulSet builds the TaskManagers as a StatefulSet (the default).
func TaskManagerStatefulSet(fc *v1beta1.FlinkCluster, revision string) *appsv1.StatefulSet {
	var claims []corev1.PersistentVolumeClaim
	if tm := fc.Spec.TaskManager; tm != nil {
		claims = ownedClaims(fc, tm.VolumeClaimTemplates)
	}
	return &appsv1.StatefulSet{
		ObjectMeta: objectMeta(fc, TaskManagerName(fc.Name), componentLabels(fc.Name, ComponentTaskManager, revision)),
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr.To(TaskManagerReplicas(fc)),
			Selector:             &metav1.LabelSelector{MatchLabels: SelectorLabels(fc.Name, ComponentTaskManager)},
			ServiceName:          JobManagerName(fc.Name),
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			Template:             TaskManagerPodTemplate(fc, revision),
			VolumeClaimTemplates: claims,
		},
	}
}

// TaskManagerDeployment builds the TaskManagers as a Deployment, whose volumeClaimTemplates become
// ephemeral volumes, as the flink-on-k8s-operator does.
func TaskManagerDeployment(fc *v1beta1.FlinkCluster, revision string) *appsv1.Deployment {
	tmpl := TaskManagerPodTemplate(fc, revision)
	if tm := fc.Spec.TaskManager; tm != nil {
		tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, ephemeralVolumes(tm.VolumeClaimTemplates, tmpl.Labels)...)
	}
	return &appsv1.Deployment{
		ObjectMeta: objectMeta(fc, TaskManagerName(fc.Name), componentLabels(fc.Name, ComponentTaskManager, revision)),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(TaskManagerReplicas(fc)),
			Selector: &metav1.LabelSelector{MatchLabels: SelectorLabels(fc.Name, ComponentTaskManager)},
			Template: tmpl,
		},
	}
}

// ownedClaims are the StatefulSet's claim templates controlled by the FlinkCluster, which the
// claims copy: they go with the cluster, not outlive it, and survive a new revision.
func ownedClaims(fc *v1beta1.FlinkCluster, templates []corev1.PersistentVolumeClaim) []corev1.PersistentVolumeClaim {
	if len(templates) == 0 {
		return nil
	}
	out := make([]corev1.PersistentVolumeClaim, len(templates))
	for i := range templates {
		c := *templates[i].DeepCopy()
		c.OwnerReferences = ownerRef(fc)
		out[i] = c
	}
	return out
}

func ephemeralVolumes(templates []corev1.PersistentVolumeClaim, labels map[string]string) []corev1.Volume {
	var out []corev1.Volume
	for _, t := range templates {
		l := maps.Clone(t.Labels)
		if l == nil {
			l = map[string]string{}
		}
		maps.Copy(l, labels)
		out = append(out, corev1.Volume{
			Name: t.Name,
			VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
					ObjectMeta: metav1.ObjectMeta{Labels: l, Annotations: maps.Clone(t.Annotations)},
					Spec:       *t.Spec.DeepCopy(),
				},
			}},
		})
	}
	return out
}
