package resources

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Flink configuration keys the controller derives.
const (
	KeyRPCAddress               = "jobmanager.rpc.address"
	KeyRPCPort                  = "jobmanager.rpc.port"
	KeyBlobPort                 = "blob.server.port"
	KeyQueryPort                = "query.server.port"
	KeyRESTPort                 = "rest.port"
	KeyTMDataPort               = "taskmanager.data.port"
	KeyTMRPCPort                = "taskmanager.rpc.port"
	KeyKubernetesClusterID      = "kubernetes.cluster-id"
	KeyHAClusterID              = "high-availability.cluster-id"
	KeyShutdownOnApplicationEnd = "execution.shutdown-on-application-finish"
	KeySavepointsDir            = "state.savepoints.dir"
	KeyDefaultParallelism       = "parallelism.default"
	KeyHAStorageDir             = "high-availability.storageDir"
	KeyJRSDeleteOnCommit        = "job-result-store.delete-on-commit"
	KeyJRSStoragePath           = "job-result-store.storage-path"
	KeySavepointPath            = "execution.savepoint.path"
	KeyStateRecoveryPath        = "execution.state-recovery.path"
	KeyIgnoreUnclaimedState     = "execution.savepoint.ignore-unclaimed-state"
	legacyConfigFile            = "flink-conf.yaml"
	configFile                  = "config.yaml"
	firstStandardYAMLMajor      = 2
)

// KeyRestorePath is the Flink ConfigMap's entry (beside the configuration file, not in it)
// holding the deploy's restore path for a JobManager that reads it from its environment
// (EnvRestorePath, Deployment mode with the path on the command line); written for every
// Deployment with HA that has a restore path. It always holds the
// configuration file's execution.savepoint.path: ConfigMap writes both from one
// FlinkConfiguration, ReplaceSavepoint rewrites both. The ConfigMap is the JobManager's
// configuration directory, where the entry is one more file, which Flink does not read.
const KeyRestorePath = "flink-admission-restore-path"

// addressKeys are derived from the Service the controller creates; a flinkProperties value
// for them would point the TaskManagers at nothing, so the derived value always wins.
var addressKeys = []string{KeyRPCAddress, KeyRPCPort, KeyBlobPort, KeyQueryPort, KeyRESTPort}

// HAClusterID is the cluster id Flink's HA services use, and the "app" label of the HA
// ConfigMaps Flink's Kubernetes HA creates: the user's value when set, else the cluster name.
func HAClusterID(fc *v1beta1.FlinkCluster) string {
	for _, k := range []string{KeyKubernetesClusterID, KeyHAClusterID} {
		if v := fc.Spec.FlinkProperties[k]; v != "" {
			return v
		}
	}
	return fc.Name
}

// JobResultStorePath is the job result store of one deploy (job ID) under the HA storage
// directory; "" without HA.
func JobResultStorePath(fc *v1beta1.FlinkCluster, jobID string) string {
	dir := strings.TrimSuffix(fc.Spec.FlinkProperties[KeyHAStorageDir], "/")
	if dir == "" || jobID == "" || !flinkcluster.HAEnabled(fc.Spec.FlinkProperties) {
		return ""
	}
	return dir + "/job-result-store/" + HAClusterID(fc) + "/" + jobID
}

