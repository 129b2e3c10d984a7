// Package flinkha reads and writes what Flink's Kubernetes HA services (1.15+) keep in
// ConfigMaps: who leads where, and which job graphs a new JobManager would recover. Names,
// keys and formats are Flink's, named by their Flink class; nothing here calls the API server.
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

// Labels Flink puts on its HA ConfigMaps; only Flink 1.x adds configmap-type.
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

// LeaderAnnotation holds the election record (KubernetesLeaderElector.LEADER_ANNOTATION_KEY).
const LeaderAnnotation = "control-plane.alpha.kubernetes.io/leader"

const (
	// LeaderKeyPrefix is KubernetesUtils.LEADER_PREFIX, in the cluster ConfigMap.
	LeaderKeyPrefix = "org.apache.flink.k8s.leader."
	// JobGraphKeyPrefix is Constants.JOB_GRAPH_STORE_KEY_PREFIX (Flink 1.x, cluster ConfigMap).
	JobGraphKeyPrefix = "jobGraph-"
	// ExecutionPlanKeyPrefix is Constants.EXECUTION_PLAN_STORE_KEY_PREFIX, its Flink 2 successor.
	ExecutionPlanKeyPrefix = "executionPlan-"
	// CheckpointKeyPrefix is Constants.CHECKPOINT_ID_KEY_PREFIX, in a job's ConfigMap.
	CheckpointKeyPrefix = "checkpointID-"
	// CheckpointCounterKey is Constants.CHECKPOINT_COUNTER_KEY, in a job's ConfigMap.
	CheckpointCounterKey = "counter"
)

// Leader components (getLeaderPathFor…); a JobMaster's, under its job ID, is not read.
const (
	ComponentRestServer      = "restserver"
	ComponentDispatcher      = "dispatcher"
	ComponentResourceManager = "resourcemanager"
)

// ClusterConfigMapName names the ConfigMap of leader election, leader addresses and job graphs.
func ClusterConfigMapName(clusterID string) string { return clusterID + "-cluster-config-map" }

// JobConfigMapName names the ConfigMap of a job's checkpoint pointers and counter.
func JobConfigMapName(clusterID, jobID string) string {
	return clusterID + "-" + jobID + "-config-map"
}

// Labels are the labels of a cluster's HA ConfigMaps in every release, not theirs alone
// (IsHAConfigMap).
func Labels(clusterID string) map[string]string {
	return map[string]string{
		LabelType: LabelTypeNative,
		LabelApp:  clusterID,
	}
}

// NewConfigMap returns an empty HA ConfigMap labelled as Flink 2 does, for fakes and tests.
func NewConfigMap(namespace, name, clusterID string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: Labels(clusterID)},
		Data:       map[string]string{},
	}
}

// IsHAConfigMap reports whether cm is, by labels and name, an HA ConfigMap of clusterID.
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

var jobIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// LeaderInfo is what the cluster ConfigMap says about the current leader.
type LeaderInfo struct {
	// Address is the REST server leader's URL: the JobManager whose REST API answers.
	Address string
	// SessionID is the REST server leader's session (a UUID).
	SessionID string
	// Holder is the lock identity (a UUID per JobManager process), empty once it stepped down.
	Holder string
	// RenewTime is the holder's last renewal; LeaseDuration how long the lock lasts without one.
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

// Expired reports whether the lease ran out at now: a dead or partitioned holder loses the lock.
func (l LeaderInfo) Expired(now time.Time) bool {
	return !now.Before(l.RenewTime.Add(l.LeaseDuration))
}

// electionRecord is LeaderAnnotation's JSON; Flink writes leaseDuration as seconds (15.000000000).
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

// ParseLeaderInformation splits "<session-id>,<address>".
func ParseLeaderInformation(value string) (sessionID, address string, err error) {
	sessionID, address, ok := strings.Cut(value, ",")
	if !ok || sessionID == "" || address == "" {
		return "", "", fmt.Errorf("leader information %q: want <session-id>,<address>", value)
	}
	return sessionID, address, nil
}

// FormatLeaderInformation is the inverse of ParseLeaderInformation.
func FormatLeaderInformation(sessionID, address string) string { return sessionID + "," + address }

// ComponentLeader returns a component's leader session and address from the cluster ConfigMap.
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

// Leader reads the election's holder and lease and the REST leader's address, or ok is false.
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

// DispatcherHost is the dispatcher leader's RPC host, or "": the pod IP jobmanager.rpc.address
// is set to, which names the leading pod even when rest.address names a Service.
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

// LeaseDurationKey is how long a leader that stops renewing keeps the lock.
const LeaseDurationKey = "high-availability.kubernetes.leader-election.lease-duration"

// DefaultLeaseDuration is the default of LeaseDurationKey.
const DefaultLeaseDuration = 15 * time.Second

// LeaseDuration reads LeaseDurationKey (DefaultLeaseDuration when unset) with the webhook's
// parser, so that what it admitted is read alike.
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

// JobGraphs lists the job IDs whose graphs a new JobManager recovers, whatever its arguments.
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

// ExecutionPlanKey is the data key of a job's execution plan (Flink 2.x).
func ExecutionPlanKey(jobID string) string { return ExecutionPlanKeyPrefix + jobID }

// CheckpointKey is a checkpoint's data key, its ID zero-padded to 19 digits to sort like IDs.
func CheckpointKey(checkpointID int64) string {
	return fmt.Sprintf("%s%019d", CheckpointKeyPrefix, checkpointID)
}

// CheckpointIDs lists, sorted, the completed checkpoints a job's ConfigMap stores: a JobMaster
// of the job ID restores the highest. The values (state handles in high-availability.storageDir)
// are not read; malformed keys are skipped, as Flink skips keys it does not own.
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

// IsJobGraphKey reports whether a key stores a job graph or execution plan, which a last-state
// redeploy removes (as Flink's operator does) so that main() runs with the new spec.
func IsJobGraphKey(k string) bool {
	return strings.HasPrefix(k, JobGraphKeyPrefix) || strings.HasPrefix(k, ExecutionPlanKeyPrefix)
}
