package flinkcluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// clusterSpec builds the specs of the upgrade tests: Job mode, savepoint upgrades, Flink
// 2.2.1, unless the options say otherwise.
type clusterSpec struct{ s v1beta1.FlinkClusterSpec }

func newSpec() *clusterSpec {
	return &clusterSpec{s: v1beta1.FlinkClusterSpec{FlinkVersion: "2.2.1", Job: &v1beta1.JobSpec{}, FlinkProperties: map[string]string{}}}
}

func (c *clusterSpec) lastState() *clusterSpec {
	c.s.JobManager = &v1beta1.JobManagerSpec{DeploymentType: v1beta1.JobManagerDeploymentTypeDeployment}
	c.s.FlinkProperties["high-availability.type"] = "kubernetes"
	c.s.FlinkProperties["high-availability.storageDir"] = "s3://ha/dir"
	c.s.Job.UpgradeMode = ptr.To(v1beta1.UpgradeModeLastState)
	return c
}

func (c *clusterSpec) maxAge(v string) *clusterSpec {
	c.s.FlinkProperties[flinkcluster.PropertyLastStateMaxCheckpointAge] = v
	return c
}

func (c *clusterSpec) version(v string) *clusterSpec { c.s.FlinkVersion = v; return c }

func (c *clusterSpec) mode(m v1beta1.UpgradeMode) *clusterSpec { c.s.Job.UpgradeMode = &m; return c }

func (c *clusterSpec) noStopSavepoint() *clusterSpec {
	c.s.Job.TakeSavepointOnUpdate = ptr.To(false)
	return c
}

