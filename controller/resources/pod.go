package resources

import (
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

type podCommon struct {
	volumes []corev1.Volume
	mounts  []corev1.VolumeMount
	env     []corev1.EnvVar
}

func commonPodParts(fc *v1beta1.FlinkCluster) podCommon {
	var c podCommon
	c.volumes = append(c.volumes, corev1.Volume{
		Name: configVolume,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(fc.Name)},
		}},
	})
	c.mounts = append(c.mounts, corev1.VolumeMount{Name: configVolume, MountPath: configMountPath})
	if h := fc.Spec.HadoopConfig; h != nil && h.ConfigMapName != "" {
		mountPath := h.GetMountPath()
		c.volumes = append(c.volumes, corev1.Volume{
			Name: hadoopConfigVolume,
			VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: h.ConfigMapName},
			}},
		})
		c.mounts = append(c.mounts, corev1.VolumeMount{Name: hadoopConfigVolume, MountPath: mountPath, ReadOnly: true})
		c.env = append(c.env, corev1.EnvVar{Name: "HADOOP_CONF_DIR", Value: mountPath})
	}
	if g := fc.Spec.GCPConfig; g != nil && g.ServiceAccount != nil && g.ServiceAccount.SecretName != "" {
		sa := g.ServiceAccount
		c.volumes = append(c.volumes, corev1.Volume{
			Name:         gcpServiceAccountVol,
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: sa.SecretName}},
		})
		c.mounts = append(c.mounts, corev1.VolumeMount{Name: gcpServiceAccountVol, MountPath: sa.MountPath, ReadOnly: true})
		c.env = append(c.env, corev1.EnvVar{Name: "GOOGLE_APPLICATION_CREDENTIALS", Value: path.Join(sa.MountPath, sa.KeyFile)})
	}
	c.env = append(c.env, fc.Spec.EnvVars...)
	return c
}

// initContainers are the user's init containers with the main container's spec.envVars and
// Flink, Hadoop and GCP configuration and variables, which an init container that downloads
// the jar needs (the flink-on-k8s-operator's remote-jar sample); its own variables and mounts win.
func initContainers(user []corev1.Container, common podCommon) []corev1.Container {
	if len(user) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(user))
	for i := range user {
		c := *user[i].DeepCopy()
		for _, e := range common.env {
			if !slices.ContainsFunc(c.Env, func(o corev1.EnvVar) bool { return o.Name == e.Name }) {
				c.Env = append(c.Env, e)
			}
		}
		for _, m := range common.mounts {
			if !slices.ContainsFunc(c.VolumeMounts, func(o corev1.VolumeMount) bool { return o.MountPath == m.MountPath }) {
				c.VolumeMounts = append(c.VolumeMounts, m)
			}
		}
		out[i] = c
	}
	return out
}

func pullSecrets(fc *v1beta1.FlinkCluster) []corev1.LocalObjectReference {
	return slices.Clone(fc.Spec.Image.PullSecrets)
}

func pullPolicy(fc *v1beta1.FlinkCluster) corev1.PullPolicy {
	if fc.Spec.Image.PullPolicy == "" {
		return corev1.PullAlways
	}
	return fc.Spec.Image.PullPolicy
}

func extraPorts(ports []v1beta1.NamedPort) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, p := range ports {
		cp := corev1.ContainerPort{Name: p.Name, ContainerPort: p.ContainerPort}
		if p.Protocol != "" {
			cp.Protocol = corev1.Protocol(p.Protocol)
		}
		out = append(out, cp)
	}
	return out
}

// mergeLabels returns the user's labels overridden by the controller's, so that a pod label
// can never take a pod out of its selector.
func mergeLabels(user, own map[string]string) map[string]string {
	l := maps.Clone(user)
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, own)
	return l
}

// JobManagerArgs are the application-mode entrypoint's arguments: the jar, the job ID, with HA
// the pod IP as RPC address (so that the HA leader address names the pod), the entry class and
// the job's arguments; the savepoint is in FlinkConfiguration unless RestoreOnCommandLine.
// commons-cli's --jars takes every argument up to the next known option, so --job-id follows.
func JobManagerArgs(fc *v1beta1.FlinkCluster, d Deploy) []string {
	args := []string{"standalone-job"}
	j := fc.Spec.Job
	if j != nil && j.JarFile != nil && *j.JarFile != "" {
		args = append(args, "--jars", *j.JarFile)
	}
	args = append(args, "--job-id", d.JobID)
	if flinkcluster.HAEnabled(fc.Spec.FlinkProperties) {
		// A dynamic property, not --host: Flink 2's application entrypoint has no --host.
		args = append(args, "-D"+KeyRPCAddress+"=$("+EnvPodIP+")")
	}
	if j == nil {
		return args
	}
	if j.ClassName != nil && *j.ClassName != "" {
		args = append(args, "--job-classname", *j.ClassName)
	}
	if RestoreOnCommandLine(fc, d) {
		path := d.FromSavepoint
		if restoreFromEnv(fc) {
			path = "$(" + EnvRestorePath + ")"
		}
		args = append(args, "--fromSavepoint", path, "--allowNonRestoredState")
	}
	return append(args, j.Args...)
}

