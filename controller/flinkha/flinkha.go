// Package flinkha reads and writes the metadata that Flink's Kubernetes high-availability
// services keep in ConfigMaps (KubernetesLeaderElectionHaServices, Flink 1.15 and later: one
// leader election per JobManager process): which ConfigMaps belong to a cluster, who leads,
// at which address, and which job graphs a new JobManager would recover.
//
// The names, labels, keys and value formats are Flink's, read from its sources; each is
// documented with the Flink class that defines it. The functions are pure: they take and
// return ConfigMaps, and never call the API server.
package flinkha

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/flinkcluster"
)

// Labels Flink puts on its HA ConfigMaps (KubernetesUtils.getConfigMapLabels, on top of
// KubernetesUtils.getCommonLabels). Flink 1.x adds configmap-type: high-availability; Flink 2
// does not (its getConfigMapLabels returns the common labels alone), so the controller
// selects by the common labels and tells HA ConfigMaps apart by name (IsHAConfigMap).
const (
	// LabelType is Constants.LABEL_TYPE_KEY.
	LabelType = "type"
	// LabelTypeNative is Constants.LABEL_TYPE_NATIVE_TYPE.
	LabelTypeNative = "flink-native-kubernetes"
	// LabelApp is Constants.LABEL_APP_KEY; its value is the cluster ID.
	LabelApp = "app"
	// LabelConfigMapType is Constants.LABEL_CONFIGMAP_TYPE_KEY of Flink 1.x.
	LabelConfigMapType = "configmap-type"
	// LabelConfigMapTypeHA is Constants.LABEL_CONFIGMAP_TYPE_HIGH_AVAILABILITY of Flink 1.x.
	LabelConfigMapTypeHA = "high-availability"
)

// LeaderAnnotation is the annotation holding the leader election record on the cluster
// ConfigMap (KubernetesLeaderElector.LEADER_ANNOTATION_KEY; the record is written by the
// fabric8 ConfigMapLock: LeaderElectionRecord).
const LeaderAnnotation = "control-plane.alpha.kubernetes.io/leader"

// Data keys of the HA ConfigMaps.
const (
	// LeaderKeyPrefix prefixes a component's leader information in the cluster ConfigMap
	// (KubernetesUtils.LEADER_PREFIX, KubernetesUtils.createSingleLeaderKey).
	LeaderKeyPrefix = "org.apache.flink.k8s.leader."
	// JobGraphKeyPrefix prefixes a stored job graph in the cluster ConfigMap of Flink 1.x
	// (Constants.JOB_GRAPH_STORE_KEY_PREFIX, KubernetesJobGraphStoreUtil.jobIDToName).
	JobGraphKeyPrefix = "jobGraph-"
	// ExecutionPlanKeyPrefix prefixes the same record from Flink 2.0 on, where the job graph
	// store became the execution plan store (Constants.EXECUTION_PLAN_STORE_KEY_PREFIX,
	// KubernetesExecutionPlanStoreUtil.jobIDToName).
	ExecutionPlanKeyPrefix = "executionPlan-"
	// CheckpointKeyPrefix prefixes a completed checkpoint pointer in a job's ConfigMap
	// (Constants.CHECKPOINT_ID_KEY_PREFIX).
	CheckpointKeyPrefix = "checkpointID-"
	// CheckpointCounterKey is the checkpoint ID counter in a job's ConfigMap
	// (Constants.CHECKPOINT_COUNTER_KEY).
	CheckpointCounterKey = "counter"
)

// Leader components (KubernetesLeaderElectionHaServices.getLeaderPathFor…). A job's JobMaster
// publishes under its job ID itself (getLeaderPathForJobManager returns jobID.toString()):
// the controller does not read it, so there is no helper for it.
const (
	ComponentRestServer      = "restserver"
	ComponentDispatcher      = "dispatcher"
	ComponentResourceManager = "resourcemanager"
)

// ClusterConfigMapName is the ConfigMap holding leader election, leader addresses and job
// graphs: <cluster-id>-cluster-config-map (KubernetesLeaderElectionHaServices.getClusterConfigMap).
func ClusterConfigMapName(clusterID string) string { return clusterID + "-cluster-config-map" }

// JobConfigMapName is the ConfigMap holding a job's checkpoint pointers and counter:
// <cluster-id>-<job-id>-config-map (KubernetesLeaderElectionHaServices.getJobSpecificConfigMap).
func JobConfigMapName(clusterID, jobID string) string {
	return clusterID + "-" + jobID + "-config-map"
}

