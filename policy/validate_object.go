package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/go-version"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// MaxNameLength is the longest cluster name: the name prefixes the names of the cluster's
// resources, whose suffixes take up to 15 of the 63 characters a label value allows.
const MaxNameLength = 48

// dns1035Label is the CEL rule's pattern. It deliberately has no length limit (the
// apimachinery helper has one of 63), so that a long name gets only the length error, as
// with the CRD.
var dns1035Label = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// validateObject returns the errors of the rules that judge one object on its own (no
// old object) and that are ratcheted on update: the CEL rules without transition, except
// the Deployment rules and cancelRequested (which ratchet in their own way), and the
// reference webhook's field rules.
func validateObject(fc *v1beta1.FlinkCluster) field.ErrorList {
	errs := validateMeta(&fc.ObjectMeta)
	return append(errs, validateSpec(&fc.Spec, field.NewPath("spec"))...)
}

func validateMeta(m *metav1.ObjectMeta) field.ErrorList {
	var errs field.ErrorList
	name := field.NewPath("metadata", "name")
	if len(m.Name) > MaxNameLength {
		errs = append(errs, field.Invalid(name, m.Name,
			fmt.Sprintf("cluster name must be at most %d characters: it prefixes the names of the cluster's resources", MaxNameLength)).
			WithOrigin(RuleNameTooLong))
	}
	if !dns1035Label.MatchString(m.Name) {
		errs = append(errs, field.Invalid(name, m.Name, MessageNameDNS1035).
			WithOrigin(RuleNameDNS1035))
	}
	ns := field.NewPath("metadata", "namespace")
	if m.Namespace == "" {
		errs = append(errs, field.Required(ns, "cluster namespace is required").WithOrigin(RuleNamespace))
	} else {
		for _, msg := range apivalidation.ValidateNamespaceName(m.Namespace, false) {
			errs = append(errs, field.Invalid(ns, m.Namespace, msg).WithOrigin(RuleNamespace))
		}
	}
	return errs
}

func validateSpec(s *v1beta1.FlinkClusterSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	ver, err := flinkcluster.ParseVersion(s.FlinkVersion)
	switch {
	case s.FlinkVersion == "":
		errs = append(errs, field.Required(p.Child("flinkVersion"), "the Flink version of the image is required, e.g. \"1.20\"").
			WithOrigin(RuleFlinkVersion))
	case err != nil:
		errs = append(errs, field.Invalid(p.Child("flinkVersion"), s.FlinkVersion, MessageFlinkVersion).
			WithOrigin(RuleFlinkVersion))
	}
	if err != nil {
		ver = nil // the memory checks need a version; without one they are skipped
	}

	errs = append(errs, validateHadoopConfig(s.HadoopConfig, p.Child("hadoopConfig"))...)
	errs = append(errs, validateGCPConfig(s.GCPConfig, p.Child("gcpConfig"))...)
	errs = append(errs, validateImage(&s.Image, p.Child("image"))...)
	errs = append(errs, validateJobManager(s, ver, p.Child("jobManager"))...)
	errs = append(errs, validateTaskManager(s.TaskManager, ver, p.Child("taskManager"))...)
	errs = append(errs, validateJob(s.Job, p.Child("job"))...)
	if v, ok := s.FlinkProperties[flinkcluster.PropertyLastStateMaxCheckpointAge]; ok {
		if _, err := flinkcluster.ParseFlinkDuration(v); err != nil {
			errs = append(errs, field.Invalid(p.Child("flinkProperties").Key(flinkcluster.PropertyLastStateMaxCheckpointAge), v,
				MessageLastStateMaxCheckpointAge).
				WithOrigin(RuleLastStateMaxCheckpointAge))
		}
	}
	return errs
}

