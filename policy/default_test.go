package policy_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/policy"
)

// quantityOpts compares resource quantities by value, as the API server does.
var quantityOpts = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func defaulted(fc *v1beta1.FlinkCluster) *v1beta1.FlinkCluster {
	fc = fc.DeepCopy()
	policy.Default(fc)
	return fc
}

func defaultResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")},
	}
}

func tcpProbe(port, timeout, initialDelay, period, failure int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}},
		TimeoutSeconds:      timeout,
		InitialDelaySeconds: initialDelay,
		PeriodSeconds:       period,
		FailureThreshold:    failure,
	}
}

// TestDefaultMinimal spells out the whole defaulted minimal cluster, with the reference
// operator's values written as literals.
func TestDefaultMinimal(t *testing.T) {
	want := makeFC("app").Obj()
	want.Spec.RecreateOnUpdate = ptr.To(true)
	want.Spec.Image.PullPolicy = corev1.PullAlways
	want.Spec.JobManager = &v1beta1.JobManagerSpec{
		Replicas:    ptr.To(int32(1)),
		AccessScope: v1beta1.AccessScopeCluster,
		Ports: v1beta1.JobManagerPorts{
			RPC: ptr.To(int32(6123)), Blob: ptr.To(int32(6124)), Query: ptr.To(int32(6125)), UI: ptr.To(int32(8081)),
		},
		MemoryProcessRatio: ptr.To(int32(80)),
		Resources:          defaultResources(),
		LivenessProbe:      tcpProbe(6123, 10, 5, 60, 5),
		ReadinessProbe:     tcpProbe(6123, 10, 5, 5, 60),
	}
	want.Spec.TaskManager = &v1beta1.TaskManagerSpec{
		DeploymentType:     v1beta1.TaskManagerDeploymentTypeStatefulSet,
		Replicas:           ptr.To(int32(3)),
		Ports:              v1beta1.TaskManagerPorts{Data: ptr.To(int32(6121)), RPC: ptr.To(int32(6122)), Query: ptr.To(int32(6125))},
		MemoryProcessRatio: ptr.To(int32(80)),
		Resources:          defaultResources(),
		LivenessProbe:      tcpProbe(6122, 10, 5, 60, 5),
		ReadinessProbe:     tcpProbe(6122, 10, 5, 5, 60),
	}
	j := want.Spec.Job
	j.AllowNonRestoredState = ptr.To(false)
	j.NoLoggingToStdout = ptr.To(false)
	j.RestartPolicy = ptr.To(v1beta1.JobRestartPolicyNever)
	j.CleanupPolicy = &v1beta1.CleanupPolicy{
		AfterJobSucceeds:  v1beta1.CleanupActionDeleteCluster,
		AfterJobFails:     v1beta1.CleanupActionKeepCluster,
		AfterJobCancelled: v1beta1.CleanupActionDeleteCluster,
	}
	j.Resources = defaultResources()

	got := defaulted(makeFC("app").Obj())
	if diff := cmp.Diff(want, got, quantityOpts); diff != "" {
		t.Errorf("Default (-want +got):\n%s", diff)
	}
}