// Labels are the labels every HA ConfigMap of a cluster carries in every Flink release:
// what a caller lists them by. Other ConfigMaps of a native-mode cluster carry them too, so a
// list by them is filtered with IsHAConfigMap.
func Labels(clusterID string) map[string]string {
	return map[string]string{
		LabelType: LabelTypeNative,
		LabelApp:  clusterID,
	}
}

// NewConfigMap returns an empty HA ConfigMap of a cluster, labelled as Flink 2 labels it
// (for fakes and tests: Flink creates these itself).
func NewConfigMap(namespace, name, clusterID string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: Labels(clusterID)},
		Data:       map[string]string{},
	}
}

// IsHAConfigMap reports whether cm is an HA ConfigMap of clusterID: Flink's labels for the
// cluster ID, and the name of its cluster ConfigMap or of one of its jobs' ConfigMaps.
func IsHAConfigMap(cm *corev1.ConfigMap, clusterID string) bool {
	if cm == nil {
		return false
	}
	for k, v := range Labels(clusterID) {
		if cm.Labels[k] != v {
			return false
		}
	}
	if cm.Name == ClusterConfigMapName(clusterID) {
		return true
	}
	id, ok := strings.CutSuffix(strings.TrimPrefix(cm.Name, clusterID+"-"), "-config-map")
	return ok && strings.HasPrefix(cm.Name, clusterID+"-") && jobIDPattern.MatchString(id)
}

// jobIDPattern is a Flink job ID as it appears in a ConfigMap name: 32 hex digits.
var jobIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// LeaderInfo is what the cluster ConfigMap says about the current leader.
type LeaderInfo struct {
	// Address is the REST server leader's address, e.g. http://10.0.3.7:8081: the JobManager
	// whose REST API answers for the cluster.
	Address string
	// SessionID is the REST server leader's session (a UUID).
	SessionID string
	// Holder is the lock identity in the election record: a UUID per JobManager process
	// (not a pod name), or empty once the leader stepped down.
	Holder string
	// RenewTime is when the holder last renewed the lease; LeaseDuration how long the lease
	// lasts without renewal (high-availability.kubernetes.leader-election.lease-duration).
	RenewTime     time.Time
	LeaseDuration time.Duration
}