func validateHadoopConfig(h *v1beta1.HadoopConfig, p *field.Path) field.ErrorList {
	if h == nil {
		return nil
	}
	var errs field.ErrorList
	if h.ConfigMapName == "" {
		errs = append(errs, field.Required(p.Child("configMapName"), MessageHadoopConfig).
			WithOrigin(RuleHadoopConfig))
	}
	// An empty mountPath is read as its default (/etc/hadoop/conf), like every other
	// unset field: the CRD and Default fill it in.
	return errs
}

func validateGCPConfig(g *v1beta1.GCPConfig, p *field.Path) field.ErrorList {
	if g == nil || g.ServiceAccount == nil {
		return nil
	}
	sa, p := g.ServiceAccount, p.Child("serviceAccount")
	var errs field.ErrorList
	if sa.SecretName == "" {
		errs = append(errs, field.Required(p.Child("secretName"), "the Secret holding the service account key is required").
			WithOrigin(RuleGCPServiceAccount))
	}
	if sa.KeyFile == "" {
		errs = append(errs, field.Required(p.Child("keyFile"), "the key file name in the Secret is required").
			WithOrigin(RuleGCPServiceAccount))
	}
	switch {
	case sa.MountPath == "":
		errs = append(errs, field.Required(p.Child("mountPath"), "the directory to mount the key in is required").
			WithOrigin(RuleGCPServiceAccount))
	case sa.KeyFile != "" && strings.HasSuffix(sa.MountPath, sa.KeyFile):
		errs = append(errs, field.Invalid(p.Child("mountPath"), sa.MountPath, MessageGCPServiceAccount).WithOrigin(RuleGCPServiceAccount))
	}
	return errs
}

var pullPolicies = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}

func validateImage(img *v1beta1.ImageSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if img.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), MessageImage).WithOrigin(RuleImage))
	}
	if img.PullPolicy != "" && !slices.Contains(pullPolicies, img.PullPolicy) {
		errs = append(errs, field.NotSupported(p.Child("pullPolicy"), img.PullPolicy, pullPolicies).WithOrigin(RuleImage))
	}
	return errs
}

var accessScopes = []v1beta1.AccessScope{
	v1beta1.AccessScopeCluster, v1beta1.AccessScopeVPC, v1beta1.AccessScopeExternal,
	v1beta1.AccessScopeNodePort, v1beta1.AccessScopeHeadless,
}

// emptyJobManager stands for an unset spec.jobManager: its zero fields read as defaults.
var emptyJobManager v1beta1.JobManagerSpec

func validateJobManager(s *v1beta1.FlinkClusterSpec, ver *version.Version, p *field.Path) field.ErrorList {
	jm := s.JobManager
	if jm == nil {
		jm = &emptyJobManager
	}
	errs := validatePodMeta(jm.PodAnnotations, jm.PodLabels, p)

	// A Deployment JobManager has its own rule for this (validateDeployment), ratcheted
	// as its CEL rule; here the reference webhook's rule for the other workloads.
	if jm.Replicas != nil && *jm.Replicas != v1beta1.DefaultJobManagerReplicas &&
		s.GetDeploymentType() != v1beta1.JobManagerDeploymentTypeDeployment {
		errs = append(errs, field.Invalid(p.Child("replicas"), *jm.Replicas, MessageJobManagerReplicas).
			WithOrigin(RuleJobManagerReplicas))
	}
	if jm.AccessScope != "" && !slices.Contains(accessScopes, jm.AccessScope) {
		errs = append(errs, field.NotSupported(p.Child("accessScope"), jm.AccessScope, accessScopes).WithOrigin(RuleAccessScope))
	}
	errs = append(errs, validatePorts(p, jm.ExtraPorts,
		portField{"rpc", jm.Ports.RPC, v1beta1.DefaultJobManagerRPCPort},
		portField{"blob", jm.Ports.Blob, v1beta1.DefaultJobManagerBlobPort},
		portField{"query", jm.Ports.Query, v1beta1.DefaultJobManagerQueryPort},
		portField{"ui", jm.Ports.UI, v1beta1.DefaultJobManagerUIPort},
	)...)
	errs = append(errs, validateResources(jm.Resources, p.Child("resources"))...)
	errs = append(errs, validateMemory(ver, jm.MemoryProcessRatio, jm.MemoryOffHeapRatio, jm.MemoryOffHeapMin, jm.Resources, p)...)

	// CEL rule on JobManagerSpec: without it, Kubernetes kills the JobManager before the
	// preStop delay is over and Flink cannot clean up its HA metadata.
	if g, d := jm.TerminationGracePeriodSeconds, jm.PreStopDelaySeconds; g != nil && d != nil && *g <= int64(*d) {
		errs = append(errs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *g,
			MessageGraceLongerThanPreStop).
			WithOrigin(RuleGraceLongerThanPreStop))
	}
	return errs
}

