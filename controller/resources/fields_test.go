package resources_test

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// loadFixture reads a FlinkCluster of testdata/operator: clusters in the shape of the
// flink-on-k8s-operator's samples, as the API server stores them (with the memory settings
// the mutating webhook writes; this package does not use the admission policy's code).
func loadFixture(t *testing.T, name string) *v1beta1.FlinkCluster {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "operator", name))
	require.NoError(t, err)
	fc := &v1beta1.FlinkCluster{}
	require.NoError(t, yaml.UnmarshalStrict(b, fc))
	return fc
}

// renderedConf is the Flink configuration file of the cluster's ConfigMap, parsed.
func renderedConf(t *testing.T, fc *v1beta1.FlinkCluster) map[string]string {
	t.Helper()
	cm, err := resources.ConfigMap(fc, resources.Deploy{Revision: fc.Name + "-r1", JobID: testJobID})
	require.NoError(t, err)
	text := cm.Data[resources.ConfigFileName(fc)]
	conf := map[string]string{}
	if resources.ConfigFileName(fc) == "config.yaml" {
		require.NoError(t, yaml.Unmarshal([]byte(text), &conf))
		return conf
	}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		k, v, ok := strings.Cut(line, ": ")
		require.True(t, ok, line)
		conf[k] = v
	}
	return conf
}

// The operator's formulas, written out as its converter computes them (floating point,
// ceilings), to check the controller's integer arithmetic against.
func operatorProcessSize(mem resource.Quantity, ratio int32) string {
	size := math.Ceil(float64(mem.Value()*int64(ratio)) / 100)
	return strconv.FormatInt(int64(math.Ceil(size/float64(1<<20))), 10) + "m"
}

func operatorHeapSize(mem, offHeapMin resource.Quantity, ratio int32) string {
	off := int64(math.Ceil(float64(mem.Value()*int64(ratio)) / 100))
	if off < offHeapMin.Value() {
		off = offHeapMin.Value()
	}
	return strconv.FormatInt(int64(math.Ceil(float64(mem.Value()-off)/float64(1<<20))), 10) + "m"
}

func operatorSlots(fc *v1beta1.FlinkCluster) int32 {
	if v, ok := fc.Spec.FlinkProperties["taskmanager.numberOfTaskSlots"]; ok {
		n, _ := strconv.Atoi(v)
		return int32(n)
	}
	cpu := fc.Spec.TaskManager.Resources.Limits.Cpu()
	if cpu.IsZero() {
		cpu = fc.Spec.TaskManager.Resources.Requests.Cpu()
	}
	return max(int32(cpu.Value())/2, 1)
}

func memoryOf(r corev1.ResourceRequirements) resource.Quantity {
	if m := r.Limits.Memory(); !m.IsZero() {
		return *m
	}
	return *r.Requests.Memory()
}

