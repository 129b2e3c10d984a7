package resources

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// JobManagerJob builds the JobManager as a batch Job: one pod, restartPolicy Never, no retries, so
// a lost or failed JobManager pod ends the job.
func JobManagerJob(fc *v1beta1.FlinkCluster, d Deploy) *batchv1.Job {
	tmpl := JobManagerPodTemplate(fc, d)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.Job{
		ObjectMeta: objectMeta(fc, JobManagerName(fc.Name), jobManagerLabels(fc.Name, d)),
		Spec: batchv1.JobSpec{
			Parallelism:  ptr.To[int32](1),
			Completions:  ptr.To[int32](1),
			BackoffLimit: ptr.To[int32](0),
			Template:     tmpl,
		},
	}
}

// JobManagerDeployment builds the JobManager as a Deployment: Kubernetes recreates a lost
// pod and Flink HA recovers the job. Recreate, never RollingUpdate: two JobManagers of one
// cluster must not run side by side. replicas is 1, or 0 once the job is terminal.
func JobManagerDeployment(fc *v1beta1.FlinkCluster, d Deploy, replicas int32) *appsv1.Deployment {
	tmpl := JobManagerPodTemplate(fc, d)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
	tmpl.Spec.Tolerations = lostNodeTolerations(tmpl.Spec.Tolerations)
	return &appsv1.Deployment{
		ObjectMeta: objectMeta(fc, JobManagerName(fc.Name), jobManagerLabels(fc.Name, d)),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: SelectorLabels(fc.Name, ComponentJobManager)},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: tmpl,
		},
	}
}

// LostNodeTolerationSeconds is how long a Deployment-mode JobManager pod stays bound to an
// unreachable or not-ready node before its replacement starts elsewhere, instead of the API
// server's 300 s of a stopped job. HA makes it safe: the cut-off JobManager cannot renew its
// leader lease, so the two never run the job side by side. 30 s rides out a short network blip.
// Job mode keeps the default: an evicted pod fails the Job, so waiting for the node is the better bet.
const LostNodeTolerationSeconds int64 = 30

// lostNodeTolerations adds LostNodeTolerationSeconds to the user's, unless they tolerate the
// taint.
func lostNodeTolerations(user []corev1.Toleration) []corev1.Toleration {
	out := user
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		if slices.ContainsFunc(user, func(t corev1.Toleration) bool {
			return (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "")
		}) {
			continue
		}
		out = append(out, corev1.Toleration{
			Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
			TolerationSeconds: ptr.To(LostNodeTolerationSeconds),
		})
	}
	return out
}
