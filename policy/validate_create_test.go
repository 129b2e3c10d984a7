package policy_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/policy"
)

func resources(cpu, memory string) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{Limits: corev1.ResourceList{}}
	if cpu != "" {
		r.Limits[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		r.Limits[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return r
}

func TestValidateCreate(t *testing.T) {
	long48 := "a" + strings.Repeat("b", 47)
	cases := []struct {
		name     string
		obj      *v1beta1.FlinkCluster
		want     field.ErrorList
		warnings []string
	}{
		// metadata
		{name: "allow: name of 48 characters", obj: makeFC(long48).Obj()},
		{
			name: "deny: name longer than 48 characters",
			obj:  makeFC(long48 + "c").Obj(),
			want: field.ErrorList{invalid(path("metadata", "name"), long48+"c", policy.RuleNameTooLong)},
		},
		{
			name: "deny: name not a DNS-1035 label (starts with a digit)",
			obj:  makeFC("1cluster").Obj(),
			want: field.ErrorList{invalid(path("metadata", "name"), "1cluster", policy.RuleNameDNS1035)},
		},
		{
			name: "deny: name with upper case and a dot",
			obj:  makeFC("My.cluster").Obj(),
			want: field.ErrorList{invalid(path("metadata", "name"), "My.cluster", policy.RuleNameDNS1035)},
		},
		{
			name: "deny: name too long and not a DNS-1035 label reports both",
			obj:  makeFC(long48 + "_").Obj(),
			want: field.ErrorList{
				invalid(path("metadata", "name"), long48+"_", policy.RuleNameTooLong),
				invalid(path("metadata", "name"), long48+"_", policy.RuleNameDNS1035),
			},
		},
		{
			name: "deny: empty namespace",
			obj:  func() *v1beta1.FlinkCluster { fc := makeFC("c").Obj(); fc.Namespace = ""; return fc }(),
			want: field.ErrorList{required(path("metadata", "namespace"), policy.RuleNamespace)},
		},
		{
			name: "deny: invalid namespace",
			obj:  func() *v1beta1.FlinkCluster { fc := makeFC("c").Obj(); fc.Namespace = "Bad_NS"; return fc }(),
			want: field.ErrorList{invalid(path("metadata", "namespace"), "Bad_NS", policy.RuleNamespace)},
		},

		// flinkVersion, image, hadoop, gcp
		{
			name: "deny: empty flinkVersion",
			obj:  makeFC("c").FlinkVersion("").Obj(),
			want: field.ErrorList{required(path("spec", "flinkVersion"), policy.RuleFlinkVersion)},
		},
		{
			name: "deny: flinkVersion that does not parse, and no memory checks without a version",
			obj: makeFC("c").FlinkVersion("latest").
				JobManager(func(jm *v1beta1.JobManagerSpec) { jm.MemoryProcessRatio = ptr.To(int32(500)) }).Obj(),
			want: field.ErrorList{invalid(path("spec", "flinkVersion"), "latest", policy.RuleFlinkVersion)},
		},
		{name: "allow: flinkVersion with two components", obj: makeFC("c").FlinkVersion("1.20").Obj()},
		{
			name: "deny: empty image name",
			obj:  makeFC("c").Image("").Obj(),
			want: field.ErrorList{required(path("spec", "image", "name"), policy.RuleImage)},
		},
		{
			name: "deny: unknown image pullPolicy",
			obj:  makeFC("c").PullPolicy("Sometimes").Obj(),
			want: field.ErrorList{notSupported(path("spec", "image", "pullPolicy"), corev1.PullPolicy("Sometimes"), policy.RuleImage)},
		},
		{name: "allow: pullPolicy IfNotPresent", obj: makeFC("c").PullPolicy(corev1.PullIfNotPresent).Obj()},
		{
			name: "deny: hadoopConfig without configMapName (an empty mountPath is the default)",
			obj:  makeFC("c").HadoopConfig("", "").Obj(),
			want: field.ErrorList{required(path("spec", "hadoopConfig", "configMapName"), policy.RuleHadoopConfig)},
		},
		{name: "allow: hadoopConfig", obj: makeFC("c").HadoopConfig("hadoop", "/etc/hadoop/conf").Obj()},
		{
			name: "deny: gcp service account without secret, key file and mount path",
			obj:  makeFC("c").GCPServiceAccount("", "", "").Obj(),
			want: field.ErrorList{
				required(path("spec", "gcpConfig", "serviceAccount", "secretName"), policy.RuleGCPServiceAccount),
				required(path("spec", "gcpConfig", "serviceAccount", "keyFile"), policy.RuleGCPServiceAccount),
				required(path("spec", "gcpConfig", "serviceAccount", "mountPath"), policy.RuleGCPServiceAccount),
			},
		},
		{
			name: "deny: gcp service account mount path ending with the key file",
			obj:  makeFC("c").GCPServiceAccount("gcp", "key.json", "/etc/gcp/key.json").Obj(),
			want: field.ErrorList{invalid(path("spec", "gcpConfig", "serviceAccount", "mountPath"), "/etc/gcp/key.json", policy.RuleGCPServiceAccount)},
		},
		{name: "allow: gcp service account", obj: makeFC("c").GCPServiceAccount("gcp", "key.json", "/etc/gcp").Obj()},

		// deploymentType Deployment (CEL rules)
		{name: "allow: deploymentType Deployment application cluster with HA", obj: deploymentFC().Obj()},
		{
			name: "deny: deploymentType Deployment with a detached job",
			obj:  deploymentFC().JobMode(v1beta1.JobModeDetached).JarFile("job.jar").Obj(),
			want: field.ErrorList{invalid(path("spec", "job", "mode"), "Detached", policy.RuleDeploymentRequiresApplicationMode)},
		},
		{
			name: "deny: deploymentType Deployment with an unset job mode (Detached)",
			obj:  deploymentFC().NoJobMode().JarFile("job.jar").Obj(),
			want: field.ErrorList{invalid(path("spec", "job", "mode"), "", policy.RuleDeploymentRequiresApplicationMode)},
		},
		{
			name: "deny: deploymentType Deployment session cluster",
			obj:  deploymentFC().SessionCluster().Obj(),
			want: field.ErrorList{invalid(path("spec", "job", "mode"), "", policy.RuleDeploymentRequiresApplicationMode)},
		},
		{
			name: "deny: deploymentType Deployment without HA",
			obj:  makeFC("c").DeploymentType(deployment).Obj(),
			want: field.ErrorList{
				required(pathHAType, policy.RuleDeploymentRequiresHA),
				required(pathHAStorageDir, policy.RuleDeploymentRequiresHAStorageDir),
			},
		},
		{
			name: "deny: deploymentType Deployment with HA type NONE (case-insensitive)",
			obj:  deploymentFC().FlinkProperty(policy.PropertyHAType, "NONE").Obj(),
			want: field.ErrorList{required(pathHAType, policy.RuleDeploymentRequiresHA)},
		},
		{
			name: "deny: deploymentType Deployment with empty HA type and no legacy key",
			obj:  deploymentFC().FlinkProperty(policy.PropertyHAType, "").Obj(),
			want: field.ErrorList{required(pathHAType, policy.RuleDeploymentRequiresHA)},
		},
		{
			name:     "allow: deploymentType Deployment with the legacy HA key, with a warning",
			obj:      deploymentFC().DeleteFlinkProperty(policy.PropertyHAType).FlinkProperty(policy.PropertyHALegacy, "kubernetes").Obj(),
			warnings: []string{policy.WarningLegacyHAKey},
		},
		{
			name:     "deny: deploymentType Deployment with ZooKeeper HA in the legacy key",
			obj:      deploymentFC().DeleteFlinkProperty(policy.PropertyHAType).FlinkProperty(policy.PropertyHALegacy, "zookeeper").Obj(),
			want:     field.ErrorList{invalid(pathHAType, "zookeeper", policy.RuleDeploymentRequiresKubernetesHA)},
			warnings: []string{policy.WarningLegacyHAKey},
		},
		{
			name: "deny: deploymentType Deployment with a custom HA factory class",
			obj:  deploymentFC().FlinkProperty(policy.PropertyHAType, "org.example.MyHAServicesFactory").Obj(),
			want: field.ErrorList{invalid(pathHAType, "org.example.MyHAServicesFactory", policy.RuleDeploymentRequiresKubernetesHA)},
		},
		{
			name: "allow: deploymentType Deployment with the Kubernetes HA factory class",
			obj:  deploymentFC().FlinkProperty(policy.PropertyHAType, "org.apache.flink.kubernetes.highavailability.KubernetesHaServicesFactory").Obj(),
		},
		{
			name:     "allow: empty HA type falls back to the legacy key",
			obj:      deploymentFC().FlinkProperty(policy.PropertyHAType, "").FlinkProperty(policy.PropertyHALegacy, "kubernetes").Obj(),
			warnings: []string{policy.WarningLegacyHAKey},
		},
		{
			name:     "deny: HA type none wins over the legacy key",
			obj:      deploymentFC().FlinkProperty(policy.PropertyHAType, "none").FlinkProperty(policy.PropertyHALegacy, "kubernetes").Obj(),
			want:     field.ErrorList{required(pathHAType, policy.RuleDeploymentRequiresHA)},
			warnings: []string{policy.WarningLegacyHAKeyIgnored},
		},
		{
			name: "deny: deploymentType Deployment with an empty HA storageDir",
			obj:  deploymentFC().FlinkProperty(policy.PropertyHAStorageDir, "").Obj(),
			want: field.ErrorList{required(pathHAStorageDir, policy.RuleDeploymentRequiresHAStorageDir)},
		},
		{
			name: "deny: deploymentType Deployment with two JobManager replicas",
			obj:  deploymentFC().JobManagerReplicas(2).Obj(),
			want: field.ErrorList{invalid(path("spec", "jobManager", "replicas"), int32(2), policy.RuleDeploymentRequiresSingleJobManager)},
		},
		{name: "allow: deploymentType Deployment with one JobManager replica", obj: deploymentFC().JobManagerReplicas(1).Obj()},
		{
			name: "deny: deploymentType Deployment with shutdown-on-application-finish TRUE",
			obj:  deploymentFC().FlinkProperty(policy.PropertyShutdownOnApplicationFinish, "TRUE").Obj(),
			want: field.ErrorList{forbidden(pathShutdown, policy.RuleDeploymentForbidsShutdownOnFinish)},
		},
		{name: "allow: deploymentType Deployment with shutdown-on-application-finish false", obj: deploymentFC().FlinkProperty(policy.PropertyShutdownOnApplicationFinish, "false").Obj()},
		{
			name:     "allow: deploymentType Job with shutdown-on-application-finish True, with a warning that the controller overrides it",
			obj:      makeFC("c").DeploymentType(jobType).FlinkProperty(policy.PropertyShutdownOnApplicationFinish, "True").Obj(),
			warnings: []string{policy.WarningShutdownOnFinishOverridden},
		},
		{name: "allow: deploymentType Job with shutdown-on-application-finish false, no warning", obj: makeFC("c").DeploymentType(jobType).FlinkProperty(policy.PropertyShutdownOnApplicationFinish, "false").Obj()},
		{name: "allow: deploymentType Job session cluster without HA", obj: makeFC("c").DeploymentType(jobType).SessionCluster().Obj()},
		{
			name: "deny: deploymentType Deployment breaking every rule reports each",
			obj: makeFC("c").DeploymentType(deployment).SessionCluster().JobManagerReplicas(3).
				FlinkProperty(policy.PropertyShutdownOnApplicationFinish, "true").Obj(),
			want: field.ErrorList{
				invalid(path("spec", "job", "mode"), "", policy.RuleDeploymentRequiresApplicationMode),
				required(pathHAType, policy.RuleDeploymentRequiresHA),
				required(pathHAStorageDir, policy.RuleDeploymentRequiresHAStorageDir),
				invalid(path("spec", "jobManager", "replicas"), int32(3), policy.RuleDeploymentRequiresSingleJobManager),
				forbidden(pathShutdown, policy.RuleDeploymentForbidsShutdownOnFinish),
			},
		},
		{
			name:     "allow: restartPolicy FromSavepointOnFailure with deploymentType Deployment, with a warning",
			obj:      deploymentFC().RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).MaxStateAge(60).Obj(),
			warnings: []string{policy.WarningRestartPolicyWithDeployment},
		},

		// JobManager
		{
			name: "deny: JobManager replicas 2 with deploymentType Job",
			obj:  makeFC("c").JobManagerReplicas(2).Obj(),
			want: field.ErrorList{invalid(path("spec", "jobManager", "replicas"), int32(2), policy.RuleJobManagerReplicas)},
		},
		{
			name: "deny: terminationGracePeriodSeconds equal to preStopDelaySeconds",
			obj:  makeFC("c").Grace(30).PreStop(30).Obj(),
			want: field.ErrorList{invalid(path("spec", "jobManager", "terminationGracePeriodSeconds"), int64(30), policy.RuleGraceLongerThanPreStop)},
		},
		{name: "allow: terminationGracePeriodSeconds longer than preStopDelaySeconds", obj: makeFC("c").Grace(31).PreStop(30).Obj()},
		{name: "allow: only terminationGracePeriodSeconds", obj: makeFC("c").Grace(0).Obj()},
		{name: "allow: only preStopDelaySeconds", obj: makeFC("c").PreStop(100).Obj()},
		{
			name: "deny: unknown accessScope",
			obj:  makeFC("c").AccessScope("Internet").Obj(),
			want: field.ErrorList{notSupported(path("spec", "jobManager", "accessScope"), v1beta1.AccessScope("Internet"), policy.RuleAccessScope)},
		},
		{
			name: "deny: JobManager ports of 1024 and below",
			obj:  makeFC("c").JobManagerPorts(80, 6124, 1024, 8081).Obj(),
			want: field.ErrorList{
				invalid(path("spec", "jobManager", "ports", "rpc"), int32(80), policy.RulePort),
				invalid(path("spec", "jobManager", "ports", "query"), int32(1024), policy.RulePort),
			},
		},
		{name: "allow: JobManager port 1025", obj: makeFC("c").JobManagerPorts(1025, 6124, 6125, 8081).Obj()},
		{
			name: "deny: JobManager port equal to another port's default",
			obj:  makeFC("c").JobManager(func(jm *v1beta1.JobManagerSpec) { jm.Ports.Blob = ptr.To(int32(6123)) }).Obj(),
			want: field.ErrorList{duplicate(path("spec", "jobManager", "ports", "blob"), int32(6123))},
		},
		{
			name: "deny: JobManager extra port reusing a port number and a port name",
			obj: makeFC("c").JobManagerExtraPorts(
				v1beta1.NamedPort{Name: "metrics", ContainerPort: 8081},
				v1beta1.NamedPort{Name: "rpc", ContainerPort: 9249},
				v1beta1.NamedPort{Name: "metrics", ContainerPort: 9250},
			).Obj(),
			want: field.ErrorList{
				duplicate(path("spec", "jobManager", "extraPorts").Index(0).Child("containerPort"), int32(8081)),
				duplicate(path("spec", "jobManager", "extraPorts").Index(1).Child("name"), "rpc"),
				duplicate(path("spec", "jobManager", "extraPorts").Index(2).Child("name"), "metrics"),
			},
		},
		{
			name: "allow: the same extra port on the JobManager and the TaskManagers",
			obj: makeFC("c").JobManagerExtraPorts(v1beta1.NamedPort{Name: "metrics", ContainerPort: 9249}).
				TaskManagerExtraPorts(v1beta1.NamedPort{Name: "metrics", ContainerPort: 9249}).Obj(),
		},
		{name: "allow: unnamed extra ports", obj: makeFC("c").JobManagerExtraPorts(v1beta1.NamedPort{ContainerPort: 9249}, v1beta1.NamedPort{ContainerPort: 9250}).Obj()},
		{
			name: "deny: JobManager resources without cpu",
			obj:  makeFC("c").JobManagerResources(resources("", "1Gi")).Obj(),
			want: field.ErrorList{required(path("spec", "jobManager", "resources", "requests").Key("cpu"), policy.RuleResources)},
		},
		{
			name: "deny: TaskManager resources with zero memory",
			obj:  makeFC("c").TaskManagerResources(resources("1", "0")).Obj(),
			want: field.ErrorList{required(path("spec", "taskManager", "resources", "requests").Key("memory"), policy.RuleResources)},
		},
		{
			name: "allow: resources as requests only",
			obj: makeFC("c").JobManagerResources(corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
			}}).Obj(),
		},
		{name: "allow: empty resources (the defaults apply)", obj: makeFC("c").JobManagerResources(corev1.ResourceRequirements{Limits: corev1.ResourceList{}}).Obj()},
		{
			name: "deny: invalid JobManager pod annotation key",
			obj:  makeFC("c").JobManagerPodAnnotation("bad key!", "v").Obj(),
			want: field.ErrorList{invalid(path("spec", "jobManager", "podAnnotations"), "bad key!", policy.RulePodAnnotations)},
		},
		{
			name: "deny: invalid JobManager pod label value",
			obj:  makeFC("c").JobManagerPodLabel("app", "not a label value").Obj(),
			want: field.ErrorList{invalid(path("spec", "jobManager", "podLabels"), "not a label value", policy.RulePodLabels)},
		},
		{
			name: "deny: invalid TaskManager pod label key and job pod annotation key",
			obj: makeFC("c").
				TaskManager(func(tm *v1beta1.TaskManagerSpec) { tm.PodLabels = map[string]string{"-bad": "v"} }).
				Job(func(j *v1beta1.JobSpec) { j.PodAnnotations = map[string]string{"a/b/c": "v"} }).Obj(),
			want: field.ErrorList{
				invalid(path("spec", "taskManager", "podLabels"), "-bad", policy.RulePodLabels),
				invalid(path("spec", "job", "podAnnotations"), "a/b/c", policy.RulePodAnnotations),
			},
		},

		// memory model by Flink version
		{
			name: "deny: memoryProcessRatio with Flink 1.9",
			obj: makeFC("c").FlinkVersion("1.9.3").
				JobManager(func(jm *v1beta1.JobManagerSpec) { jm.MemoryProcessRatio = ptr.To(int32(80)) }).Obj(),
			want: field.ErrorList{forbidden(path("spec", "jobManager", "memoryProcessRatio"), policy.RuleMemory)},
		},
		{
			name: "deny: memoryOffHeapRatio above 100 with Flink 1.9",
			obj: makeFC("c").FlinkVersion("1.9").
				TaskManager(func(tm *v1beta1.TaskManagerSpec) { tm.MemoryOffHeapRatio = ptr.To(int32(101)) }).Obj(),
			want: field.ErrorList{invalid(path("spec", "taskManager", "memoryOffHeapRatio"), int32(101), policy.RuleMemory)},
		},
		{
			name: "deny: memoryOffHeapMin above the memory limit with Flink 1.9",
			obj: makeFC("c").FlinkVersion("1.9").
				JobManager(func(jm *v1beta1.JobManagerSpec) { jm.MemoryOffHeapMin = resource.MustParse("3Gi") }).Obj(),
			want: field.ErrorList{invalid(path("spec", "jobManager", "memoryOffHeapMin"), "3Gi", policy.RuleMemory)},
		},
		{
			name: "deny: unset memoryOffHeapMin (600M) above a 512Mi limit with Flink 1.9",
			obj:  makeFC("c").FlinkVersion("1.9").TaskManagerResources(resources("1", "512Mi")).Obj(),
			want: field.ErrorList{invalid(path("spec", "taskManager", "memoryOffHeapMin"), "600M", policy.RuleMemory)},
		},
		{
			name: "deny: memoryOffHeapMin 0 is unset (600M) with Flink 1.9, as it does not survive serialization",
			obj: makeFC("c").FlinkVersion("1.9").TaskManagerResources(resources("1", "512Mi")).
				TaskManager(func(tm *v1beta1.TaskManagerSpec) { tm.MemoryOffHeapMin = resource.MustParse("0") }).Obj(),
			want: field.ErrorList{invalid(path("spec", "taskManager", "memoryOffHeapMin"), "600M", policy.RuleMemory)},
		},
		{
			name: "allow: memoryOffHeapMin under the memory limit with Flink 1.9",
			obj: makeFC("c").FlinkVersion("1.9").TaskManagerResources(resources("1", "512Mi")).
				TaskManager(func(tm *v1beta1.TaskManagerSpec) { tm.MemoryOffHeapMin = resource.MustParse("256Mi") }).Obj(),
		},
		{
			name: "deny: off-heap settings with Flink 1.10, the version boundary",
			obj: makeFC("c").FlinkVersion("1.10").
				JobManager(func(jm *v1beta1.JobManagerSpec) {
					jm.MemoryOffHeapRatio = ptr.To(int32(25))
					jm.MemoryOffHeapMin = resource.MustParse("600M")
				}).Obj(),
			want: field.ErrorList{
				forbidden(path("spec", "jobManager", "memoryOffHeapRatio"), policy.RuleMemory),
				forbidden(path("spec", "jobManager", "memoryOffHeapMin"), policy.RuleMemory),
			},
		},
		{
			name: "deny: negative memoryProcessRatio with Flink 2.2",
			obj:  makeFC("c").TaskManager(func(tm *v1beta1.TaskManagerSpec) { tm.MemoryProcessRatio = ptr.To(int32(-1)) }).Obj(),
			want: field.ErrorList{invalid(path("spec", "taskManager", "memoryProcessRatio"), int32(-1), policy.RuleMemory)},
		},
		{
			name: "allow: memoryOffHeapMin 0 with Flink 1.17 (as the reference operator serializes it)",
			obj:  makeFC("c").FlinkVersion("1.17").JobManager(func(jm *v1beta1.JobManagerSpec) { jm.MemoryOffHeapMin = resource.MustParse("0") }).Obj(),
		},

		// TaskManager
		{
			name: "deny: zero TaskManager replicas",
			obj:  makeFC("c").TaskManagerReplicas(0).Obj(),
			want: field.ErrorList{invalid(path("spec", "taskManager", "replicas"), int32(0), policy.RuleTaskManagerReplicas)},
		},
		{
			name: "deny: TaskManager ports of 1024 and duplicates",
			obj:  makeFC("c").TaskManagerPorts(1024, 6122, 6122).Obj(),
			want: field.ErrorList{
				invalid(path("spec", "taskManager", "ports", "data"), int32(1024), policy.RulePort),
				duplicate(path("spec", "taskManager", "ports", "query"), int32(6122)),
			},
		},

		// job (CEL rules on JobSpec and the reference's enums)
		{
			name: "deny: parallelism 0",
			obj:  makeFC("c").Parallelism(0).Obj(),
			want: field.ErrorList{invalid(path("spec", "job", "parallelism"), int32(0), policy.RuleJobParallelism)},
		},
		{name: "allow: parallelism 1", obj: makeFC("c").Parallelism(1).Obj()},
		{
			name: "deny: savepointsToKeep 0",
			obj:  makeFC("c").SavepointsDir("s3://b/sp").Job(func(j *v1beta1.JobSpec) { j.SavepointsToKeep = ptr.To[int32](0) }).Obj(),
			want: field.ErrorList{invalid(path("spec", "job", "savepointsToKeep"), int32(0), policy.RuleSavepointsToKeep)},
		},
		{
			name: "deny: savepointsToKeep 11, more than the history holds",
			obj:  makeFC("c").SavepointsDir("s3://b/sp").Job(func(j *v1beta1.JobSpec) { j.SavepointsToKeep = ptr.To[int32](11) }).Obj(),
			want: field.ErrorList{invalid(path("spec", "job", "savepointsToKeep"), int32(11), policy.RuleSavepointsToKeep)},
		},
		{name: "allow: savepointsToKeep 1", obj: makeFC("c").SavepointsDir("s3://b/sp").Job(func(j *v1beta1.JobSpec) { j.SavepointsToKeep = ptr.To[int32](1) }).Obj()},
		{name: "allow: savepointsToKeep 10", obj: makeFC("c").SavepointsDir("s3://b/sp").Job(func(j *v1beta1.JobSpec) { j.SavepointsToKeep = ptr.To[int32](10) }).Obj()},
		{
			name: "deny: detached job without jarFile, pyFile or pyModule",
			obj:  makeFC("c").JobMode(v1beta1.JobModeDetached).Obj(),
			want: field.ErrorList{required(path("spec", "job", "jarFile"), policy.RuleJobArtifact)},
		},
		{
			name: "deny: job with unset mode (Detached) and no artifact",
			obj:  makeFC("c").NoJobMode().Obj(),
			want: field.ErrorList{required(path("spec", "job", "jarFile"), policy.RuleJobArtifact)},
		},
		{name: "allow: blocking job with pyFile", obj: makeFC("c").JobMode(v1beta1.JobModeBlocking).PyFile("job.py").Obj()},
		{name: "allow: detached job with pyModule", obj: makeFC("c").JobMode(v1beta1.JobModeDetached).PyModule("word_count").Obj()},
		{name: "allow: detached job with an empty jarFile (set counts, as in CEL has())", obj: makeFC("c").JobMode(v1beta1.JobModeDetached).JarFile("").Obj()},
		{
			name: "deny: restartPolicy FromSavepointOnFailure without maxStateAgeToRestoreSeconds",
			obj:  makeFC("c").RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).Obj(),
			want: field.ErrorList{required(path("spec", "job", "maxStateAgeToRestoreSeconds"), policy.RuleRestartRequiresMaxStateAge)},
		},
		{name: "allow: restartPolicy FromSavepointOnFailure with maxStateAgeToRestoreSeconds", obj: makeFC("c").RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).MaxStateAge(0).Obj()},
		{
			name: "deny: takeSavepointOnUpdate false without maxStateAgeToRestoreSeconds",
			obj:  makeFC("c").TakeSavepointOnUpdate(false).Obj(),
			want: field.ErrorList{required(path("spec", "job", "maxStateAgeToRestoreSeconds"), policy.RuleSkipSavepointRequiresMaxStateAge)},
		},
		{
			name: "deny: both rules needing maxStateAgeToRestoreSeconds report on the same field",
			obj:  makeFC("c").TakeSavepointOnUpdate(false).RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).Obj(),
			want: field.ErrorList{
				required(path("spec", "job", "maxStateAgeToRestoreSeconds"), policy.RuleRestartRequiresMaxStateAge),
				required(path("spec", "job", "maxStateAgeToRestoreSeconds"), policy.RuleSkipSavepointRequiresMaxStateAge),
			},
		},
		{name: "allow: takeSavepointOnUpdate true without maxStateAgeToRestoreSeconds", obj: makeFC("c").TakeSavepointOnUpdate(true).Obj()},
		{
			name: "deny: cancelRequested true on a new job",
			obj:  makeFC("c").CancelRequested(true).Obj(),
			want: field.ErrorList{forbidden(path("spec", "job", "cancelRequested"), policy.RuleCancelOnCreate)},
		},
		{name: "allow: cancelRequested false on a new job", obj: makeFC("c").CancelRequested(false).Obj()},
		{
			name: "deny: unknown restartPolicy, cleanup actions and job mode",
			obj:  makeFC("c").RestartPolicy("Always").CleanupPolicy("Nothing", "", "Wipe").JobMode("Streaming").JarFile("job.jar").Obj(),
			want: field.ErrorList{
				notSupported(path("spec", "job", "restartPolicy"), v1beta1.JobRestartPolicy("Always"), policy.RuleRestartPolicy),
				notSupported(path("spec", "job", "cleanupPolicy", "afterJobSucceeds"), v1beta1.CleanupAction("Nothing"), policy.RuleCleanupPolicy),
				notSupported(path("spec", "job", "cleanupPolicy", "afterJobCancelled"), v1beta1.CleanupAction("Wipe"), policy.RuleCleanupPolicy),
				notSupported(path("spec", "job", "mode"), v1beta1.JobMode("Streaming"), policy.RuleJobMode),
			},
		},

		// nil safety: unset means default, and nothing panics
		{name: "allow: nil jobManager and taskManager", obj: makeFC("c").NilJobManager().NilTaskManager().Obj()},
		{name: "allow: session cluster (nil job)", obj: makeFC("c").SessionCluster().NilJobManager().NilTaskManager().Obj()},
		{name: "allow: empty jobManager and taskManager (zero ports, nil replicas)", obj: makeFC("c").JobManager(func(*v1beta1.JobManagerSpec) {}).TaskManager(func(*v1beta1.TaskManagerSpec) {}).Obj()},
		{name: "allow: empty job cleanupPolicy", obj: makeFC("c").CleanupPolicy("", "", "").Obj()},
		{
			name: "deny: empty FlinkCluster lists what is missing",
			obj:  &v1beta1.FlinkCluster{},
			want: field.ErrorList{
				invalid(path("metadata", "name"), "", policy.RuleNameDNS1035),
				required(path("metadata", "namespace"), policy.RuleNamespace),
				required(path("spec", "flinkVersion"), policy.RuleFlinkVersion),
				required(path("spec", "image", "name"), policy.RuleImage),
			},
		},
		{
			name: "deny: nil object fails closed",
			obj:  nil,
			want: field.ErrorList{{Type: field.ErrorTypeInternal, Origin: policy.RuleNoObject}},
		},

		// warnings
		{
			name:     "allow: autoSavepointSeconds without savepointsDir, with a warning that no savepoint is taken",
			obj:      makeFC("c").Job(func(j *v1beta1.JobSpec) { j.SavepointsDir = nil; j.AutoSavepointSeconds = ptr.To[int32](3600) }).Obj(),
			warnings: []string{fmt.Sprintf(policy.WarningSavepointsWithoutDirFormat, "autoSavepointSeconds")},
		},
		{
			name:     "allow: savepointsToKeep without savepointsDir, with a warning",
			obj:      makeFC("c").Job(func(j *v1beta1.JobSpec) { j.SavepointsDir = nil; j.SavepointsToKeep = ptr.To[int32](3) }).Obj(),
			warnings: []string{fmt.Sprintf(policy.WarningSavepointsWithoutDirFormat, "savepointsToKeep")},
		},
		{name: "allow: autoSavepointSeconds with savepointsDir, no warning", obj: makeFC("c").SavepointsDir("s3://b/sp").Job(func(j *v1beta1.JobSpec) { j.AutoSavepointSeconds = ptr.To[int32](3600) }).Obj()},
		{
			name:     "allow: batchSchedulerName, with a deprecation warning and Volcano's",
			obj:      makeFC("c").BatchSchedulerName("volcano").Obj(),
			warnings: []string{policy.WarningBatchSchedulerName, policy.WarningVolcanoNoGang},
		},
		{
			name: "allow: Volcano with a queue, warned that the cluster is not gang-scheduled",
			obj: makeFC("c").Spec(func(s *v1beta1.FlinkClusterSpec) {
				s.BatchScheduler = &v1beta1.BatchSchedulerSpec{Name: "volcano", Queue: "etl", PriorityClassName: "high"}
			}).Obj(),
			warnings: []string{policy.WarningVolcanoNoGang},
		},
		{
			name: "allow: another batch scheduler, no warning",
			obj: makeFC("c").Spec(func(s *v1beta1.FlinkClusterSpec) {
				s.BatchScheduler = &v1beta1.BatchSchedulerSpec{Name: "yunikorn"}
			}).Obj(),
		},
		{
			name:     "allow: legacy HA key on a Job cluster, with a warning",
			obj:      makeFC("c").FlinkProperty(policy.PropertyHALegacy, "zookeeper").FlinkProperty(policy.PropertyHAStorageDir, "s3://b").Obj(),
			warnings: []string{policy.WarningLegacyHAKey},
		},
		{
			name:     "allow: both HA keys, with a warning that the legacy one is ignored",
			obj:      deploymentFC().FlinkProperty(policy.PropertyHALegacy, "zookeeper").Obj(),
			warnings: []string{policy.WarningLegacyHAKeyIgnored},
		},
		{
			name: "allow: allowNonRestoredState on Flink 2.2 in Job mode, no warning: the savepoint is on the command line",
			obj:  makeFC("c").FlinkVersion("2.2.1").AllowNonRestoredState(true).Obj(),
		},
		{
			name: "allow: allowNonRestoredState on Flink 1.20 in Deployment mode with HA, no warning: the restore path variable is on the command line",
			obj:  deploymentFC().FlinkVersion("1.20").AllowNonRestoredState(true).Obj(),
		},
		{
			name: "allow: allowNonRestoredState on Flink 2.3 in Deployment mode with HA, no warning",
			obj:  deploymentFC().FlinkVersion("2.3.0").AllowNonRestoredState(true).Obj(),
		},
		{
			name: "allow: allowNonRestoredState on Flink 2.3, no warning",
			obj:  makeFC("c").FlinkVersion("2.3.0").AllowNonRestoredState(true).Obj(),
		},
		{
			name: "allow: allowNonRestoredState false on Flink 2.2, no warning",
			obj:  makeFC("c").FlinkVersion("2.2.1").AllowNonRestoredState(false).Obj(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var before *v1beta1.FlinkCluster
			if tc.obj != nil {
				before = tc.obj.DeepCopy()
			}
			errs, warnings := policy.ValidateCreate(tc.obj)
			checkErrors(t, tc.want, errs)
			checkWarnings(t, tc.warnings, warnings)
			if tc.obj != nil && !equalObjects(before, tc.obj) {
				t.Error("ValidateCreate changed its argument")
			}
		})
	}
}

func equalObjects(a, b *v1beta1.FlinkCluster) bool {
	return equality.Semantic.DeepEqual(a, b)
}