func TestMemorySlotsAndParallelismFollowTheOperatorsFormulas(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		// want are the values worked out by hand; the operator's formulas must agree.
		want map[string]string
		// absent keys belong to the other memory model.
		absent []string
	}{
		{"job-cluster-1.14.yaml", map[string]string{
			// 2048 Mi × 80 % = 1638.4 Mi, rounded up.
			"jobmanager.memory.process.size": "1639m", "taskmanager.memory.process.size": "1639m",
			"taskmanager.numberOfTaskSlots": "1", "parallelism.default": "2",
		}, []string{"jobmanager.heap.size", "taskmanager.heap.size"}},
		{"slots-from-cpu-2.1.yaml", map[string]string{
			// JobManager: 1.5 Gi requested (no limit) × 75 % = 1152 Mi. TaskManager:
			// 3000 M × 90 % = 2.7e9 B = 2574.9 Mi. Six CPUs: three slots, 3 × 3 parallelism.
			"jobmanager.memory.process.size": "1152m", "taskmanager.memory.process.size": "2575m",
			"taskmanager.numberOfTaskSlots": "3", "parallelism.default": "9",
		}, []string{"jobmanager.heap.size", "taskmanager.heap.size"}},
		{"legacy-heap-1.9.yaml", map[string]string{
			// JobManager: 1 Gi less max(25 % = 256 Mi, 600 M) = 473741824 B = 451.8 Mi.
			// TaskManager: 4 Gi less max(10 %, 900 Mi) = 3196 Mi exactly.
			"jobmanager.heap.size": "452m", "taskmanager.heap.size": "3196m",
			"taskmanager.numberOfTaskSlots": "2", "parallelism.default": "2",
		}, []string{"jobmanager.memory.process.size", "taskmanager.memory.process.size"}},
		{"remote-jar-1.20.yaml", map[string]string{
			// 1 Gi × 80 % = 819.2 Mi; 2 Gi × 80 % = 1638.4 Mi; two CPUs make one slot.
			"jobmanager.memory.process.size": "820m", "taskmanager.memory.process.size": "1639m",
			"taskmanager.numberOfTaskSlots": "1", "parallelism.default": "2",
		}, []string{"jobmanager.heap.size", "taskmanager.heap.size"}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			fc := loadFixture(t, tc.fixture)
			conf := renderedConf(t, fc)
			for k, v := range tc.want {
				assert.Equal(t, v, conf[k], k)
			}
			for _, k := range tc.absent {
				assert.NotContains(t, conf, k)
			}

			jm, tm := fc.Spec.JobManager, fc.Spec.TaskManager
			if jm.MemoryProcessRatio != nil {
				assert.Equal(t, operatorProcessSize(memoryOf(jm.Resources), *jm.MemoryProcessRatio), conf["jobmanager.memory.process.size"])
				assert.Equal(t, operatorProcessSize(memoryOf(tm.Resources), *tm.MemoryProcessRatio), conf["taskmanager.memory.process.size"])
			} else {
				assert.Equal(t, operatorHeapSize(memoryOf(jm.Resources), jm.MemoryOffHeapMin, *jm.MemoryOffHeapRatio), conf["jobmanager.heap.size"])
				assert.Equal(t, operatorHeapSize(memoryOf(tm.Resources), tm.MemoryOffHeapMin, *tm.MemoryOffHeapRatio), conf["taskmanager.heap.size"])
			}
			slots := operatorSlots(fc)
			assert.Equal(t, strconv.Itoa(int(slots)), conf["taskmanager.numberOfTaskSlots"])
			par := tm.GetReplicas() * slots
			if p := fc.Spec.Job.Parallelism; p != nil {
				par = *p
			}
			assert.Equal(t, strconv.Itoa(int(par)), conf["parallelism.default"])
		})
	}
}

func TestDerivedConfigurationAndTheUsersProperties(t *testing.T) {
	for _, tc := range []struct {
		name string
		fc   *v1beta1.FlinkCluster
		want map[string]string
	}{
		{"the user's process size wins over the ratio's",
			builder.MakeAppCluster("wc").FlinkProperty("taskmanager.memory.process.size", "3g").Obj(),
			map[string]string{"taskmanager.memory.process.size": "3g"}},
		{"spec.job.parallelism wins over parallelism.default, as on the operator's command line",
			builder.MakeAppCluster("wc").FlinkProperty("parallelism.default", "7").Job(func(j *v1beta1.JobSpec) { j.Parallelism = ptr.To[int32](4) }).Obj(),
			map[string]string{"parallelism.default": "4"}},
		{"a slot count that is not a number derives no slots and no parallelism",
			builder.MakeAppCluster("wc").FlinkProperty("taskmanager.numberOfTaskSlots", "many").Obj(),
			map[string]string{"taskmanager.numberOfTaskSlots": "many", "parallelism.default": ""}},
		{"less than two CPUs make one slot",
			builder.MakeAppCluster("wc").DeleteFlinkProperty("taskmanager.numberOfTaskSlots").TaskManagerResources(corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			}).TaskManagerReplicas(5).Obj(),
			map[string]string{"taskmanager.numberOfTaskSlots": "1", "parallelism.default": "5"}},
		{"no memory limit or request: no process size rather than a zero one",
			builder.MakeAppCluster("wc").TaskManagerResources(corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			}).JobManagerResources(corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
			}).Obj(),
			map[string]string{"taskmanager.memory.process.size": "", "jobmanager.memory.process.size": "1639m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The ratio the mutating webhook writes.
			tc.fc.Spec.JobManager.MemoryProcessRatio = ptr.To[int32](80)
			tc.fc.Spec.TaskManager.MemoryProcessRatio = ptr.To[int32](80)
			conf := renderedConf(t, tc.fc)
			for k, v := range tc.want {
				assert.Equal(t, v, conf[k], k)
			}
		})
	}
}

func TestLogConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, version string
		user          map[string]string
		wantConsole   string // a line the console file must hold
	}{
		{"Flink 2: Log4j 2 defaults for every file not given", "2.1", nil, "rootLogger.level = INFO"},
		{"Flink 1.10: Log4j 1 defaults", "1.10", nil, "log4j.rootLogger=INFO, console"},
		{"the user's file is kept, the others defaulted", "1.20", map[string]string{resources.LogFileConsole: "rootLogger.level = WARN"}, "rootLogger.level = WARN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := builder.MakeAppCluster("wc").FlinkVersion(tc.version).Obj()
			fc.Spec.LogConfig = tc.user
			cm, err := resources.ConfigMap(fc, resources.Deploy{})
			require.NoError(t, err)
			assert.Contains(t, cm.Data[resources.LogFileConsole], tc.wantConsole)
			assert.Contains(t, cm.Data[resources.LogFileCLI], "INFO")
			assert.Contains(t, cm.Data[resources.LogFileLogbackConsole], `<root level="INFO">`)
			assert.Len(t, fc.Spec.LogConfig, len(tc.user), "the spec is not changed")
		})
	}
}

func TestInitContainersGetTheClusterEnvironmentAndMounts(t *testing.T) {
	fc := loadFixture(t, "remote-jar-1.20.yaml")
	pod := resources.JobManagerPodTemplate(fc, resources.Deploy{Revision: "r1", JobID: testJobID}).Spec
	require.Len(t, pod.InitContainers, 1)
	ic := pod.InitContainers[0]
	env := map[string]string{}
	for _, e := range ic.Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, map[string]string{
		"BUCKET":                         "gs://override", // the container's own variable wins
		"HADOOP_CONF_DIR":                "/etc/hadoop/conf",
		"GOOGLE_APPLICATION_CREDENTIALS": "/etc/gcp/keys/key.json",
	}, env)
	mounts := map[string]string{}
	for _, m := range ic.VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	assert.Equal(t, map[string]string{
		"/cache": "jars", "/opt/flink/conf": "flink-config", "/etc/hadoop/conf": "hadoop-config", "/etc/gcp/keys": "gcp-service-account",
	}, mounts)
	assert.Equal(t, []string{"gsutil"}, ic.Command, "the rest of the container is the user's")
	assert.Len(t, fc.Spec.JobManager.InitContainers[0].VolumeMounts, 1, "the spec is not changed")

	tmFC := builder.MakeAppCluster("wc").Obj()
	tmFC.Spec.EnvVars = []corev1.EnvVar{{Name: "A", Value: "b"}}
	tmFC.Spec.TaskManager.InitContainers = []corev1.Container{{Name: "wait", Image: "busybox"}}
	tmInit := resources.TaskManagerPodTemplate(tmFC, "r1").Spec.InitContainers
	require.Len(t, tmInit, 1)
	assert.Contains(t, tmInit[0].Env, corev1.EnvVar{Name: "A", Value: "b"}, "TaskManager init containers too")
	assert.Contains(t, tmInit[0].VolumeMounts, corev1.VolumeMount{Name: "flink-config", MountPath: "/opt/flink/conf"})
}

