package flinkha_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flink-admission/flink-admission/controller/flinkha"
)

const (
	clusterID = "wordcount-ab12cd"
	jobA      = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
	jobB      = "ffffffffffffffffffffffffffffffff"
)

// clusterConfigMap is a cluster ConfigMap as Flink 1.20 / 2.x writes it (values of the job
// graph entries are base64 Java-serialized state handles; their content does not matter).
func clusterConfigMap(annotation string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: clusterID + "-cluster-config-map", Namespace: "default",
			Labels: map[string]string{
				"app": clusterID, "configmap-type": "high-availability", "type": "flink-native-kubernetes",
			},
			Annotations: map[string]string{"control-plane.alpha.kubernetes.io/leader": annotation},
		},
		Data: data,
	}
}

const flinkRecord = `{"holderIdentity":"623e39fb-70c3-44f1-811f-561ec4a28d75","leaseDuration":15.000000000,"acquireTime":"2020-10-20T04:06:31.431000Z","renewTime":"2020-10-22T08:51:36.843000Z","leaderTransitions":3}`

func TestNames(t *testing.T) {
	assert.Equal(t, "wordcount-ab12cd-cluster-config-map", flinkha.ClusterConfigMapName(clusterID))
	assert.Equal(t, "wordcount-ab12cd-"+jobA+"-config-map", flinkha.JobConfigMapName(clusterID, jobA))
	assert.Equal(t, map[string]string{"app": clusterID, "type": "flink-native-kubernetes"}, flinkha.Labels(clusterID), "Flink 2's labels: the common ones alone")
	assert.Equal(t, "org.apache.flink.k8s.leader.restserver", flinkha.LeaderKey(flinkha.ComponentRestServer))
	assert.Equal(t, "jobGraph-"+jobA, flinkha.JobGraphKey(jobA))
	assert.Equal(t, "checkpointID-0000000000000000042", flinkha.CheckpointKey(42))

	cm := flinkha.NewConfigMap("default", flinkha.ClusterConfigMapName(clusterID), clusterID)
	assert.True(t, flinkha.IsHAConfigMap(cm, clusterID))
	assert.False(t, flinkha.IsHAConfigMap(cm, "other"), "another cluster's ConfigMap")
	assert.False(t, flinkha.IsHAConfigMap(nil, clusterID))
	assert.True(t, flinkha.IsHAConfigMap(flinkha.NewConfigMap("default", flinkha.JobConfigMapName(clusterID, jobA), clusterID), clusterID), "a job's ConfigMap")
	assert.False(t, flinkha.IsHAConfigMap(flinkha.NewConfigMap("default", "flink-config-"+clusterID, clusterID), clusterID),
		"a native-mode cluster's configuration ConfigMap carries the same labels and is no HA ConfigMap")
}