func TestPlanUpgrade(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	lastState := func() *clusterSpec { return newSpec().lastState() }
	bounded := func() *clusterSpec { return lastState().maxAge("10min") }
	running := func() *v1beta1.FlinkClusterStatus {
		return &v1beta1.FlinkClusterStatus{Components: v1beta1.FlinkClusterComponentsStatus{Job: &v1beta1.JobStatus{
			ID: "j1", State: v1beta1.JobStateRunning, StartTime: ago(time.Hour).Format(time.RFC3339), FlinkVersion: "2.2.1",
		}}}
	}
	offer := flinkcluster.LastStateOffer{Available: true, Checkpoint: 7}
	cases := []struct {
		name    string
		cluster *clusterSpec
		// status edits the stored status, a job running for an hour on Flink 2.2.1.
		status   func(*v1beta1.FlinkClusterStatus)
		obs      flinkcluster.UpgradeObservation
		wantHow  flinkcluster.UpgradeHow
		wantStop bool
		// wantWhy is a part of Why; wantNoLastState a part of NoLastState ("" wants none).
		wantWhy, wantNoLastState string
		// wantEmpty: the next deploy restores nothing.
		wantEmpty bool
	}{
		{
			name:    "savepoint: a running job is stopped with a savepoint",
			cluster: newSpec(),
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING"},
			wantHow: flinkcluster.UpgradeSavepoint, wantStop: true, wantWhy: "stopped with a savepoint",
			wantNoLastState: "needs a JobManager Deployment",
		},
		{
			name:    "savepoint: a job Flink reports RESTARTING is waited for, not stopped",
			cluster: newSpec(),
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RESTARTING"},
			wantHow: flinkcluster.UpgradeWait, wantWhy: "RESTARTING", wantNoLastState: "needs a JobManager Deployment",
		},
		{
			name:    "savepoint: a job Flink reports CANCELLING is waited for",
			cluster: newSpec(),
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "CANCELLING"},
			wantHow: flinkcluster.UpgradeWait, wantWhy: "CANCELLING", wantNoLastState: "needs a JobManager Deployment",
		},
		{
			name:    "savepoint: without takeSavepointOnUpdate a restarting job is not waited for",
			cluster: newSpec().noStopSavepoint(),
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RESTARTING"},
			wantHow: flinkcluster.UpgradeSavepoint, wantNoLastState: "needs a JobManager Deployment",
		},
		{
			name:    "savepoint: a job recorded running with no word from Flink is stopped (the trigger waits for the REST API)",
			cluster: newSpec(),
			wantHow: flinkcluster.UpgradeSavepoint, wantStop: true, wantNoLastState: "needs a JobManager Deployment",
		},
		{
			name:    "savepoint: a failed job is not stopped",
			cluster: newSpec(),
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "FAILED"},
			wantHow: flinkcluster.UpgradeSavepoint, wantNoLastState: "needs a JobManager Deployment",
		},
		{
			name:    "the user's restore answer comes first",
			cluster: lastState(),
			obs:     flinkcluster.UpgradeObservation{RestoreChoice: ptr.To("s3://b/sp-1"), FlinkAnswered: true, FlinkJobState: "RUNNING", LastState: offer},
			wantHow: flinkcluster.UpgradeSavepoint, wantWhy: "restore answer",
		},
		{
			name:    "the user's restore answer empty-state: the next deploy restores nothing",
			cluster: newSpec(),
			obs:     flinkcluster.UpgradeObservation{RestoreChoice: ptr.To(""), FlinkAnswered: true, FlinkJobState: "RUNNING"},
			wantHow: flinkcluster.UpgradeSavepoint, wantWhy: "restore answer", wantNoLastState: "needs a JobManager Deployment",
			wantEmpty: true,
		},
		{
			name:    "a stop in flight is finished",
			cluster: lastState(),
			obs:     flinkcluster.UpgradeObservation{StopInFlight: true, FlinkAnswered: true, FlinkJobState: "RUNNING", LastState: offer},
			wantHow: flinkcluster.UpgradeSavepoint, wantStop: true, wantWhy: "under way",
		},
		{
			name:    "stateless: empty state",
			cluster: newSpec().mode(v1beta1.UpgradeModeStateless),
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING"},
			wantHow: flinkcluster.UpgradeStateless, wantNoLastState: "stateless", wantEmpty: true,
		},
		{
			name:    "last-state: the HA store's newest checkpoint",
			cluster: lastState(),
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING", LastState: offer},
			wantHow: flinkcluster.UpgradeLastState, wantWhy: "checkpoint 7",
		},
		{
			name:    "last-state: without a checkpoint in the HA store, the savepoint way",
			cluster: lastState(),
			obs: flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING",
				LastState: flinkcluster.LastStateOffer{Why: "no completed checkpoint"}},
			wantHow: flinkcluster.UpgradeSavepoint, wantStop: true, wantNoLastState: "no completed checkpoint",
		},
		{
			name:    "last-state: a flinkVersion change stops the running job with a savepoint",
			cluster: lastState().version("2.3.0"),
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING", LastState: offer},
			wantHow: flinkcluster.UpgradeSavepoint, wantStop: true, wantWhy: "flinkVersion changes from 2.2.1 to 2.3.0",
			wantNoLastState: "flinkVersion changes",
		},
		{
			name:    "last-state: a flinkVersion change waits for a job that does not run",
			cluster: lastState().version("2.3.0"),
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RESTARTING", LastState: offer},
			wantHow: flinkcluster.UpgradeWait, wantWhy: "waiting for the job to run", wantNoLastState: "flinkVersion changes",
		},
		{
			name:    "last-state: a patch release is no version change",
			cluster: lastState().version("2.2.3"),
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING", LastState: offer},
			wantHow: flinkcluster.UpgradeLastState,
		},
		{
			name:    "last-state: a deploy recorded without a version is taken as the same version",
			cluster: lastState().version("2.3.0"),
			status:  func(st *v1beta1.FlinkClusterStatus) { st.Components.Job.FlinkVersion = "" },
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING", LastState: offer},
			wantHow: flinkcluster.UpgradeLastState,
		},
		{
			name:    "last-state, max age: a checkpoint triggered within the bound",
			cluster: bounded(),
			obs: flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING", LastState: offer,
				Checkpoints: &flinkcluster.CheckpointTimes{LatestCompleted: ago(5 * time.Minute)}},
			wantHow: flinkcluster.UpgradeLastState, wantWhy: "triggered 5m0s ago",
		},
		{
			name:    "last-state, max age: the age is measured from the trigger, not the completion",
			cluster: bounded(),
			// Triggered 11 minutes ago (it may have completed a minute ago): older than 10 min.
			obs: flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING", LastState: offer,
				Checkpoints: &flinkcluster.CheckpointTimes{LatestCompleted: ago(11 * time.Minute)}},
			wantHow: flinkcluster.UpgradeSavepoint, wantStop: true, wantWhy: "older than", wantNoLastState: "older than",
		},
		{
			name:    "last-state, max age: a checkpoint in progress within the bound is waited for",
			cluster: bounded(),
			obs: flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING", LastState: offer,
				Checkpoints: &flinkcluster.CheckpointTimes{LatestCompleted: ago(30 * time.Minute), Pending: ago(time.Minute)}},
			wantHow: flinkcluster.UpgradeWait, wantWhy: "in progress",
		},
		{
			name:    "last-state, max age: a job started within the bound is judged by its checkpoints all the same",
			cluster: bounded(),
			status: func(st *v1beta1.FlinkClusterStatus) {
				st.Components.Job.StartTime = ago(2 * time.Minute).Format(time.RFC3339)
			},
			obs: flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING", LastState: offer,
				Checkpoints: &flinkcluster.CheckpointTimes{LatestCompleted: ago(time.Hour)}},
			wantHow: flinkcluster.UpgradeSavepoint, wantStop: true, wantWhy: "older than", wantNoLastState: "older than",
		},
		{
			name:    "last-state, max age: only a restored checkpoint, whose age Flink does not report, takes the savepoint way",
			cluster: bounded(),
			obs: flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING", LastState: offer,
				Checkpoints: &flinkcluster.CheckpointTimes{RestoredOnly: true}},
			wantHow: flinkcluster.UpgradeSavepoint, wantStop: true, wantWhy: "since the one it restored", wantNoLastState: "since the one it restored",
		},
		{
			name:    "last-state, max age: statistics that cannot be read take the savepoint way",
			cluster: bounded(),
			obs: flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING", LastState: offer,
				Checkpoints: &flinkcluster.CheckpointTimes{Err: errors.New("connection refused")}},
			wantHow: flinkcluster.UpgradeSavepoint, wantStop: true, wantWhy: "connection refused", wantNoLastState: "cannot be read",
		},
		{
			name:    "last-state, max age: no completed checkpoint takes the savepoint way",
			cluster: bounded(),
			obs: flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING", LastState: offer,
				Checkpoints: &flinkcluster.CheckpointTimes{}},
			wantHow: flinkcluster.UpgradeSavepoint, wantStop: true, wantWhy: "no completed checkpoint", wantNoLastState: "no completed checkpoint",
		},
		{
			name:    "last-state, max age: no word from Flink while a JobManager may run the job takes the savepoint way",
			cluster: bounded(),
			obs:     flinkcluster.UpgradeObservation{MayRunOn: []string{"wc-jobmanager-0"}, LastState: offer},
			wantHow: flinkcluster.UpgradeSavepoint, wantStop: true, wantWhy: "does not answer", wantNoLastState: "cannot be read",
		},
		{
			name:    "last-state, max age: a job that does not run restores its newest checkpoint whatever its age",
			cluster: bounded(),
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "FAILED", LastState: offer},
			wantHow: flinkcluster.UpgradeLastState,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := running()
			if tc.status != nil {
				tc.status(st)
			}
			got := flinkcluster.PlanUpgrade(&tc.cluster.s, st, tc.obs, now)
			assert.Equal(t, tc.wantHow, got.How, got.Why)
			assert.Equal(t, tc.wantStop, got.Stop, got.Why)
			assert.Contains(t, got.Why, tc.wantWhy)
			assert.Equal(t, tc.wantEmpty, got.EmptyState, got.Why)
			if tc.wantNoLastState == "" {
				assert.Empty(t, got.NoLastState)
			} else {
				assert.Contains(t, got.NoLastState, tc.wantNoLastState)
			}
		})
	}
}