func TestAccessScopes(t *testing.T) {
	for _, tc := range []struct {
		scope    v1beta1.AccessScope
		user     map[string]string
		wantType corev1.ServiceType
		wantAnn  map[string]string
	}{
		{v1beta1.AccessScopeCluster, nil, corev1.ServiceTypeClusterIP, nil},
		{v1beta1.AccessScopeExternal, nil, corev1.ServiceTypeLoadBalancer, nil},
		{v1beta1.AccessScopeVPC, nil, corev1.ServiceTypeLoadBalancer, resources.InternalLoadBalancerAnnotations()},
		{v1beta1.AccessScopeVPC, map[string]string{"networking.gke.io/internal-load-balancer-allow-global-access": "false", "team": "a"},
			corev1.ServiceTypeLoadBalancer, func() map[string]string {
				a := resources.InternalLoadBalancerAnnotations()
				a["networking.gke.io/internal-load-balancer-allow-global-access"] = "false"
				a["team"] = "a"
				return a
			}()},
		{v1beta1.AccessScopeNodePort, nil, corev1.ServiceTypeNodePort, nil},
	} {
		t.Run(string(tc.scope), func(t *testing.T) {
			fc := builder.MakeAppCluster("wc").AccessScope(tc.scope).Obj()
			fc.Spec.JobManager.ServiceAnnotations = tc.user
			svc := resources.Service(fc, "r1")
			assert.Equal(t, tc.wantType, svc.Spec.Type)
			assert.Equal(t, tc.wantAnn, svc.Annotations)
		})
	}
	ann := resources.InternalLoadBalancerAnnotations()
	assert.Equal(t, "Internal", ann["networking.gke.io/load-balancer-type"], "GKE, as the operator writes it")
	assert.Equal(t, "true", ann["service.beta.kubernetes.io/aws-load-balancer-internal"], "AWS")
	assert.Equal(t, "true", ann["service.beta.kubernetes.io/azure-load-balancer-internal"], "Azure")
}

func TestVolumeClaimTemplates(t *testing.T) {
	claim := corev1.PersistentVolumeClaim{}
	claim.Name = "scratch"
	claim.Labels = map[string]string{"tier": "ssd"}
	claim.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	claim.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}
	fc := builder.MakeAppCluster("wc").UID("uid-1").Obj()
	fc.Spec.TaskManager.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claim}
	fc.Spec.JobManager.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{claim}

	t.Run("StatefulSet: claims owned by the cluster, garbage-collected with it", func(t *testing.T) {
		sts := resources.TaskManagerStatefulSet(fc, "r1")
		require.Len(t, sts.Spec.VolumeClaimTemplates, 1)
		c := sts.Spec.VolumeClaimTemplates[0]
		require.Len(t, c.OwnerReferences, 1)
		assert.Equal(t, "wc", c.OwnerReferences[0].Name)
		assert.Equal(t, v1beta1.Kind, c.OwnerReferences[0].Kind)
		assert.Equal(t, ptr.To(true), c.OwnerReferences[0].Controller)
		assert.Empty(t, fc.Spec.TaskManager.VolumeClaimTemplates[0].OwnerReferences, "the spec is not changed")
		for _, v := range sts.Spec.Template.Spec.Volumes {
			assert.NotEqual(t, "scratch", v.Name, "no ephemeral volume beside the claim")
		}
	})
	ephemeral := func(t *testing.T, vols []corev1.Volume, podLabels map[string]string) {
		t.Helper()
		var found *corev1.Volume
		for i := range vols {
			if vols[i].Name == "scratch" {
				found = &vols[i]
			}
		}
		require.NotNil(t, found, "the claim template became a volume of the pod")
		require.NotNil(t, found.Ephemeral)
		tmpl := found.Ephemeral.VolumeClaimTemplate
		assert.Equal(t, claim.Spec, tmpl.Spec)
		assert.Equal(t, "ssd", tmpl.Labels["tier"])
		for k, v := range podLabels {
			assert.Equal(t, v, tmpl.Labels[k], "the claim carries the pod's labels")
		}
	}
	t.Run("TaskManager Deployment: an ephemeral volume per claim template", func(t *testing.T) {
		dep := resources.TaskManagerDeployment(fc, "r1")
		ephemeral(t, dep.Spec.Template.Spec.Volumes, dep.Spec.Template.Labels)
	})
	t.Run("JobManager Job and Deployment: ephemeral volumes", func(t *testing.T) {
		d := resources.Deploy{Revision: "r1", JobID: testJobID}
		job := resources.JobManagerJob(fc, d)
		ephemeral(t, job.Spec.Template.Spec.Volumes, job.Spec.Template.Labels)
		dep := resources.JobManagerDeployment(fc, d, 1)
		ephemeral(t, dep.Spec.Template.Spec.Volumes, dep.Spec.Template.Labels)
	})
}

