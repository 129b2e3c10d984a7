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

// KeyRestorePath is the Flink ConfigMap's entry, one more file in the configuration directory
// that Flink does not read, holding the restore path EnvRestorePath reads; written for every
// Deployment with HA that has one, always equal to the file's execution.savepoint.path.
const KeyRestorePath = "flink-admission-restore-path"

// addressKeys derive from the controller's Service; a flinkProperties value would point the
// TaskManagers at nothing.
var addressKeys = []string{KeyRPCAddress, KeyRPCPort, KeyBlobPort, KeyQueryPort, KeyRESTPort}

// HAClusterID is Flink's HA cluster id, the "app" label of its HA ConfigMaps: the user's, else the
// cluster name.
func HAClusterID(fc *v1beta1.FlinkCluster) string {
	for _, k := range []string{KeyKubernetesClusterID, KeyHAClusterID} {
		if v := fc.Spec.FlinkProperties[k]; v != "" {
			return v
		}
	}
	return fc.Name
}

// JobResultStorePath is a deploy's job result store under the HA storage directory; "" without HA.
func JobResultStorePath(fc *v1beta1.FlinkCluster, jobID string) string {
	dir := strings.TrimSuffix(fc.Spec.FlinkProperties[KeyHAStorageDir], "/")
	if dir == "" || jobID == "" || !flinkcluster.HAEnabled(fc.Spec.FlinkProperties) {
		return ""
	}
	return dir + "/job-result-store/" + HAClusterID(fc) + "/" + jobID
}

// FlinkConfiguration returns a deploy's Flink configuration: derived entries overridden by
// flinkProperties, except the JobManager address and ports, the parallelism and the restore
// path, which is here so that the controller can take it out once the job ran without
// replacing the pod. With HA the job result store (delete-on-commit false) is the deploy's
// own: a JobManager restarted after its job ended finds its result and does not run main()
// again (FLINK-27569), and never finds another deploy's.
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
	// The operator passes the parallelism as -Dparallelism.default, which beats the file: it wins
	// here too.
	if p, ok := JobParallelism(fc); ok && fc.Spec.Job != nil {
		conf[KeyDefaultParallelism] = strconv.Itoa(int(p))
	}
	// A user's restore path would be read by every fresh main(): the deploy's own replaces it,
	// under the key every supported Flink reads.
	delete(conf, KeySavepointPath)
	delete(conf, KeyStateRecoveryPath)
	if d.FromSavepoint != "" {
		conf[KeySavepointPath] = d.FromSavepoint
		if j := fc.Spec.Job; j != nil && j.AllowNonRestoredState != nil && *j.AllowNonRestoredState {
			conf[KeyIgnoreUnclaimedState] = "true"
		}
	}
	// The JobManager must outlive the job for the controller to read its end and savepoint: a
	// Deployment's pod would restart, a Job's exit first and leave the update waiting forever. The
	// controller ends it itself (endJobManager): a user's true is overridden (policy warns).
	conf[KeyShutdownOnApplicationEnd] = "false"
	return conf
}

// usesStandardYAML reports whether the version reads config.yaml (2.0+); an unparsable one counts
// as current.
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

// renderConfig writes the configuration file, quoting as YAML requires only in config.yaml: the
// legacy file's quotes would be part of the value.
func renderConfig(fc *v1beta1.FlinkCluster, conf map[string]string) (string, error) {
	return RenderConfig(conf, usesStandardYAML(fc.Spec.FlinkVersion))
}

// RenderConfig writes config.yaml (standard) or the legacy flink-conf.yaml, which Flink 1.x
// reads line by line; the real-Flink test kit writes a pod's file with it too.
func RenderConfig(conf map[string]string, standard bool) (string, error) {
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

// DropSavepoint takes the restore path out of a ConfigMap that ConfigMap built, whatever its
// revision, once the job ran; it reports whether it changed.
func DropSavepoint(cm *corev1.ConfigMap) (bool, error) { return ReplaceSavepoint(cm, "") }

// ReplaceSavepoint sets the restore path of a ConfigMap that ConfigMap built, in the file and in
// KeyRestorePath where present; it reports whether it changed.
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
		if cm.Data[name], err = RenderConfig(conf, standard); err != nil {
			return false, err
		}
		changed = true
	}
	return changed, nil
}

// Configuration is the Flink configuration a ConfigMap built by ConfigMap holds, or nil.
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
	// Written for every Deployment with HA, not only where the pod reads it: a JobManager created
	// under an older spec must find it, or the kubelet would not start its container.
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