// emptyTaskManager stands for an unset spec.taskManager: its zero fields read as defaults.
var emptyTaskManager v1beta1.TaskManagerSpec

func validateTaskManager(tm *v1beta1.TaskManagerSpec, ver *version.Version, p *field.Path) field.ErrorList {
	if tm == nil {
		tm = &emptyTaskManager
	}
	errs := validatePodMeta(tm.PodAnnotations, tm.PodLabels, p)
	if tm.Replicas != nil && *tm.Replicas < 1 {
		errs = append(errs, field.Invalid(p.Child("replicas"), *tm.Replicas, MessageTaskManagerReplicas).
			WithOrigin(RuleTaskManagerReplicas))
	}
	errs = append(errs, validatePorts(p, tm.ExtraPorts,
		portField{"rpc", tm.Ports.RPC, v1beta1.DefaultTaskManagerRPCPort},
		portField{"data", tm.Ports.Data, v1beta1.DefaultTaskManagerDataPort},
		portField{"query", tm.Ports.Query, v1beta1.DefaultTaskManagerQueryPort},
	)...)
	errs = append(errs, validateResources(tm.Resources, p.Child("resources"))...)
	errs = append(errs, validateMemory(ver, tm.MemoryProcessRatio, tm.MemoryOffHeapRatio, tm.MemoryOffHeapMin, tm.Resources, p)...)
	return errs
}

var (
	restartPolicies = []v1beta1.JobRestartPolicy{v1beta1.JobRestartPolicyNever, v1beta1.JobRestartPolicyFromSavepointOnFailure}
	cleanupActions  = []v1beta1.CleanupAction{
		v1beta1.CleanupActionKeepCluster, v1beta1.CleanupActionDeleteCluster, v1beta1.CleanupActionDeleteTaskManager,
	}
	jobModes = []v1beta1.JobMode{v1beta1.JobModeDetached, v1beta1.JobModeBlocking, v1beta1.JobModeApplication}
	// upgradeModes are the CRD's enum of spec.job.upgradeMode.
	upgradeModes = v1beta1.UpgradeModes
)

