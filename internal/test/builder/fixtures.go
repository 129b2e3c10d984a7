package builder

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// Fixture is a named, valid FlinkCluster covering one kind of cluster.
type Fixture struct {
	// Name says what kind of cluster it is, for test names.
	Name string
	// Obj is the cluster; each call of Fixtures returns fresh objects.
	Obj *v1beta1.FlinkCluster
}

// Fixtures returns one valid cluster of each kind the project supports: application
// clusters with either JobManager workload, per-job clusters in each submit mode, a Python
// job, a session cluster, an old (pre-1.10 memory model) Flink and a TaskManager Deployment.
// Tests that must hold for every cluster (defaulting is idempotent, defaulted objects
// validate) run over all of them. Every job cluster has a savepointsDir, so that each
// fixture can also be updated.
func Fixtures() []Fixture {
	const ns = "default"
	return []Fixture{
		{"application cluster, deploymentType unset", MakeFlinkCluster("app-minimal", ns).Obj()},
		{"application cluster, deploymentType Job", MakeFlinkCluster("app-job", ns).
			DeploymentType(v1beta1.JobManagerDeploymentTypeJob).JarFile("local:///opt/flink/usrlib/job.jar").Obj()},
		{"application cluster, deploymentType Deployment with HA", MakeFlinkCluster("app-ha", ns).
			DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).HA().Obj()},
		{"application cluster, Deployment with tuned shutdown", MakeFlinkCluster("app-ha-tuned", ns).
			DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).HA().
			Grace(120).PreStop(20).
			FlinkProperty("execution.shutdown-on-application-finish", "false").Obj()},
		{"detached job cluster with jar and restart from savepoint", MakeFlinkCluster("wordcount", ns).
			JobMode(v1beta1.JobModeDetached).JarFile("./examples/streaming/WordCount.jar").
			ClassName("org.apache.flink.streaming.examples.wordcount.WordCount").
			Parallelism(2).RestartPolicy(v1beta1.JobRestartPolicyFromSavepointOnFailure).MaxStateAge(600).
			TaskManagerReplicas(2).
			JobManagerResources(limits("500m", "2Gi")).TaskManagerResources(limits("500m", "2Gi")).
			FlinkProperty("taskmanager.numberOfTaskSlots", "1").Obj()},
		{"blocking python job cluster", MakeFlinkCluster("pyjob", ns).
			JobMode(v1beta1.JobModeBlocking).PyFile("/opt/flink/examples/python/word_count.py").
			TakeSavepointOnUpdate(false).MaxStateAge(300).Obj()},
		{"session cluster", MakeFlinkCluster("session", ns).SessionCluster().
			AccessScope(v1beta1.AccessScopeVPC).TaskManagerReplicas(2).Obj()},
		{"flink 1.9 job cluster with off-heap memory settings", MakeFlinkCluster("legacy", ns).
			FlinkVersion("1.9.3").Image("flink:1.9.3").NoJobMode().JarFile("./examples/streaming/WordCount.jar").
			JobManager(func(jm *v1beta1.JobManagerSpec) {
				jm.MemoryOffHeapRatio = ptr.To(int32(25))
				jm.MemoryOffHeapMin = resource.MustParse("600M")
			}).Obj()},
		{"taskManager deploymentType Deployment", MakeFlinkCluster("tm-deploy", ns).
			TaskManagerDeploymentType(v1beta1.TaskManagerDeploymentTypeDeployment).Obj()},
	}
}

// limits returns resources with only cpu and memory limits, as the reference samples set them.
func limits(cpu, memory string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Limits: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
	}}
}