func TestLeader(t *testing.T) {
	renew := time.Date(2020, 10, 22, 8, 51, 36, 843000000, time.UTC)
	full := map[string]string{
		"org.apache.flink.k8s.leader.restserver":      "2f7e2bd8-6c8f-4d33-9c9a-3f5cbb0cbd11,http://10.0.3.7:8081",
		"org.apache.flink.k8s.leader.dispatcher":      "2f7e2bd8-6c8f-4d33-9c9a-3f5cbb0cbd11,pekko.tcp://flink@10.0.3.7:6123/user/rpc/dispatcher_1",
		"org.apache.flink.k8s.leader.resourcemanager": "2f7e2bd8-6c8f-4d33-9c9a-3f5cbb0cbd11,pekko.tcp://flink@10.0.3.7:6123/user/rpc/resourcemanager_0",
		"jobGraph-" + jobA:                            "rO0ABXNyADtvcmcuYXBhY2hlLmZsaW5r",
	}
	for _, tc := range []struct {
		name       string
		annotation string
		data       map[string]string
		want       flinkha.LeaderInfo
		ok         bool
	}{
		{
			name: "leads: Flink's record and the REST server's address", annotation: flinkRecord, data: full, ok: true,
			want: flinkha.LeaderInfo{
				Address: "http://10.0.3.7:8081", SessionID: "2f7e2bd8-6c8f-4d33-9c9a-3f5cbb0cbd11",
				Holder: "623e39fb-70c3-44f1-811f-561ec4a28d75", RenewTime: renew, LeaseDuration: 15 * time.Second,
			},
		},
		{
			name:       "leads: client-go style record",
			annotation: `{"holderIdentity":"h","leaseDurationSeconds":30,"acquireTime":"2020-10-22T08:51:36Z","renewTime":"2020-10-22T08:51:36.843Z","leaderTransitions":0}`,
			data:       full, ok: true,
			want: flinkha.LeaderInfo{
				Address: "http://10.0.3.7:8081", SessionID: "2f7e2bd8-6c8f-4d33-9c9a-3f5cbb0cbd11",
				Holder: "h", RenewTime: renew, LeaseDuration: 30 * time.Second,
			},
		},
		{name: "nobody: the leader stepped down", annotation: `{"holderIdentity":"","leaseDuration":15.0,"acquireTime":"2020-10-22T08:51:36Z","renewTime":"2020-10-22T08:51:36Z","leaderTransitions":4}`, data: full},
		{name: "nobody: no record", data: full},
		{name: "nobody: garbage record", annotation: `{"holderIdentity":`, data: full},
		{name: "nobody: no renew time", annotation: `{"holderIdentity":"h","leaseDuration":15}`, data: full},
		{name: "nobody: negative lease", annotation: `{"holderIdentity":"h","leaseDuration":-1,"renewTime":"2020-10-22T08:51:36Z"}`, data: full},
		{name: "nobody: no REST server address yet", annotation: flinkRecord, data: map[string]string{"jobGraph-" + jobA: "x"}},
		{name: "nobody: REST server entry without a session", annotation: flinkRecord, data: map[string]string{"org.apache.flink.k8s.leader.restserver": "http://10.0.3.7:8081"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := flinkha.Leader(clusterConfigMap(tc.annotation, tc.data))
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
	_, ok := flinkha.Leader(nil)
	assert.False(t, ok, "no ConfigMap, no leader")
}

func TestLeaderHostAndExpiry(t *testing.T) {
	l, ok := flinkha.Leader(clusterConfigMap(flinkRecord, map[string]string{"org.apache.flink.k8s.leader.restserver": "s,http://10.0.3.7:8081"}))
	require.True(t, ok)
	assert.Equal(t, "10.0.3.7", l.Host())
	assert.False(t, l.Expired(l.RenewTime.Add(14*time.Second)), "within the lease")
	assert.True(t, l.Expired(l.RenewTime.Add(15*time.Second)), "lease ran out")
	assert.Equal(t, "", flinkha.LeaderInfo{Address: "::"}.Host())
}

func TestISOLeaseDuration(t *testing.T) {
	e, err := flinkha.ParseElection(`{"holderIdentity":"h","leaseDuration":"PT1M30S","renewTime":"2020-10-22T08:51:36Z"}`)
	require.NoError(t, err)
	assert.Equal(t, 90*time.Second, e.LeaseDuration)
	_, err = flinkha.ParseElection(`{"holderIdentity":"h","leaseDuration":"15s","renewTime":"2020-10-22T08:51:36Z"}`)
	assert.Error(t, err)
}

func TestFormatElectionRoundTrips(t *testing.T) {
	in := flinkha.Election{
		Holder: "623e39fb", LeaseDuration: 15 * time.Second, LeaderTransitions: 2,
		AcquireTime: time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC),
		RenewTime:   time.Date(2026, 1, 2, 3, 4, 20, 0, time.UTC),
	}
	s := flinkha.FormatElection(in)
	assert.Contains(t, s, `"leaseDuration":15.000000000`, "Flink writes decimal seconds")
	assert.Contains(t, s, `"renewTime":"2026-01-02T03:04:20.000000Z"`, "Flink writes microseconds")
	out, err := flinkha.ParseElection(s)
	require.NoError(t, err)
	assert.Equal(t, in, out)
}

func TestJobGraphs(t *testing.T) {
	for _, tc := range []struct {
		name string
		data map[string]string
		want []string
	}{
		{name: "none", data: map[string]string{"org.apache.flink.k8s.leader.restserver": "s,http://a:1"}},
		{name: "one", data: map[string]string{"jobGraph-" + jobA: "x", "org.apache.flink.k8s.leader.job-" + jobA: "s,pekko://a"}, want: []string{jobA}},
		{name: "two, sorted", data: map[string]string{"jobGraph-" + jobB: "x", "jobGraph-" + jobA: "y"}, want: []string{jobA, jobB}},
		{name: "a bare prefix is no job", data: map[string]string{"jobGraph-": "x", "executionPlan-": "x"}},
		{name: "Flink 2.x execution plans", data: map[string]string{"executionPlan-" + jobB: "x", "executionPlan-" + jobA: "y"}, want: []string{jobA, jobB}},
		{name: "both names of one job count once", data: map[string]string{"executionPlan-" + jobA: "x", "jobGraph-" + jobA: "y"}, want: []string{jobA}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, flinkha.JobGraphs(clusterConfigMap(flinkRecord, tc.data)))
		})
	}
	assert.Nil(t, flinkha.JobGraphs(nil))
}

func TestLeaderInformation(t *testing.T) {
	s, a, err := flinkha.ParseLeaderInformation(flinkha.FormatLeaderInformation("sid", "http://h:8081,x"))
	require.NoError(t, err)
	assert.Equal(t, "sid", s)
	assert.Equal(t, "http://h:8081,x", a, "the address is everything after the first comma")
	for _, bad := range []string{"", "nocomma", ",addr", "sid,"} {
		_, _, err := flinkha.ParseLeaderInformation(bad)
		assert.Error(t, err, bad)
	}
}