// Host is the host part of Address (the leader pod's IP with Flink's defaults), or "".
func (l LeaderInfo) Host() string {
	u, err := url.Parse(l.Address)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// Expired reports whether the lease ran out at now without renewal: a holder that stops
// renewing (a dead or partitioned JobManager) loses the lock after LeaseDuration.
func (l LeaderInfo) Expired(now time.Time) bool {
	return !now.Before(l.RenewTime.Add(l.LeaseDuration))
}

// electionRecord is the JSON of LeaderAnnotation (fabric8 LeaderElectionRecord). Flink writes
// leaseDuration as decimal seconds (15.000000000); client-go's leaseDurationSeconds is also read.
type electionRecord struct {
	HolderIdentity       string          `json:"holderIdentity"`
	LeaseDuration        json.RawMessage `json:"leaseDuration"`
	LeaseDurationSeconds *float64        `json:"leaseDurationSeconds"`
	AcquireTime          string          `json:"acquireTime"`
	RenewTime            string          `json:"renewTime"`
	LeaderTransitions    int             `json:"leaderTransitions"`
}

// Election is a parsed leader election record.
type Election struct {
	Holder            string
	LeaseDuration     time.Duration
	AcquireTime       time.Time
	RenewTime         time.Time
	LeaderTransitions int
}

// ParseElection parses the value of LeaderAnnotation. Bad input is an error, never a panic.
func ParseElection(value string) (Election, error) {
	var r electionRecord
	if err := json.Unmarshal([]byte(value), &r); err != nil {
		return Election{}, fmt.Errorf("leader election record: %w", err)
	}
	e := Election{Holder: r.HolderIdentity, LeaderTransitions: r.LeaderTransitions}
	var err error
	if e.LeaseDuration, err = parseLeaseDuration(r.LeaseDuration, r.LeaseDurationSeconds); err != nil {
		return Election{}, err
	}
	if e.RenewTime, err = parseRecordTime(r.RenewTime); err != nil {
		return Election{}, fmt.Errorf("leader election record: renewTime: %w", err)
	}
	if r.AcquireTime != "" {
		if e.AcquireTime, err = parseRecordTime(r.AcquireTime); err != nil {
			return Election{}, fmt.Errorf("leader election record: acquireTime: %w", err)
		}
	}
	return e, nil
}

// FormatElection writes a leader election record as Flink (fabric8) does, for fakes and tests.
func FormatElection(e Election) string {
	const layout = "2006-01-02T15:04:05.000000Z"
	b, _ := json.Marshal(map[string]any{
		"holderIdentity":    e.Holder,
		"leaseDuration":     json.Number(strconv.FormatFloat(e.LeaseDuration.Seconds(), 'f', 9, 64)),
		"acquireTime":       e.AcquireTime.UTC().Format(layout),
		"renewTime":         e.RenewTime.UTC().Format(layout),
		"leaderTransitions": e.LeaderTransitions,
	})
	return string(b)
}

func parseLeaseDuration(raw json.RawMessage, seconds *float64) (time.Duration, error) {
	var secs float64
	switch {
	case len(raw) > 0 && raw[0] == '"':
		// An ISO-8601 duration (PT15S), as Jackson writes a Duration without timestamps.
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, fmt.Errorf("leader election record: leaseDuration: %w", err)
		}
		d, err := parseISODuration(s)
		if err != nil {
			return 0, fmt.Errorf("leader election record: leaseDuration: %w", err)
		}
		return d, nil
	case len(raw) > 0 && string(raw) != "null":
		if err := json.Unmarshal(raw, &secs); err != nil {
			return 0, fmt.Errorf("leader election record: leaseDuration: %w", err)
		}
	case seconds != nil:
		secs = *seconds
	default:
		return 0, fmt.Errorf("leader election record: no lease duration")
	}
	if secs < 0 || secs > math.MaxInt64/float64(time.Second) || math.IsNaN(secs) {
		return 0, fmt.Errorf("leader election record: lease duration %v out of range", secs)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// parseISODuration reads the PTnHnMn.nS durations Jackson writes.
func parseISODuration(s string) (time.Duration, error) {
	rest, ok := strings.CutPrefix(s, "PT")
	if !ok || rest == "" {
		return 0, fmt.Errorf("%q is not a PT… duration", s)
	}
	d, err := time.ParseDuration(strings.ToLower(rest))
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a PT… duration", s)
	}
	return d, nil
}

func parseRecordTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, fmt.Errorf("missing")
	}
	return time.Parse(time.RFC3339Nano, s)
}

// LeaderKey is the data key of a component's leader information in the cluster ConfigMap.
func LeaderKey(component string) string { return LeaderKeyPrefix + component }

// ParseLeaderInformation splits a leader information value, "<session-id>,<address>"
// (KubernetesUtils.encodeLeaderInformation / parseLeaderInformation).
func ParseLeaderInformation(value string) (sessionID, address string, err error) {
	sessionID, address, ok := strings.Cut(value, ",")
	if !ok || sessionID == "" || address == "" {
		return "", "", fmt.Errorf("leader information %q: want <session-id>,<address>", value)
	}
	return sessionID, address, nil
}

// FormatLeaderInformation is the inverse of ParseLeaderInformation.
func FormatLeaderInformation(sessionID, address string) string { return sessionID + "," + address }

// ComponentLeader returns a component's leader session and address from the cluster
// ConfigMap; ok is false when the ConfigMap has none or it cannot be read.
func ComponentLeader(cm *corev1.ConfigMap, component string) (sessionID, address string, ok bool) {
	if cm == nil {
		return "", "", false
	}
	v, found := cm.Data[LeaderKey(component)]
	if !found {
		return "", "", false
	}
	sessionID, address, err := ParseLeaderInformation(v)
	return sessionID, address, err == nil
}

// Leader reads who leads the cluster from its cluster ConfigMap: the election record's
// holder and lease, and the REST server leader's address. ok is false when the ConfigMap
// has no valid election record, no holder (the leader stepped down), or no REST server
// leader address: then nobody can be trusted to speak for the cluster.
func Leader(cm *corev1.ConfigMap) (LeaderInfo, bool) {
	if cm == nil {
		return LeaderInfo{}, false
	}
	e, err := ParseElection(cm.Annotations[LeaderAnnotation])
	if err != nil || e.Holder == "" {
		return LeaderInfo{}, false
	}
	session, address, ok := ComponentLeader(cm, ComponentRestServer)
	if !ok {
		return LeaderInfo{}, false
	}
	return LeaderInfo{
		Address: address, SessionID: session, Holder: e.Holder,
		RenewTime: e.RenewTime, LeaseDuration: e.LeaseDuration,
	}, true
}