func TestDefault(t *testing.T) {
	cases := []struct {
		name  string
		in    *v1beta1.FlinkCluster
		check func(t *testing.T, got *v1beta1.FlinkCluster)
	}{
		{
			name: "deploymentType Deployment gets the shutdown properties, preStop 15 and grace 60",
			in:   deploymentFC().Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				wantProps := map[string]string{
					"high-availability.type":                           "kubernetes",
					"high-availability.storageDir":                     "s3://bucket/ha",
					"execution.shutdown-on-application-finish":         "false",
					"execution.submit-failed-job-on-application-error": "true",
				}
				equal(t, "flinkProperties", wantProps, got.Spec.FlinkProperties)
				equal(t, "preStopDelaySeconds", ptr.To(int32(15)), got.Spec.JobManager.PreStopDelaySeconds)
				equal(t, "terminationGracePeriodSeconds", ptr.To(int64(60)), got.Spec.JobManager.TerminationGracePeriodSeconds)
			},
		},
		{
			name: "deploymentType Deployment keeps the user's shutdown properties",
			in: deploymentFC().FlinkProperty(policy.PropertyShutdownOnApplicationFinish, "False").
				FlinkProperty(policy.PropertySubmitFailedJobOnApplicationError, "false").Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				equal(t, "shutdown", "False", got.Spec.FlinkProperties[policy.PropertyShutdownOnApplicationFinish])
				equal(t, "submit-failed", "false", got.Spec.FlinkProperties[policy.PropertySubmitFailedJobOnApplicationError])
			},
		},
		{
			name: "deploymentType Deployment with a long preStop gets grace preStop+30",
			in:   deploymentFC().PreStop(40).Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				equal(t, "preStopDelaySeconds", ptr.To(int32(40)), got.Spec.JobManager.PreStopDelaySeconds)
				equal(t, "terminationGracePeriodSeconds", ptr.To(int64(70)), got.Spec.JobManager.TerminationGracePeriodSeconds)
			},
		},
		{
			name: "deploymentType Deployment with a short preStop gets grace 60",
			in:   deploymentFC().PreStop(0).Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				equal(t, "preStopDelaySeconds", ptr.To(int32(0)), got.Spec.JobManager.PreStopDelaySeconds)
				equal(t, "terminationGracePeriodSeconds", ptr.To(int64(60)), got.Spec.JobManager.TerminationGracePeriodSeconds)
			},
		},
		{
			name: "deploymentType Deployment with a user grace gets preStop 15",
			in:   deploymentFC().Grace(120).Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				equal(t, "preStopDelaySeconds", ptr.To(int32(15)), got.Spec.JobManager.PreStopDelaySeconds)
				equal(t, "terminationGracePeriodSeconds", ptr.To(int64(120)), got.Spec.JobManager.TerminationGracePeriodSeconds)
			},
		},
		{
			name: "deploymentType Deployment with a grace of 15 s or less gets no preStop",
			in:   deploymentFC().Grace(15).Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				equal(t, "preStopDelaySeconds", (*int32)(nil), got.Spec.JobManager.PreStopDelaySeconds)
				equal(t, "terminationGracePeriodSeconds", ptr.To(int64(15)), got.Spec.JobManager.TerminationGracePeriodSeconds)
			},
		},
		{
			name: "deploymentType Job gets no shutdown settings",
			in:   makeFC("app").DeploymentType(jobType).Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				equal(t, "flinkProperties", map[string]string(nil), got.Spec.FlinkProperties)
				equal(t, "preStopDelaySeconds", (*int32)(nil), got.Spec.JobManager.PreStopDelaySeconds)
				equal(t, "terminationGracePeriodSeconds", (*int64)(nil), got.Spec.JobManager.TerminationGracePeriodSeconds)
			},
		},
		{
			name: "Flink 1.9 gets off-heap 25% and 600M, no process ratio",
			in:   makeFC("app").FlinkVersion("1.9.3").Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				for _, c := range []struct {
					name      string
					ratio     *int32
					minimum   resource.Quantity
					processes *int32
				}{
					{"jobManager", got.Spec.JobManager.MemoryOffHeapRatio, got.Spec.JobManager.MemoryOffHeapMin, got.Spec.JobManager.MemoryProcessRatio},
					{"taskManager", got.Spec.TaskManager.MemoryOffHeapRatio, got.Spec.TaskManager.MemoryOffHeapMin, got.Spec.TaskManager.MemoryProcessRatio},
				} {
					equal(t, c.name+" memoryOffHeapRatio", ptr.To(int32(25)), c.ratio)
					equal(t, c.name+" memoryOffHeapMin", resource.MustParse("600M"), c.minimum)
					equal(t, c.name+" memoryProcessRatio", (*int32)(nil), c.processes)
				}
			},
		},
		{
			name: "Flink 1.10 gets process ratio 80, no off-heap settings",
			in:   makeFC("app").FlinkVersion("1.10").Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				equal(t, "memoryProcessRatio", ptr.To(int32(80)), got.Spec.TaskManager.MemoryProcessRatio)
				equal(t, "memoryOffHeapRatio", (*int32)(nil), got.Spec.TaskManager.MemoryOffHeapRatio)
				equal(t, "memoryOffHeapMin", resource.Quantity{}, got.Spec.TaskManager.MemoryOffHeapMin)
			},
		},
		{
			name: "a flinkVersion that does not parse gets no memory settings",
			in:   makeFC("app").FlinkVersion("stable").Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				equal(t, "memoryProcessRatio", (*int32)(nil), got.Spec.JobManager.MemoryProcessRatio)
				equal(t, "memoryOffHeapRatio", (*int32)(nil), got.Spec.JobManager.MemoryOffHeapRatio)
			},
		},
		{
			name: "the user's memory settings and resources are kept",
			in: makeFC("app").FlinkVersion("1.9").TaskManagerResources(resources("1", "4Gi")).
				TaskManager(func(tm *v1beta1.TaskManagerSpec) {
					tm.MemoryOffHeapRatio = ptr.To(int32(10))
					tm.MemoryOffHeapMin = resource.MustParse("100M")
				}).Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				equal(t, "memoryOffHeapRatio", ptr.To(int32(10)), got.Spec.TaskManager.MemoryOffHeapRatio)
				equal(t, "memoryOffHeapMin", resource.MustParse("100M"), got.Spec.TaskManager.MemoryOffHeapMin)
				equal(t, "resources", resources("1", "4Gi"), got.Spec.TaskManager.Resources)
			},
		},
		{
			name: "the user's probe fields win and the user's handler replaces the TCP check",
			in: makeFC("app").JobManager(func(jm *v1beta1.JobManagerSpec) {
				jm.LivenessProbe = &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/overview", Port: intstr.FromInt32(8081)}},
					PeriodSeconds: 30,
				}
				jm.ReadinessProbe = &corev1.Probe{FailureThreshold: 3, TerminationGracePeriodSeconds: ptr.To(int64(7))}
			}).Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				equal(t, "livenessProbe", &corev1.Probe{
					ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/overview", Port: intstr.FromInt32(8081)}},
					TimeoutSeconds:      10,
					InitialDelaySeconds: 5,
					PeriodSeconds:       30,
					FailureThreshold:    5,
				}, got.Spec.JobManager.LivenessProbe)
				want := tcpProbe(6123, 10, 5, 5, 3)
				want.TerminationGracePeriodSeconds = ptr.To(int64(7))
				equal(t, "readinessProbe", want, got.Spec.JobManager.ReadinessProbe)
			},
		},
		{
			name: "probes check the user's rpc port",
			in:   makeFC("app").TaskManagerPorts(7001, 7002, 7003).Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				equal(t, "livenessProbe", tcpProbe(7002, 10, 5, 60, 5), got.Spec.TaskManager.LivenessProbe)
			},
		},
		{
			name: "batchSchedulerName becomes batchScheduler.name",
			in:   makeFC("app").BatchSchedulerName("volcano").Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				equal(t, "batchScheduler", &v1beta1.BatchSchedulerSpec{Name: "volcano"}, got.Spec.BatchScheduler)
			},
		},
		{
			name: "batchSchedulerName does not overwrite batchScheduler",
			in: makeFC("app").BatchSchedulerName("volcano").
				Spec(func(s *v1beta1.FlinkClusterSpec) {
					s.BatchScheduler = &v1beta1.BatchSchedulerSpec{Name: "yunikorn", Queue: "q"}
				}).Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				equal(t, "batchScheduler", &v1beta1.BatchSchedulerSpec{Name: "yunikorn", Queue: "q"}, got.Spec.BatchScheduler)
			},
		},
		{
			name: "hadoopConfig gets its mount path, ingress its useTls and a partial cleanupPolicy the rest",
			in: makeFC("app").HadoopConfig("hadoop", "").CleanupPolicy("", v1beta1.CleanupActionDeleteCluster, "").
				JobManager(func(jm *v1beta1.JobManagerSpec) { jm.Ingress = &v1beta1.JobManagerIngressSpec{} }).Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				equal(t, "mountPath", "/etc/hadoop/conf", got.Spec.HadoopConfig.MountPath)
				equal(t, "useTls", ptr.To(false), got.Spec.JobManager.Ingress.UseTLS)
				equal(t, "cleanupPolicy", &v1beta1.CleanupPolicy{
					AfterJobSucceeds: "DeleteCluster", AfterJobFails: "DeleteCluster", AfterJobCancelled: "DeleteCluster",
				}, got.Spec.Job.CleanupPolicy)
			},
		},
		{
			name: "an unset job mode becomes Detached",
			in:   makeFC("app").NoJobMode().JarFile("job.jar").Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				equal(t, "mode", ptr.To(v1beta1.JobModeDetached), got.Spec.Job.Mode)
			},
		},
		{
			name: "a session cluster gets no job",
			in:   makeFC("app").SessionCluster().Obj(),
			check: func(t *testing.T, got *v1beta1.FlinkCluster) {
				equal(t, "job", (*v1beta1.JobSpec)(nil), got.Spec.Job)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := defaulted(tc.in)
			tc.check(t, got)
			again := defaulted(got)
			if diff := cmp.Diff(got, again, quantityOpts); diff != "" {
				t.Errorf("Default is not idempotent (-once +twice):\n%s", diff)
			}
			// Default adds no error: the defaulted object is judged as the input was.
			before, _ := policy.ValidateCreate(tc.in)
			after, _ := policy.ValidateCreate(got)
			if diff := cmp.Diff(before, after, errorsOpts); diff != "" {
				t.Errorf("validation before and after Default differs (-before +after):\n%s", diff)
			}
		})
	}
}