// FlinkConfiguration returns the effective Flink configuration of a deploy: derived entries
// (ports, cluster ID, memory sizes and task slots from the containers' resources),
// overridden by flinkProperties except for the JobManager address and ports, the job's
// parallelism (spec.job.parallelism, else TaskManager replicas × slots) and the savepoint
// the deploy restores.
//
// The savepoint (d.FromSavepoint) is read by Flink when main() submits the job. It is here,
// not on the JobManager's command line, so that the controller can take it out once the job
// ran (Deploy): a ConfigMap update reaches the mounted file without restarting the pod, while
// a change of the pod template would replace the JobManager.
//
// With HA, the job result store keeps the results of globally terminated jobs
// (delete-on-commit false) in a directory of the deploy's own: a JobManager that restarts
// after its job ended finds the result and does not run main() again (FLINK-27569), and no
// other deploy's result is ever found under this deploy's job ID. The user's values win.
func FlinkConfiguration(fc *v1beta1.FlinkCluster, d Deploy) map[string]string {
	rpc, blob, query, ui := JobManagerPorts(fc)
	data, tmRPC, _ := TaskManagerPorts(fc)
	conf := map[string]string{
		KeyTMDataPort:          strconv.Itoa(int(data)),
		KeyTMRPCPort:           strconv.Itoa(int(tmRPC)),
		KeyKubernetesClusterID: HAClusterID(fc),
		KeyHAClusterID:         HAClusterID(fc),
	}
	maps.Copy(conf, memorySizes(fc))
	if slots, ok := TaskSlots(fc); ok {
		conf[KeyTaskSlots] = strconv.Itoa(int(slots))
	}
	if j := fc.Spec.Job; j != nil && j.SavepointsDir != nil && *j.SavepointsDir != "" {
		conf[KeySavepointsDir] = *j.SavepointsDir
	}
	if p := JobResultStorePath(fc, d.JobID); p != "" {
		conf[KeyJRSDeleteOnCommit] = "false"
		conf[KeyJRSStoragePath] = p
	}
	maps.Copy(conf, fc.Spec.FlinkProperties)
	conf[KeyRPCAddress] = JobManagerName(fc.Name)
	conf[KeyRPCPort] = strconv.Itoa(int(rpc))
	conf[KeyBlobPort] = strconv.Itoa(int(blob))
	conf[KeyQueryPort] = strconv.Itoa(int(query))
	conf[KeyRESTPort] = strconv.Itoa(int(ui))
	// The operator passes the job's parallelism on the JobManager's command line
	// (-Dparallelism.default), where it beats the configuration file: it wins here too.
	if p, ok := JobParallelism(fc); ok && fc.Spec.Job != nil {
		conf[KeyDefaultParallelism] = strconv.Itoa(int(p))
	}
	// A restore path of the user's would be read by every fresh main() of every deploy: the
	// deploy's own (spec.job.fromSavepoint, or the savepoint the controller chose) replaces
	// it, under the key every supported Flink reads (1.20 and 2.x keep it as the deprecated
	// name of execution.state-recovery.path).
	delete(conf, KeySavepointPath)
	delete(conf, KeyStateRecoveryPath)
	if d.FromSavepoint != "" {
		conf[KeySavepointPath] = d.FromSavepoint
		if j := fc.Spec.Job; j != nil && j.AllowNonRestoredState != nil && *j.AllowNonRestoredState {
			conf[KeyIgnoreUnclaimedState] = "true"
		}
	}
	// The JobManager must outlive the job, in both modes, so that the controller can read
	// the job's final state from the REST API: its terminal state, its failure, and the
	// location of the savepoint an update's stop-with-savepoint took. A Deployment's pod
	// would otherwise be restarted after the job ended. A Job's JobManager would exit as
	// soon as the stop had finished the job, before the controller read where the savepoint
	// went, and the update would wait forever. The controller ends a Job-mode JobManager
	// itself once it has recorded what it needs (DELETE /cluster, see endJobManager), so a
	// user's true changes nothing but who ends the process: it is overridden, and the
	// webhook warns about it (policy.WarningShutdownOnFinishOverridden).
	conf[KeyShutdownOnApplicationEnd] = "false"
	return conf
}

// usesStandardYAML reports whether the Flink version reads config.yaml (Flink 2.0 and later)
// rather than the legacy flink-conf.yaml. An unparsable version is taken as current.
func usesStandardYAML(version string) bool {
	major, _, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	n, err := strconv.Atoi(major)
	return err != nil || n >= firstStandardYAMLMajor
}

// ConfigFileName is the Flink configuration file name for the cluster's Flink version.
func ConfigFileName(fc *v1beta1.FlinkCluster) string {
	if usesStandardYAML(fc.Spec.FlinkVersion) {
		return configFile
	}
	return legacyConfigFile
}

// renderConfig writes the configuration file. config.yaml is standard YAML, so values are
// quoted as YAML requires; the legacy file is read line by line as "key: value", where quotes
// would become part of the value.
func renderConfig(fc *v1beta1.FlinkCluster, conf map[string]string) (string, error) {
	return render(conf, usesStandardYAML(fc.Spec.FlinkVersion))
}

// render writes config.yaml (standard) or the legacy file.
func render(conf map[string]string, standard bool) (string, error) {
	if standard {
		b, err := yaml.Marshal(conf)
		if err != nil {
			return "", fmt.Errorf("rendering %s: %w", configFile, err)
		}
		return string(b), nil
	}
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		if strings.ContainsAny(k+conf[k], "\n\r") {
			return "", fmt.Errorf("rendering %s: the entry %q spans lines", legacyConfigFile, k)
		}
		fmt.Fprintf(&sb, "%s: %s\n", k, conf[k])
	}
	return sb.String(), nil
}