// EnvRestorePath holds a Deployment's command-line restore path: the Flink ConfigMap's
// KeyRestorePath, kept equal to execution.savepoint.path.
const EnvRestorePath = "FLINK_ADMISSION_RESTORE_PATH"

// restoreFromEnv reports whether a command-line restore path comes from EnvRestorePath: in
// Deployment mode, whose pod template outlives the first run. The kubelet expands $(VAR) from
// configMapKeyRef variables at every container start, so a restarted container gets
// ResumeFromHAOnly once written, without rolling the pod template.
func restoreFromEnv(fc *v1beta1.FlinkCluster) bool {
	return fc.Spec.GetDeploymentType() == v1beta1.JobManagerDeploymentTypeDeployment
}

// restorePathEnv is EnvRestorePath where the JobManager reads it, else nil. Not optional: the
// controller writes the key with the ConfigMap, and an unexpanded $(FLINK_ADMISSION_RESTORE_PATH)
// must never be a savepoint.
func restorePathEnv(fc *v1beta1.FlinkCluster, d Deploy) *corev1.EnvVar {
	if !RestoreOnCommandLine(fc, d) || !restoreFromEnv(fc) {
		return nil
	}
	return &corev1.EnvVar{Name: EnvRestorePath, ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(fc.Name)},
			Key:                  KeyRestorePath,
		},
	}}
}

// RestoreOnCommandLine reports whether the savepoint and allowNonRestoredState go on the
// command line too: before Flink 2.3 the entrypoint overwrites the file's restore settings with
// the command line's, even unset (FLINK-36973), and --allowNonRestoredState needs
// --fromSavepoint. A Job's pod never restarts, so its path is literal; a Deployment's is
// $(EnvRestorePath), which needs HA, where ResumeFromHAOnly replaces it once the job ran.
// Without HA the option is unsupported (policy warns): an empty path would restore from nowhere.
func RestoreOnCommandLine(fc *v1beta1.FlinkCluster, d Deploy) bool {
	j := fc.Spec.Job
	if d.FromSavepoint == "" || j == nil || j.AllowNonRestoredState == nil || !*j.AllowNonRestoredState ||
		restoreSettingsExplicit(fc.Spec.FlinkVersion) {
		return false
	}
	return !restoreFromEnv(fc) || flinkcluster.HAEnabled(fc.Spec.FlinkProperties)
}

// restoreSettingsExplicit reports whether the entrypoint keeps the file's restore settings when
// the command line sets none (2.3+, FLINK-36973); an unparsable version counts as current.
func restoreSettingsExplicit(version string) bool {
	major, rest, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	minor, _, _ := strings.Cut(rest, ".")
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	if err1 != nil || err2 != nil {
		return true
	}
	return ma > 2 || (ma == 2 && mi >= 3)
}

// EnvPodIP is the JobManager container's variable holding its pod IP.
const EnvPodIP = "POD_IP"

var podIPEnv = corev1.EnvVar{Name: EnvPodIP, ValueFrom: &corev1.EnvVarSource{
	FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"},
}}

// jobManagerEnv is the JobManager's pod IP, restore path (restorePathEnv) and common variables.
func jobManagerEnv(fc *v1beta1.FlinkCluster, d Deploy, common []corev1.EnvVar) []corev1.EnvVar {
	env := []corev1.EnvVar{podIPEnv}
	if e := restorePathEnv(fc, d); e != nil {
		env = append(env, *e)
	}
	return append(env, common...)
}

// jobManagerLabels are the labels of a deploy's JobManager workload and pods.
func jobManagerLabels(clusterName string, d Deploy) map[string]string {
	l := componentLabels(clusterName, ComponentJobManager, d.Revision)
	if d.JobID != "" {
		l[LabelJobID] = d.JobID
	}
	return l
}