// TestPlanUpgradeAcceptsNothing checks the decision on a cluster with no job and no status,
// as the webhook may ask it: it never panics, and a cluster that never deployed takes the
// savepoint way (there is nothing to stop).
func TestPlanUpgradeAcceptsNothing(t *testing.T) {
	got := flinkcluster.PlanUpgrade(nil, nil, flinkcluster.UpgradeObservation{}, time.Time{})
	assert.Equal(t, flinkcluster.UpgradeSavepoint, got.How)
	assert.False(t, got.Stop)
	got = flinkcluster.PlanUpgrade(&v1beta1.FlinkClusterSpec{}, &v1beta1.FlinkClusterStatus{}, flinkcluster.UpgradeObservation{}, time.Time{})
	assert.Equal(t, flinkcluster.UpgradeSavepoint, got.How)
}

// TestUpgradeModePredicates pins what each upgrade mode asks of the rules that are not the
// decision itself: the policy's savepointsDir rule, the last-state fallback and the reading
// of checkpoint statistics.
func TestUpgradeModePredicates(t *testing.T) {
	running := flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING"}
	cases := []struct {
		name                      string
		spec                      *clusterSpec
		savepoints, keeps, checks bool
	}{
		{"savepoint: by savepoints, keeps state", newSpec(), true, true, false},
		{"last-state: keeps state", newSpec().lastState(), false, true, false},
		{"last-state with a max age: reads the checkpoint statistics", newSpec().lastState().maxAge("10min"), false, true, true},
		{"stateless: keeps nothing", newSpec().mode(v1beta1.UpgradeModeStateless), false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.savepoints, flinkcluster.SavepointUpgrades(tc.spec.s.Job))
			assert.Equal(t, tc.keeps, flinkcluster.KeepsState(tc.spec.s.Job))
			assert.Equal(t, tc.checks, flinkcluster.NeedsCheckpointTimes(&tc.spec.s, running))
			assert.False(t, flinkcluster.NeedsCheckpointTimes(&tc.spec.s, flinkcluster.UpgradeObservation{}), "not while the job does not run")
		})
	}
}