func equal[T any](t *testing.T, what string, want, got T) {
	t.Helper()
	if diff := cmp.Diff(want, got, quantityOpts); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

func TestDefaultNilSafe(t *testing.T) {
	policy.Default(nil)
	fc := &v1beta1.FlinkCluster{}
	policy.Default(fc)
	if fc.Spec.JobManager == nil || fc.Spec.TaskManager == nil {
		t.Fatal("Default left jobManager or taskManager nil")
	}
	fc = makeFC("app").DeploymentType(deployment).Obj()
	fc.Spec.FlinkProperties = nil
	policy.Default(fc)
	if fc.Spec.FlinkProperties[policy.PropertyShutdownOnApplicationFinish] != "false" {
		t.Error("Default did not create flinkProperties for a Deployment JobManager")
	}
}

// TestDefaultKeepsValidObjectsValid covers the inputs where a careless default would break
// a rule: a short grace period (preStop must stay below it), a memory limit below the
// default off-heap minimum, a user rpc port the probes must follow.
func TestDefaultKeepsValidObjectsValid(t *testing.T) {
	for name, fc := range map[string]*v1beta1.FlinkCluster{
		"Deployment with grace 10":            deploymentFC().Grace(10).Obj(),
		"Deployment with grace 16":            deploymentFC().Grace(16).Obj(),
		"Deployment with grace 0":             deploymentFC().Grace(0).Obj(),
		"Deployment with preStop 3600":        deploymentFC().PreStop(3600).Obj(),
		"Flink 1.9 with 1Gi limit":            makeFC("app").FlinkVersion("1.9").JobManagerResources(resources("1", "1Gi")).Obj(),
		"Flink 1.9 with a small off-heap min": makeFC("app").FlinkVersion("1.9").JobManager(func(jm *v1beta1.JobManagerSpec) { jm.MemoryOffHeapMin = resource.MustParse("50Mi") }).JobManagerResources(resources("1", "100Mi")).Obj(),
		"Deployment with the legacy HA key":   deploymentFC().FlinkProperty(policy.PropertyHALegacy, "kubernetes").DeleteFlinkProperty(policy.PropertyHAType).Obj(),
	} {
		t.Run(name, func(t *testing.T) {
			if errs, _ := policy.ValidateCreate(fc); len(errs) != 0 {
				t.Fatalf("test input is not valid: %v", errs)
			}
			if errs, _ := policy.ValidateCreate(defaulted(fc)); len(errs) != 0 {
				t.Errorf("Default turned a valid object invalid: %v", errs)
			}
		})
	}
}