func TestBatchSchedulerQueueAndPriorityClass(t *testing.T) {
	fc := builder.MakeAppCluster("wc").Obj()
	fc.Spec.BatchScheduler = &v1beta1.BatchSchedulerSpec{Name: "volcano", Queue: "etl", PriorityClassName: "high"}
	fc.Spec.TaskManager.PodAnnotations = map[string]string{resources.VolcanoQueueAnnotation: "mine"}
	jm := resources.JobManagerPodTemplate(fc, resources.Deploy{Revision: "r1", JobID: testJobID})
	tm := resources.TaskManagerPodTemplate(fc, "r1")
	for name, p := range map[string]corev1.PodTemplateSpec{"JobManager": jm, "TaskManager": tm} {
		assert.Equal(t, "volcano", p.Spec.SchedulerName, name)
		assert.Equal(t, "high", p.Spec.PriorityClassName, name)
	}
	assert.Equal(t, "etl", jm.Annotations[resources.VolcanoQueueAnnotation], "the queue of the pod group Volcano makes")
	assert.Equal(t, "mine", tm.Annotations[resources.VolcanoQueueAnnotation], "the user's pod annotation wins")

	plain := builder.MakeAppCluster("wc").Obj()
	p := resources.TaskManagerPodTemplate(plain, "r1")
	assert.Empty(t, p.Spec.PriorityClassName)
	assert.NotContains(t, p.Annotations, resources.VolcanoQueueAnnotation)
}

func TestIngress(t *testing.T) {
	assert.Nil(t, resources.Ingress(builder.MakeAppCluster("wc").Obj(), "r1"), "none unless asked for")
	for _, tc := range []struct {
		name     string
		spec     v1beta1.JobManagerIngressSpec
		wantHost string
		wantTLS  []string // hosts of the TLS entry; nil for no TLS
		wantURLs []string
	}{
		{"host from hostFormat, plain HTTP", v1beta1.JobManagerIngressSpec{HostFormat: ptr.To("{{$clusterName}}.flink.example.com")},
			"wc.flink.example.com", nil, []string{"http://wc.flink.example.com"}},
		{"TLS with a host and a Secret", v1beta1.JobManagerIngressSpec{HostFormat: ptr.To("ui-{{ $clusterName }}.example.com"), UseTLS: ptr.To(true), TLSSecretName: ptr.To("tls")},
			"ui-wc.example.com", []string{"ui-wc.example.com"}, []string{"https://ui-wc.example.com"}},
		{"no host: the load balancer's address", v1beta1.JobManagerIngressSpec{}, "", nil, []string{"http://203.0.113.7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := builder.MakeAppCluster("wc").Obj()
			spec := tc.spec
			spec.Annotations = map[string]string{"kubernetes.io/ingress.class": "nginx"}
			fc.Spec.JobManager.Ingress = &spec
			in := resources.Ingress(fc, "r1")
			require.NotNil(t, in)
			assert.Equal(t, "wc-jobmanager", in.Name)
			assert.Equal(t, "nginx", in.Annotations["kubernetes.io/ingress.class"])
			require.Len(t, in.OwnerReferences, 1)
			assert.Equal(t, "wc", in.OwnerReferences[0].Name)
			require.Len(t, in.Spec.Rules, 1)
			assert.Equal(t, tc.wantHost, in.Spec.Rules[0].Host)
			path := in.Spec.Rules[0].HTTP.Paths[0]
			assert.Equal(t, "/", path.Path)
			assert.Equal(t, "wc-jobmanager", path.Backend.Service.Name)
			assert.Equal(t, "ui", path.Backend.Service.Port.Name)
			if tc.wantTLS == nil {
				assert.Empty(t, in.Spec.TLS)
			} else {
				require.Len(t, in.Spec.TLS, 1)
				assert.Equal(t, tc.wantTLS, in.Spec.TLS[0].Hosts)
				assert.Equal(t, "tls", in.Spec.TLS[0].SecretName)
			}

			_, ready := resources.IngressURLs(in)
			assert.False(t, ready, "no load balancer yet")
			in.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "203.0.113.7"}}
			urls, ready := resources.IngressURLs(in)
			assert.True(t, ready)
			assert.Equal(t, tc.wantURLs, urls)
		})
	}
}