// TestPlanUpgradeSaysWhenTheModeIsRefused: the user is told (Refused) when the decision does
// not go the way the upgrade mode asks, and only then.
func TestPlanUpgradeSaysWhenTheModeIsRefused(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	st := &v1beta1.FlinkClusterStatus{Components: v1beta1.FlinkClusterComponentsStatus{Job: &v1beta1.JobStatus{
		ID: "j1", State: v1beta1.JobStateRunning, StartTime: now.Add(-time.Hour).Format(time.RFC3339), FlinkVersion: "2.2.1",
	}}}
	offer := flinkcluster.LastStateOffer{Available: true, Checkpoint: 3}
	running := flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING", LastState: offer}
	assert.False(t, flinkcluster.PlanUpgrade(&newSpec().lastState().s, st, running, now).Refused, "last-state as asked")
	assert.False(t, flinkcluster.PlanUpgrade(&newSpec().s, st, running, now).Refused, "savepoint as asked")
	assert.True(t, flinkcluster.PlanUpgrade(&newSpec().lastState().version("2.3.0").s, st, running, now).Refused, "a version change")
	tooOld := running
	tooOld.Checkpoints = &flinkcluster.CheckpointTimes{LatestCompleted: now.Add(-time.Hour)}
	assert.True(t, flinkcluster.PlanUpgrade(&newSpec().lastState().maxAge("10min").s, st, tooOld, now).Refused, "a checkpoint too old")
}

func (c *clusterSpec) fromSavepoint(p string) *clusterSpec { c.s.Job.FromSavepoint = &p; return c }

func (c *clusterSpec) maxStateAge(d time.Duration) *clusterSpec {
	c.s.Job.MaxStateAgeToRestoreSeconds = ptr.To(int32(d / time.Second))
	return c
}