// DropSavepoint takes the restore path out of a Flink configuration ConfigMap that ConfigMap
// built, in place, whatever revision it was built for; it reports whether it changed. The
// controller calls it once the job ran, also in the steps (an update, a cancel) that do not
// rebuild the ConfigMap from the current spec.
func DropSavepoint(cm *corev1.ConfigMap) (bool, error) { return ReplaceSavepoint(cm, "") }

// ReplaceSavepoint sets the restore path of a Flink configuration ConfigMap that ConfigMap
// built to path, in place ("" takes it out), in the configuration file and, where ConfigMap
// wrote it, in KeyRestorePath; it reports whether it changed.
func ReplaceSavepoint(cm *corev1.ConfigMap, path string) (bool, error) {
	changed := false
	if cur, env := cm.Data[KeyRestorePath]; env && cur != path {
		// A container's EnvRestorePath reads it at its next start: always the file's path,
		// and, as ConfigMap writes it, absent with none.
		if path == "" {
			delete(cm.Data, KeyRestorePath)
		} else {
			cm.Data[KeyRestorePath] = path
		}
		changed = true
	}
	for name, standard := range map[string]bool{configFile: true, legacyConfigFile: false} {
		text, ok := cm.Data[name]
		if !ok {
			continue
		}
		conf, err := parseConfig(text, standard)
		if err != nil {
			return false, fmt.Errorf("reading %s of ConfigMap %s: %w", name, cm.Name, err)
		}
		if cur, ok := conf[KeySavepointPath]; cur == path || (!ok && path == "") {
			continue
		}
		if path == "" {
			delete(conf, KeySavepointPath)
		} else {
			conf[KeySavepointPath] = path
		}
		if cm.Data[name], err = render(conf, standard); err != nil {
			return false, err
		}
		changed = true
	}
	return changed, nil
}

// Configuration is the Flink configuration a ConfigMap built by ConfigMap holds: its
// config.yaml, else its legacy flink-conf.yaml; nil when it holds neither or the file cannot
// be read.
func Configuration(cm *corev1.ConfigMap) map[string]string {
	for _, f := range []struct {
		name     string
		standard bool
	}{{configFile, true}, {legacyConfigFile, false}} {
		if text, found := cm.Data[f.name]; found {
			conf, err := parseConfig(text, f.standard)
			if err != nil {
				return nil
			}
			return conf
		}
	}
	return nil
}

// parseConfig reads a configuration file that render wrote.
func parseConfig(text string, standard bool) (map[string]string, error) {
	conf := map[string]string{}
	if standard {
		err := yaml.Unmarshal([]byte(text), &conf)
		return conf, err
	}
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			return nil, fmt.Errorf("line %q is not \"key: value\"", line)
		}
		conf[k] = v
	}
	return conf, nil
}

// ConfigMap builds the Flink configuration ConfigMap of a deploy, with the logging files of
// logConfig and the defaults of those it leaves out (LogFiles).
func ConfigMap(fc *v1beta1.FlinkCluster, d Deploy) (*corev1.ConfigMap, error) {
	revision := d.Revision
	conf := FlinkConfiguration(fc, d)
	file, err := renderConfig(fc, conf)
	if err != nil {
		return nil, err
	}
	data := LogFiles(fc)
	data[ConfigFileName(fc)] = file
	// Written for every restore path of a Deployment with HA, not only where the pod reads it
	// (restorePathEnv): a JobManager that reads it must find it whatever the spec became since
	// it was created (allowNonRestoredState or flinkVersion changed before the update replaced
	// it), or the kubelet would not start its container.
	if p, ok := conf[KeySavepointPath]; ok && restoreFromEnv(fc) && flinkcluster.HAEnabled(fc.Spec.FlinkProperties) {
		data[KeyRestorePath] = p
	}
	labels := map[string]string{LabelApp: AppFlink, LabelCluster: fc.Name}
	if revision != "" {
		labels[LabelRevision] = revision
	}
	return &corev1.ConfigMap{
		ObjectMeta: objectMeta(fc, ConfigMapName(fc.Name), labels),
		Data:       data,
	}, nil
}