func FuzzParseElection(f *testing.F) {
	f.Add(flinkRecord)
	f.Add(`{"holderIdentity":"h","leaseDuration":"PT15S","renewTime":"2020-10-22T08:51:36Z"}`)
	f.Add(`{"leaseDurationSeconds":1e308,"renewTime":"x"}`)
	f.Fuzz(func(t *testing.T, s string) {
		e, err := flinkha.ParseElection(s)
		if err != nil {
			return
		}
		if e.LeaseDuration < 0 {
			t.Fatalf("negative lease %v from %q", e.LeaseDuration, s)
		}
		cm := clusterConfigMap(s, map[string]string{"org.apache.flink.k8s.leader.restserver": "s,http://h:1"})
		l, ok := flinkha.Leader(cm)
		if ok != (e.Holder != "") || (ok && l.Holder != e.Holder) {
			t.Fatalf("Leader disagrees with ParseElection on %q", s)
		}
	})
}

func FuzzParseLeaderInformation(f *testing.F) {
	f.Add("2f7e2bd8-6c8f-4d33-9c9a-3f5cbb0cbd11,http://10.0.3.7:8081")
	f.Fuzz(func(t *testing.T, s string) {
		sid, addr, err := flinkha.ParseLeaderInformation(s)
		if err == nil && flinkha.FormatLeaderInformation(sid, addr) != s {
			t.Fatalf("round trip of %q", s)
		}
	})
}

func TestDispatcherHost(t *testing.T) {
	for _, tc := range []struct {
		name, value, want string
	}{
		{"pekko address (Flink 1.18 and later)", "s,pekko.tcp://flink@10.0.3.7:6123/user/rpc/dispatcher_1", "10.0.3.7"},
		{"akka address (Flink before 1.18)", "s,akka.tcp://flink@10.0.3.8:6123/user/rpc/dispatcher_1", "10.0.3.8"},
		{"no session: unreadable", "pekko.tcp://flink@10.0.3.7:6123/user/rpc/dispatcher_1", ""},
		{"no host", "s,not a url", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cm := clusterConfigMap(flinkRecord, map[string]string{"org.apache.flink.k8s.leader.dispatcher": tc.value})
			assert.Equal(t, tc.want, flinkha.DispatcherHost(cm))
		})
	}
	assert.Equal(t, "", flinkha.DispatcherHost(nil))
}

func TestLeaseDuration(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration
		err   bool
	}{
		{"", flinkha.DefaultLeaseDuration, false},
		{"15 s", 15 * time.Second, false},
		{"60s", time.Minute, false},
		{"2 min", 2 * time.Minute, false},
		{"1 h", time.Hour, false},
		{"30000", 30 * time.Second, false},
		// ISO-8601, which the webhook admits as a Flink duration.
		{"PT30S", 30 * time.Second, false},
		{"15 fortnights", 0, true},
		{"s15", 0, true},
		{"99999999999999999999 d", 0, true},
	} {
		t.Run(tc.value, func(t *testing.T) {
			props := map[string]string{}
			if tc.value != "" {
				props[flinkha.LeaseDurationKey] = tc.value
			}
			got, err := flinkha.LeaseDuration(props)
			if tc.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestCheckpointIDsReadsTheKeysOfTheCheckpointStore(t *testing.T) {
	cm := flinkha.NewConfigMap("ns", flinkha.JobConfigMapName("c", "j"), "c")
	cm.Data[flinkha.CheckpointKey(12)] = "rO0ABXNy..."
	cm.Data[flinkha.CheckpointKey(3)] = "rO0ABXNy..."
	cm.Data[flinkha.CheckpointCounterKey] = "13"
	cm.Data[flinkha.CheckpointKeyPrefix+"x"] = "bad"
	cm.Data[flinkha.CheckpointKeyPrefix] = "empty"
	if got := flinkha.CheckpointIDs(cm); !assert.ObjectsAreEqual([]int64{3, 12}, got) {
		t.Errorf("flinkha.CheckpointIDs = %v, want [3 12]", got)
	}
	if flinkha.CheckpointIDs(nil) != nil {
		t.Error("flinkha.CheckpointIDs(nil) is not nil")
	}
	for k, want := range map[string]bool{flinkha.JobGraphKey("a"): true, flinkha.ExecutionPlanKey("a"): true, flinkha.LeaderKey(flinkha.ComponentDispatcher): false, flinkha.CheckpointKey(1): false} {
		if flinkha.IsJobGraphKey(k) != want {
			t.Errorf("flinkha.IsJobGraphKey(%q) = %v", k, !want)
		}
	}
}