func TestPodDisruptionBudget(t *testing.T) {
	assert.Nil(t, resources.PodDisruptionBudget(builder.MakeAppCluster("wc").Obj(), "r1"), "none unless asked for")
	fc := builder.MakeAppCluster("wc").Obj()
	fc.Spec.PodDisruptionBudget = &policyv1.PodDisruptionBudgetSpec{
		MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"cluster": "other", "team": "a"}},
	}
	pdb := resources.PodDisruptionBudget(fc, "r1")
	require.NotNil(t, pdb)
	assert.Equal(t, "flink-wc", pdb.Name, "the operator's name")
	assert.Equal(t, ptr.To(intstr.FromInt32(1)), pdb.Spec.MaxUnavailable)
	assert.Equal(t, map[string]string{"app": "flink", "cluster": "wc", "team": "a"}, pdb.Spec.Selector.MatchLabels,
		"the cluster's pods only, whatever the user's selector says")
	assert.Equal(t, "other", fc.Spec.PodDisruptionBudget.Selector.MatchLabels["cluster"], "the spec is not changed")
	for _, tmpl := range []corev1.PodTemplateSpec{
		resources.JobManagerPodTemplate(fc, resources.Deploy{Revision: "r1", JobID: testJobID}),
		resources.TaskManagerPodTemplate(fc, "r1"),
	} {
		assert.True(t, labels.SelectorFromSet(map[string]string{"app": "flink", "cluster": "wc"}).Matches(labels.Set(tmpl.Labels)))
	}
}

func TestHorizontalPodAutoscaler(t *testing.T) {
	assert.Nil(t, resources.HorizontalPodAutoscaler(builder.MakeAppCluster("wc").Obj(), "r1"), "none unless asked for")
	fc := builder.MakeAppCluster("wc").Obj()
	fc.Spec.TaskManager.HorizontalPodAutoscaler = &v1beta1.HorizontalPodAutoscalerSpec{
		MinReplicas: ptr.To[int32](2), MaxReplicas: 8,
		Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](70)},
		}}},
	}
	hpa := resources.HorizontalPodAutoscaler(fc, "r1")
	require.NotNil(t, hpa)
	assert.Equal(t, "flink-wc", hpa.Name)
	assert.Equal(t, autoscalingv2.CrossVersionObjectReference{APIVersion: "flinkoperator.k8s.io/v1beta1", Kind: "FlinkCluster", Name: "wc"},
		hpa.Spec.ScaleTargetRef, "scales the FlinkCluster's scale subresource, spec.taskManager.replicas")
	assert.Equal(t, ptr.To[int32](2), hpa.Spec.MinReplicas)
	assert.Equal(t, int32(8), hpa.Spec.MaxReplicas)
	assert.Equal(t, fc.Spec.TaskManager.HorizontalPodAutoscaler.Metrics, hpa.Spec.Metrics)
}