func validateJob(j *v1beta1.JobSpec, p *field.Path) field.ErrorList {
	if j == nil {
		return nil
	}
	errs := validatePodMeta(j.PodAnnotations, j.PodLabels, p)

	// The CEL rules on JobSpec.
	application := j.Mode != nil && *j.Mode == v1beta1.JobModeApplication
	if !application && j.JarFile == nil && j.PyFile == nil && j.PyModule == nil {
		errs = append(errs, field.Required(p.Child("jarFile"), MessageJobArtifact).
			WithOrigin(RuleJobArtifact))
	}
	if j.Parallelism != nil && *j.Parallelism < 1 {
		errs = append(errs, field.Invalid(p.Child("parallelism"), *j.Parallelism, MessageJobParallelism).
			WithOrigin(RuleJobParallelism))
	}
	if j.RestartPolicy != nil && *j.RestartPolicy == v1beta1.JobRestartPolicyFromSavepointOnFailure && j.MaxStateAgeToRestoreSeconds == nil {
		errs = append(errs, field.Required(p.Child("maxStateAgeToRestoreSeconds"),
			MessageRestartRequiresMaxStateAge).
			WithOrigin(RuleRestartRequiresMaxStateAge))
	}
	if j.TakeSavepointOnUpdate != nil && !*j.TakeSavepointOnUpdate && j.MaxStateAgeToRestoreSeconds == nil {
		errs = append(errs, field.Required(p.Child("maxStateAgeToRestoreSeconds"),
			MessageSkipSavepointRequiresMaxStateAge).
			WithOrigin(RuleSkipSavepointRequiresMaxStateAge))
	}
	if k := j.SavepointsToKeep; k != nil && (*k < 1 || *k > flinkcluster.MaxSavepointHistory) {
		errs = append(errs, field.Invalid(p.Child("savepointsToKeep"), *k,
			fmt.Sprintf("savepointsToKeep must be between 1 and %d: the controller disposes only of savepoints its history (the last %d) still lists",
				flinkcluster.MaxSavepointHistory, flinkcluster.MaxSavepointHistory)).
			WithOrigin(RuleSavepointsToKeep))
	}

	// The reference webhook's enum checks; unset means the default.
	if j.RestartPolicy != nil && !slices.Contains(restartPolicies, *j.RestartPolicy) {
		errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *j.RestartPolicy, restartPolicies).WithOrigin(RuleRestartPolicy))
	}
	if c := j.CleanupPolicy; c != nil {
		cp := p.Child("cleanupPolicy")
		for _, a := range []struct {
			name   string
			action v1beta1.CleanupAction
		}{{"afterJobSucceeds", c.AfterJobSucceeds}, {"afterJobFails", c.AfterJobFails}, {"afterJobCancelled", c.AfterJobCancelled}} {
			if a.action != "" && !slices.Contains(cleanupActions, a.action) {
				errs = append(errs, field.NotSupported(cp.Child(a.name), a.action, cleanupActions).WithOrigin(RuleCleanupPolicy))
			}
		}
	}
	if j.UpgradeMode != nil && !slices.Contains(upgradeModes, *j.UpgradeMode) {
		errs = append(errs, field.NotSupported(p.Child("upgradeMode"), *j.UpgradeMode, upgradeModes).WithOrigin(RuleUpgradeMode))
	}
	if j.Mode != nil && !slices.Contains(jobModes, *j.Mode) {
		errs = append(errs, field.NotSupported(p.Child("mode"), *j.Mode, jobModes).WithOrigin(RuleJobMode))
	}
	return errs
}

// validatePodMeta checks a component's pod annotations and labels with the API server's
// own rules, so that a bad key fails here and not later when the operator creates the pod.
func validatePodMeta(annotations, labels map[string]string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(annotations) > 0 {
		errs = append(errs, apivalidation.ValidateAnnotations(annotations, p.Child("podAnnotations")).WithOrigin(RulePodAnnotations)...)
	}
	if len(labels) > 0 {
		errs = append(errs, metav1validation.ValidateLabels(labels, p.Child("podLabels")).WithOrigin(RulePodLabels)...)
	}
	return errs
}

// portField is one of a component's named ports: nil means the default.
type portField struct {
	name  string
	value *int32
	def   int32
}

// validatePorts checks that the set ports are above 1024 and that no two of the
// component's ports, named and extra, share a number or a name.
func validatePorts(p *field.Path, extra []v1beta1.NamedPort, named ...portField) field.ErrorList {
	var errs field.ErrorList
	numbers := make(map[int32]struct{}, len(named)+len(extra))
	names := make(map[string]struct{}, len(named)+len(extra))
	// Field paths are built only for an error: this runs on every review.
	for _, pf := range named {
		port := pf.def
		if pf.value != nil {
			port = *pf.value
			if port < MinPort {
				errs = append(errs, field.Invalid(p.Child("ports", pf.name), port, MessagePort).WithOrigin(RulePort))
			}
		}
		if _, dup := numbers[port]; dup {
			errs = append(errs, field.Duplicate(p.Child("ports", pf.name), port).WithOrigin(RuleDuplicatePort))
		}
		numbers[port] = struct{}{}
		names[pf.name] = struct{}{}
	}
	for i, ep := range extra {
		if _, dup := numbers[ep.ContainerPort]; dup {
			errs = append(errs, field.Duplicate(p.Child("extraPorts").Index(i).Child("containerPort"), ep.ContainerPort).WithOrigin(RuleDuplicatePort))
		}
		numbers[ep.ContainerPort] = struct{}{}
		if ep.Name == "" {
			continue
		}
		if _, dup := names[ep.Name]; dup {
			errs = append(errs, field.Duplicate(p.Child("extraPorts").Index(i).Child("name"), ep.Name).WithOrigin(RuleDuplicatePort))
		}
		names[ep.Name] = struct{}{}
	}
	return errs
}