// JobManagerPodTemplate is the pod of the JobManager, the same for the Job and the Deployment
// except for the restart policy, which the workload sets.
func JobManagerPodTemplate(fc *v1beta1.FlinkCluster, d Deploy) corev1.PodTemplateSpec {
	jm := fc.Spec.JobManager
	if jm == nil {
		jm = &v1beta1.JobManagerSpec{}
	}
	rpc, blob, query, ui := JobManagerPorts(fc)
	common := commonPodParts(fc)
	container := corev1.Container{
		Name:            JobManagerContainer,
		Image:           fc.Spec.Image.Name,
		ImagePullPolicy: pullPolicy(fc),
		Args:            JobManagerArgs(fc, d),
		Ports: append([]corev1.ContainerPort{
			{Name: "rpc", ContainerPort: rpc},
			{Name: "blob", ContainerPort: blob},
			{Name: "query", ContainerPort: query},
			{Name: "ui", ContainerPort: ui},
		}, extraPorts(jm.ExtraPorts)...),
		Env:            jobManagerEnv(fc, d, common.env),
		EnvFrom:        slices.Clone(fc.Spec.EnvFrom),
		Resources:      *jm.Resources.DeepCopy(),
		VolumeMounts:   append(common.mounts, jm.VolumeMounts...),
		LivenessProbe:  jm.LivenessProbe.DeepCopy(),
		ReadinessProbe: jm.ReadinessProbe.DeepCopy(),
		// The tail of a crashing JobManager's log becomes the status's failure reason.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	if jm.PreStopDelaySeconds != nil && *jm.PreStopDelaySeconds > 0 {
		container.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
			Exec: &corev1.ExecAction{Command: []string{"sleep", strconv.Itoa(int(*jm.PreStopDelaySeconds))}},
		}}
	}
	containers := append([]corev1.Container{container}, jm.Sidecars...)
	podLabels := mergeLabels(jm.PodLabels, jobManagerLabels(fc.Name, d))
	// A Job or Deployment has no claim templates: volumeClaimTemplates become ephemeral volumes
	// (the flink-on-k8s-operator dropped them, leaving mounts without a volume).
	volumes := append(append(common.volumes, jm.Volumes...), ephemeralVolumes(jm.VolumeClaimTemplates, podLabels)...)
	return withBatchScheduling(fc, corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      podLabels,
			Annotations: maps.Clone(jm.PodAnnotations),
		},
		Spec: corev1.PodSpec{
			InitContainers:                initContainers(jm.InitContainers, common),
			Containers:                    containers,
			Volumes:                       volumes,
			NodeSelector:                  maps.Clone(jm.NodeSelector),
			Tolerations:                   slices.Clone(jm.Tolerations),
			Affinity:                      jm.Affinity.DeepCopy(),
			HostAliases:                   slices.Clone(jm.HostAliases),
			SecurityContext:               jm.SecurityContext.DeepCopy(),
			ServiceAccountName:            deref(fc.Spec.ServiceAccountName),
			ImagePullSecrets:              pullSecrets(fc),
			TerminationGracePeriodSeconds: copyInt64(jm.TerminationGracePeriodSeconds),
			SchedulerName:                 schedulerName(fc),
		},
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func copyInt64(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// VolcanoQueueAnnotation is where Volcano reads the queue of a workload's pod group.
const VolcanoQueueAnnotation = "scheduling.volcano.sh/queue-name"

// withBatchScheduling gives a pod template spec.batchScheduler's priority class (as the
// flink-on-k8s-operator does) and, unless the user's annotations name one, its Volcano queue.
// Volcano makes a pod group per workload, not one per cluster (no gang scheduling; the webhook says so).
func withBatchScheduling(fc *v1beta1.FlinkCluster, t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	bs := fc.Spec.BatchScheduler
	if bs == nil {
		return t
	}
	if bs.PriorityClassName != "" {
		t.Spec.PriorityClassName = bs.PriorityClassName
	}
	if bs.Queue != "" {
		if _, ok := t.Annotations[VolcanoQueueAnnotation]; !ok {
			if t.Annotations == nil {
				t.Annotations = map[string]string{}
			}
			t.Annotations[VolcanoQueueAnnotation] = bs.Queue
		}
	}
	return t
}

func schedulerName(fc *v1beta1.FlinkCluster) string {
	if fc.Spec.BatchScheduler != nil && fc.Spec.BatchScheduler.Name != "" {
		return fc.Spec.BatchScheduler.Name
	}
	return deref(fc.Spec.BatchSchedulerName)
}