// DispatcherHost is the host of the dispatcher leader's RPC address in the cluster ConfigMap
// (pekko.tcp://flink@<host>:<port>/user/rpc/dispatcher_1; akka.tcp before Flink 1.18), or ""
// when there is none. It is the JobManager's bind address (jobmanager.rpc.address, which
// -Djobmanager.rpc.address sets to the pod IP), so it names the leading pod even when rest.address makes the
// REST server's address a Service name or a host that is not the pod's.
func DispatcherHost(cm *corev1.ConfigMap) string {
	_, address, ok := ComponentLeader(cm, ComponentDispatcher)
	if !ok {
		return ""
	}
	u, err := url.Parse(address)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Hostname()
}

// LeaseDurationKey is Flink's high-availability.kubernetes.leader-election.lease-duration
// (KubernetesHighAvailabilityOptions.KUBERNETES_LEASE_DURATION): how long a leader that
// stops renewing keeps the lock.
const LeaseDurationKey = "high-availability.kubernetes.leader-election.lease-duration"

// DefaultLeaseDuration is the default of LeaseDurationKey.
const DefaultLeaseDuration = 15 * time.Second

// LeaseDuration reads LeaseDurationKey from a Flink configuration, DefaultLeaseDuration when
// it is unset. The value is parsed as Flink's TimeUtils.parseDuration does, by the parser the
// webhook checks Flink durations with (flinkcluster.ParseFlinkDuration), so that a value it
// admitted is one the controller reads.
func LeaseDuration(props map[string]string) (time.Duration, error) {
	v, ok := props[LeaseDurationKey]
	if !ok || strings.TrimSpace(v) == "" {
		return DefaultLeaseDuration, nil
	}
	d, err := flinkcluster.ParseFlinkDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", LeaseDurationKey, err)
	}
	return d, nil
}

// JobGraphs lists the job IDs whose job graphs (Flink 1.x) or execution plans (Flink 2.x)
// the cluster ConfigMap stores, sorted: the jobs a JobManager started with this cluster ID
// recovers, whatever its command line says.
func JobGraphs(cm *corev1.ConfigMap) []string {
	if cm == nil {
		return nil
	}
	var ids []string
	for k := range cm.Data {
		for _, prefix := range []string{JobGraphKeyPrefix, ExecutionPlanKeyPrefix} {
			if id, ok := strings.CutPrefix(k, prefix); ok && id != "" && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// JobGraphKey is the data key of a job's graph in the cluster ConfigMap of Flink 1.x.
func JobGraphKey(jobID string) string { return JobGraphKeyPrefix + jobID }

// ExecutionPlanKey is the data key of a job's execution plan in the cluster ConfigMap of
// Flink 2.x.
func ExecutionPlanKey(jobID string) string { return ExecutionPlanKeyPrefix + jobID }

// CheckpointKey is the data key of a completed checkpoint in a job's ConfigMap: the ID is
// zero-padded to 19 digits so that keys sort like IDs (KubernetesCheckpointStoreUtil).
func CheckpointKey(checkpointID int64) string {
	return fmt.Sprintf("%s%019d", CheckpointKeyPrefix, checkpointID)
}

// CheckpointIDs lists the IDs of the completed checkpoints a job's ConfigMap stores, sorted:
// the checkpoint store (DefaultCompletedCheckpointStore over KubernetesStateHandleStore)
// that a JobMaster of the same job ID recovers, restoring the highest. Each value is Flink's
// serialized state handle of the checkpoint's metadata in high-availability.storageDir,
// which this package does not read: the IDs are in the keys (KubernetesCheckpointStoreUtil).
// A malformed key is skipped, as Flink skips keys it does not own.
func CheckpointIDs(cm *corev1.ConfigMap) []int64 {
	if cm == nil {
		return nil
	}
	var ids []int64
	for k := range cm.Data {
		s, ok := strings.CutPrefix(k, CheckpointKeyPrefix)
		if !ok || s == "" {
			continue
		}
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil || id < 0 {
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// IsJobGraphKey reports whether a data key of the cluster ConfigMap stores a job graph
// (Flink 1.x) or execution plan (Flink 2.x): what a last-state redeploy removes, as the
// Flink Kubernetes operator's FlinkUtils.deleteJobGraphInKubernetesHA does, so that the new
// JobManager runs main() with the new spec instead of recovering the old graph.
func IsJobGraphKey(k string) bool {
	return strings.HasPrefix(k, JobGraphKeyPrefix) || strings.HasPrefix(k, ExecutionPlanKeyPrefix)
}