// validateResources checks that a component that sets resources sets a cpu and a memory
// amount (as a request or a limit). A component that sets none gets DefaultResources.
func validateResources(r corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	if resourcesEmpty(r) {
		return nil
	}
	var errs field.ErrorList
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if !quantityPositive(r.Requests, name) && !quantityPositive(r.Limits, name) {
			errs = append(errs, field.Required(p.Child("requests").Key(string(name)),
				fmt.Sprintf("a %s request or limit is required", name)).WithOrigin(RuleResources))
		}
	}
	return errs
}

func quantityPositive(l corev1.ResourceList, name corev1.ResourceName) bool {
	q, ok := l[name]
	return ok && !q.IsZero()
}

// validateMemory checks a component's memory settings against its Flink version's memory
// model: memoryProcessRatio from Flink 1.10, memoryOffHeapRatio and memoryOffHeapMin
// before. It checks nothing when the version is unknown (that error is reported already).
func validateMemory(ver *version.Version, processRatio, offHeapRatio *int32, offHeapMin resource.Quantity,
	res corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	if ver == nil {
		return nil
	}
	var errs field.ErrorList
	if flinkcluster.UsesProcessRatio(ver) {
		if offHeapRatio != nil {
			errs = append(errs, field.Forbidden(p.Child("memoryOffHeapRatio"),
				"only for Flink before "+MemoryProcessRatioMinVersion+"; use memoryProcessRatio").WithOrigin(RuleMemory))
		}
		if !offHeapMin.IsZero() {
			errs = append(errs, field.Forbidden(p.Child("memoryOffHeapMin"),
				"only for Flink before "+MemoryProcessRatioMinVersion+"; use memoryProcessRatio").WithOrigin(RuleMemory))
		}
		errs = append(errs, validatePercent(processRatio, p.Child("memoryProcessRatio"))...)
		return errs
	}
	if processRatio != nil {
		errs = append(errs, field.Forbidden(p.Child("memoryProcessRatio"),
			"only for Flink "+MemoryProcessRatioMinVersion+" and later; use memoryOffHeapRatio and memoryOffHeapMin").WithOrigin(RuleMemory))
	}
	errs = append(errs, validatePercent(offHeapRatio, p.Child("memoryOffHeapRatio"))...)

	minimum := offHeapMin
	if quantityUnset(minimum) {
		minimum = resource.MustParse(DefaultMemoryOffHeapMin)
	}
	if resourcesEmpty(res) {
		res = DefaultResources()
	}
	if limit := res.Limits.Memory(); limit.Sign() > 0 && minimum.Cmp(*limit) > 0 {
		errs = append(errs, field.Invalid(p.Child("memoryOffHeapMin"), minimum.String(),
			fmt.Sprintf("must not be more than the memory limit %s", limit.String())).WithOrigin(RuleMemory))
	}
	return errs
}

func validatePercent(v *int32, p *field.Path) field.ErrorList {
	if v == nil || (*v >= 0 && *v <= 100) {
		return nil
	}
	return field.ErrorList{field.Invalid(p, *v, "must be a percentage between 0 and 100").WithOrigin(RuleMemory)}
}
