package flinkcluster_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// TestPlanUpgradeWaitBound: past the update's wait bound a wait takes the savepoint way without
// a stop (what the next deploy restores is then PlanRestore's to confirm or ask), and while the
// bound has not passed the plan says when it does.
func TestPlanUpgradeWaitBound(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const bound = 10 * time.Minute
	st := &v1beta1.FlinkClusterStatus{Components: v1beta1.FlinkClusterComponentsStatus{Job: &v1beta1.JobStatus{
		ID: "j1", State: v1beta1.JobStateUpdating, StartTime: now.Add(-time.Hour).Format(time.RFC3339), FlinkVersion: "2.2.1",
	}}}
	restarting := flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RESTARTING", WaitBound: bound}
	running := flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING", WaitBound: bound}
	pending := running
	pending.LastState = flinkcluster.LastStateOffer{Available: true, Checkpoint: 7}
	pending.Checkpoints = &flinkcluster.CheckpointTimes{LatestCompleted: now.Add(-time.Hour), Pending: now.Add(-time.Minute)}
	cases := []struct {
		name    string
		cluster *clusterSpec
		obs     flinkcluster.UpgradeObservation
		// since is how long ago the update began (0: no update runs).
		since                        time.Duration
		wantHow                      flinkcluster.UpgradeHow
		wantStop, wantPast, wantRefd bool
		// wantUntil: the plan says when the bound passes (since + bound).
		wantUntil bool
		wantWhy   string
	}{
		{name: "a wait within the bound waits, and says when the bound passes",
			cluster: newSpec(), obs: restarting, since: 5 * time.Minute,
			wantHow: flinkcluster.UpgradeWait, wantUntil: true, wantWhy: "RESTARTING"},
		{name: "a wait just at the bound still waits",
			cluster: newSpec(), obs: restarting, since: bound,
			wantHow: flinkcluster.UpgradeWait, wantUntil: true},
		{name: "a wait past the bound takes the savepoint way without a stop",
			cluster: newSpec(), obs: restarting, since: bound + time.Second,
			wantHow: flinkcluster.UpgradeSavepoint, wantPast: true, wantWhy: "waited past the wait bound 10m0s"},
		{name: "a wait before any update runs has no bound yet",
			cluster: newSpec(), obs: restarting,
			wantHow: flinkcluster.UpgradeWait},
		{name: "without a bound (the webhook) a wait waits however long the update ran",
			cluster: newSpec(), obs: flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RESTARTING"}, since: 24 * time.Hour,
			wantHow: flinkcluster.UpgradeWait},
		{name: "a stop past the bound stays a stop, marked past the bound (a failed stop is not asked again)",
			cluster: newSpec(), obs: running, since: time.Hour,
			wantHow: flinkcluster.UpgradeSavepoint, wantStop: true, wantPast: true},
		{name: "a stop within the bound says when the bound passes",
			cluster: newSpec(), obs: running, since: time.Minute,
			wantHow: flinkcluster.UpgradeSavepoint, wantStop: true, wantUntil: true},
		{name: "last-state: a flinkVersion change that waited past the bound takes the savepoint way, still refused",
			cluster: newSpec().lastState().version("2.3.0"), obs: restarting, since: time.Hour,
			wantHow: flinkcluster.UpgradeSavepoint, wantPast: true, wantRefd: true, wantWhy: "flinkVersion changes"},
		{name: "last-state, max age: a checkpoint in progress waited for past the bound: the running job is stopped with a savepoint, not the user asked",
			cluster: newSpec().lastState().maxAge("10min"), obs: pending, since: time.Hour,
			wantHow: flinkcluster.UpgradeSavepoint, wantStop: true, wantPast: true, wantWhy: "in progress"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := tc.obs
			if tc.since > 0 {
				obs.UpdatingSince = now.Add(-tc.since)
			}
			got := flinkcluster.PlanUpgrade(&tc.cluster.s, st, obs, now)
			assert.Equal(t, tc.wantHow, got.How, got.Why)
			assert.Equal(t, tc.wantStop, got.Stop, got.Why)
			assert.Equal(t, tc.wantPast, got.PastBound, got.Why)
			assert.Equal(t, tc.wantRefd, got.Refused, got.Why)
			assert.Contains(t, got.Why, tc.wantWhy)
			if tc.wantUntil {
				assert.Equal(t, obs.UpdatingSince.Add(bound), got.Until)
			} else {
				assert.True(t, got.Until.IsZero(), "until %s", got.Until)
			}
		})
	}
}

func TestPlanRestore(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	until := now.Add(5 * time.Minute)
	const location = "s3://sp/savepoint-1"
	// status is an update of job j1 from revision r1 to r2: the job ran, its last savepoint
	// taken ten minutes ago, not a final one.
	status := func() *v1beta1.FlinkClusterStatus {
		return &v1beta1.FlinkClusterStatus{
			Revision: v1beta1.RevisionStatus{CurrentRevision: "r1", NextRevision: "r2"},
			Components: v1beta1.FlinkClusterComponentsStatus{Job: &v1beta1.JobStatus{
				ID: "j1", State: v1beta1.JobStateUpdating, StartTime: now.Add(-time.Hour).Format(time.RFC3339),
				DeployTime:        now.Add(-2 * time.Hour).Format(time.RFC3339),
				SavepointLocation: location, SavepointTime: now.Add(-10 * time.Minute).Format(time.RFC3339),
			}},
		}
	}
	neverRan := func(st *v1beta1.FlinkClusterStatus) {
		st.Components.Job.StartTime = ""
		st.Components.Job.State = v1beta1.JobStatePending
	}
	failedStop := func(st *v1beta1.FlinkClusterStatus) {
		st.Savepoint = &v1beta1.SavepointStatus{JobID: "j1", TriggerID: "t1", TriggerReason: flinkcluster.SavepointReasonUpdate,
			State: "Failed", Message: "the job is not running"}
	}
	offer := flinkcluster.LastStateOffer{Available: true, Checkpoint: 7}
	silent := flinkcluster.UpgradeObservation{FlinkSilence: "no ready JobManager pod", PodMayLead: true}
	failed := flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "FAILED", LastState: offer}
	savepointWay := flinkcluster.Upgrade{How: flinkcluster.UpgradeSavepoint, Until: until}
	cases := []struct {
		name    string
		cluster *clusterSpec
		status  func(*v1beta1.FlinkClusterStatus)
		obs     flinkcluster.UpgradeObservation
		// u is the plan; savepointWay when unset.
		u        *flinkcluster.Upgrade
		wantHow  flinkcluster.RestoreHow
		wantFrom string
		// wantReason names the wait or the question; wantWhy is a part of Why.
		wantReason flinkcluster.RestoreReason
		wantWhy    string
		wantUntil  time.Time
	}{
		{name: "the user's restore answer comes first",
			cluster: newSpec(), obs: flinkcluster.UpgradeObservation{RestoreChoice: ptr.To("s3://sp/older")},
			wantHow: flinkcluster.RestoreSavepoint, wantFrom: "s3://sp/older"},
		{name: "the user's empty-state answer restores nothing",
			cluster: newSpec(), obs: flinkcluster.UpgradeObservation{RestoreChoice: ptr.To("")},
			wantHow: flinkcluster.RestoreSavepoint},
		{name: "an update whose fromSavepoint names a savepoint anew restores it",
			cluster: newSpec().fromSavepoint("s3://sp/named"), status: func(st *v1beta1.FlinkClusterStatus) { st.Components.Job.FinalSavepoint = true },
			wantHow: flinkcluster.RestoreSavepoint, wantFrom: "s3://sp/named"},
		{name: "a redeploy of the running revision does not restore fromSavepoint: the final savepoint",
			cluster: newSpec().fromSavepoint("s3://sp/named"), status: func(st *v1beta1.FlinkClusterStatus) {
				st.Revision.NextRevision = "r1"
				st.Components.Job.FinalSavepoint = true
			},
			wantHow: flinkcluster.RestoreSavepoint, wantFrom: location},
		{name: "the final savepoint",
			cluster: newSpec(), status: func(st *v1beta1.FlinkClusterStatus) { st.Components.Job.FinalSavepoint = true },
			wantHow: flinkcluster.RestoreSavepoint, wantFrom: location},
		{name: "whether the job ran is unknown while a JobManager may lead: wait for the Flink API until the bound",
			cluster: newSpec(), status: func(st *v1beta1.FlinkClusterStatus) { st.Components.Job.StartTime = "" }, obs: silent,
			wantHow: flinkcluster.RestoreWait, wantReason: flinkcluster.WaitForFlinkAPI, wantWhy: "no ready JobManager pod", wantUntil: until},
		{name: "past the bound, a job not known to have run is taken as run: ask",
			cluster: newSpec(), status: func(st *v1beta1.FlinkClusterStatus) { st.Components.Job.StartTime = "" }, obs: silent,
			u:       &flinkcluster.Upgrade{How: flinkcluster.UpgradeSavepoint, PastBound: true},
			wantHow: flinkcluster.RestoreAsk, wantReason: flinkcluster.AskNoFinalSavepoint, wantWhy: "job j1 has no confirmed final savepoint"},
		{name: "a job whose pods are gone counts as run: ask, not rewind it to what it restored",
			cluster: newSpec(), status: func(st *v1beta1.FlinkClusterStatus) {
				st.Components.Job.StartTime = ""
				st.Components.Job.FromSavepoint = "s3://sp/0"
			},
			wantHow: flinkcluster.RestoreAsk, wantReason: flinkcluster.AskNoFinalSavepoint},
		{name: "a job whose graph Flink's HA store holds ran",
			cluster: newSpec(), status: func(st *v1beta1.FlinkClusterStatus) { st.Components.Job.StartTime = "" },
			obs:     flinkcluster.UpgradeObservation{JobGraphStored: true, PodMayLead: true},
			wantHow: flinkcluster.RestoreAsk, wantReason: flinkcluster.AskNoFinalSavepoint},
		{name: "a deploy that never ran restores what it restored",
			cluster: newSpec(), status: func(st *v1beta1.FlinkClusterStatus) {
				neverRan(st)
				st.Components.Job.FromSavepoint = "s3://sp/0"
			},
			wantHow: flinkcluster.RestoreSavepoint, wantFrom: "s3://sp/0"},
		{name: "a deploy recorded but not created yet, updated meanwhile, restores what it recorded",
			cluster: newSpec(), status: func(st *v1beta1.FlinkClusterStatus) {
				st.Components.Job.StartTime, st.Components.Job.DeployTime = "", ""
				st.Components.Job.FromSavepoint = "s3://sp/0"
			},
			wantHow: flinkcluster.RestoreSavepoint, wantFrom: "s3://sp/0"},
		{name: "a deploy whose creation was not recorded, its workload there, may have run: ask",
			cluster: newSpec(), status: func(st *v1beta1.FlinkClusterStatus) {
				st.Components.Job.StartTime, st.Components.Job.DeployTime = "", ""
				st.Components.Job.FromSavepoint = "s3://sp/0"
			},
			obs:     flinkcluster.UpgradeObservation{WorkloadOfJob: true},
			wantHow: flinkcluster.RestoreAsk, wantReason: flinkcluster.AskNoFinalSavepoint},
		{name: "a job Flink reports INITIALIZING never ran",
			cluster: newSpec(), status: func(st *v1beta1.FlinkClusterStatus) {
				st.Components.Job.StartTime = ""
				st.Components.Job.FromSavepoint = "s3://sp/0"
			},
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "INITIALIZING"},
			wantHow: flinkcluster.RestoreSavepoint, wantFrom: "s3://sp/0"},
		{name: "a first deploy that never ran restores spec.job.fromSavepoint",
			cluster: newSpec().fromSavepoint("s3://sp/first"), status: func(st *v1beta1.FlinkClusterStatus) {
				neverRan(st)
				st.Components.Job.ID = ""
				st.Revision.NextRevision = "r1"
			},
			wantHow: flinkcluster.RestoreSavepoint, wantFrom: "s3://sp/first"},
		{name: "a last-state deploy that never ran restores Flink's HA store again",
			cluster: newSpec().lastState(), status: func(st *v1beta1.FlinkClusterStatus) {
				neverRan(st)
				st.Components.Job.FromCheckpoint = true
			},
			obs:     flinkcluster.UpgradeObservation{LastState: offer},
			wantHow: flinkcluster.RestoreLastState, wantWhy: "fallback"},
		{name: "a last-state deploy that never ran, its HA store gone: ask",
			cluster: newSpec().lastState(), status: func(st *v1beta1.FlinkClusterStatus) {
				neverRan(st)
				st.Components.Job.FromCheckpoint = true
			},
			obs:     flinkcluster.UpgradeObservation{LastState: flinkcluster.LastStateOffer{Why: "the store holds no checkpoint"}},
			wantHow: flinkcluster.RestoreAsk, wantReason: flinkcluster.AskHAMetadataMissing, wantWhy: "(the store holds no checkpoint)"},
		{name: "a last-state deploy that never ran, last-state refused by the plan: ask, saying why",
			cluster: newSpec().lastState(), status: func(st *v1beta1.FlinkClusterStatus) {
				neverRan(st)
				st.Components.Job.FromCheckpoint = true
			},
			obs:     flinkcluster.UpgradeObservation{LastState: offer},
			u:       &flinkcluster.Upgrade{How: flinkcluster.UpgradeSavepoint, NoLastState: "flinkVersion changes from 2.2.1 to 2.3.0"},
			wantHow: flinkcluster.RestoreAsk, wantReason: flinkcluster.AskHAMetadataMissing, wantWhy: "(flinkVersion changes"},
		{name: "without an attempted stop, a savepoint fresh under maxStateAgeToRestoreSeconds",
			cluster: newSpec().maxStateAge(time.Hour), obs: failed,
			wantHow: flinkcluster.RestoreSavepoint, wantFrom: location},
		{name: "a savepoint older than maxStateAgeToRestoreSeconds is not restored: ask",
			cluster: newSpec().maxStateAge(time.Minute), obs: flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "FAILED"},
			wantHow: flinkcluster.RestoreAsk, wantReason: flinkcluster.AskNoFinalSavepoint, wantWhy: "may be older than its state"},
		{name: "after an attempted stop a fresh savepoint is not enough: ask, with the stop's failure",
			cluster: newSpec().maxStateAge(time.Hour), status: failedStop,
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "FAILED"},
			wantHow: flinkcluster.RestoreAsk, wantReason: flinkcluster.AskNoFinalSavepoint, wantWhy: "(the job is not running)"},
		{name: "fallback: a job that does not run restores Flink's HA store",
			cluster: newSpec().lastState(), status: failedStop, obs: failed,
			wantHow: flinkcluster.RestoreLastState, wantWhy: "fallback"},
		{name: "fallback: also under upgradeMode savepoint",
			cluster: newSpec().lastState().mode(v1beta1.UpgradeModeSavepoint), status: failedStop, obs: failed,
			wantHow: flinkcluster.RestoreLastState},
		{name: "fallback: a savepoint newer than every stored checkpoint is restored instead",
			cluster: newSpec().lastState(), status: failedStop,
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "FAILED", LastState: flinkcluster.LastStateOffer{NewerSavepoint: true, Why: "newer"}},
			wantHow: flinkcluster.RestoreSavepoint, wantFrom: location},
		{name: "fallback: waits, with no bound of its own, while a JobManager may still run the job and none answers",
			cluster: newSpec().lastState(), status: failedStop,
			obs:     flinkcluster.UpgradeObservation{MayRunOn: []string{"wc-jm-1", "wc-jm-2"}, PodMayLead: true, LastState: offer},
			wantHow: flinkcluster.RestoreWait, wantReason: flinkcluster.WaitForLeader, wantWhy: "JobManager pod(s) [wc-jm-1 wc-jm-2]"},
		{name: "fallback: a leader that answers without the job runs nothing: Flink's HA store",
			cluster: newSpec().lastState(), status: failedStop,
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, MayRunOn: []string{"wc-jm-1"}, LastState: offer},
			wantHow: flinkcluster.RestoreLastState},
		{name: "no fallback while Flink reports the job RUNNING: ask",
			cluster: newSpec().lastState(), status: failedStop,
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING", LastState: offer},
			wantHow: flinkcluster.RestoreAsk, wantReason: flinkcluster.AskNoFinalSavepoint},
		{name: "no fallback the plan refuses: ask, saying why",
			cluster: newSpec().lastState(), status: failedStop, obs: failed,
			u:       &flinkcluster.Upgrade{How: flinkcluster.UpgradeSavepoint, NoLastState: "not a last-state update: too old"},
			wantHow: flinkcluster.RestoreAsk, wantReason: flinkcluster.AskNoFinalSavepoint, wantWhy: "no last-state redeploy: not a last-state update: too old"},
		{name: "no fallback the HA store cannot offer: ask, with the store's reason",
			cluster: newSpec().lastState(), status: failedStop,
			obs:     flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "FAILED", LastState: flinkcluster.LastStateOffer{Why: "the store holds no checkpoint"}},
			wantHow: flinkcluster.RestoreAsk, wantReason: flinkcluster.AskNoFinalSavepoint, wantWhy: "no last-state redeploy: the store holds no checkpoint"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := status()
			if tc.status != nil {
				tc.status(st)
			}
			u := savepointWay
			if tc.u != nil {
				u = *tc.u
			}
			got := flinkcluster.PlanRestore(&tc.cluster.s, st, tc.obs, u, now)
			assert.Equal(t, tc.wantHow, got.How, got.Why)
			assert.Equal(t, tc.wantFrom, got.From, got.Why)
			assert.Equal(t, tc.wantReason, got.Reason, got.Why)
			assert.Contains(t, got.Why, tc.wantWhy)
			assert.Equal(t, tc.wantUntil, got.Until)
		})
	}
}

// TestPlanRestoreAcceptsNothing: no spec, no status, no job: no panic, and nothing that says
// the job never ran, so nothing is deployed that could rewind it.
func TestPlanRestoreAcceptsNothing(t *testing.T) {
	got := flinkcluster.PlanRestore(nil, nil, flinkcluster.UpgradeObservation{}, flinkcluster.Upgrade{}, time.Time{})
	assert.Equal(t, flinkcluster.RestoreAsk, got.How)
	got = flinkcluster.PlanRestore(&v1beta1.FlinkClusterSpec{}, &v1beta1.FlinkClusterStatus{Components: v1beta1.FlinkClusterComponentsStatus{
		Job: &v1beta1.JobStatus{CompletionTime: &metav1.Time{}}}}, flinkcluster.UpgradeObservation{}, flinkcluster.Upgrade{}, time.Time{})
	assert.NotEmpty(t, got.How)
}

// An update to a new revision whose spec.job.fromSavepoint names a savepoint anew restores it:
// the plan stops no job with a savepoint (its state is replaced), but a stop already under way
// finishes, and a fromSavepoint recorded for the running job is no new one.
func TestPlanUpgradeStopsNothingForANewlyNamedFromSavepoint(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	running := flinkcluster.UpgradeObservation{FlinkAnswered: true, FlinkJobState: "RUNNING"}
	inFlight := running
	inFlight.StopInFlight = true
	status := func(next, specFrom string) *v1beta1.FlinkClusterStatus {
		return &v1beta1.FlinkClusterStatus{
			Revision: v1beta1.RevisionStatus{CurrentRevision: "app-r1", NextRevision: next},
			Components: v1beta1.FlinkClusterComponentsStatus{Job: &v1beta1.JobStatus{
				ID: "j1", State: v1beta1.JobStateRunning, FlinkVersion: "2.2.1", SpecFromSavepoint: specFrom,
			}},
		}
	}
	cases := []struct {
		name     string
		cluster  *clusterSpec
		st       *v1beta1.FlinkClusterStatus
		obs      flinkcluster.UpgradeObservation
		wantStop bool
		wantFrom string
	}{
		{name: "savepoint mode: the named savepoint, no stop",
			cluster: newSpec().fromSavepoint("s3://sp/named"), st: status("app-r2", ""), obs: running, wantFrom: "s3://sp/named"},
		{name: "last-state falling back to a savepoint: the named savepoint, no stop",
			cluster: newSpec().lastState().version("2.3.0").fromSavepoint("s3://sp/named"), st: status("app-r2", ""), obs: running, wantFrom: "s3://sp/named"},
		{name: "the running job's own fromSavepoint is no new one: stopped with a savepoint",
			cluster: newSpec().fromSavepoint("s3://sp/old"), st: status("app-r2", "s3://sp/old"), obs: running, wantStop: true},
		{name: "a stop under way finishes",
			cluster: newSpec().fromSavepoint("s3://sp/named"), st: status("app-r2", ""), obs: inFlight, wantStop: true},
		{name: "no new revision: no update restores it",
			cluster: newSpec().fromSavepoint("s3://sp/named"), st: status("app-r1", ""), obs: running, wantStop: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := flinkcluster.PlanUpgrade(&tc.cluster.s, tc.st, tc.obs, now)
			assert.Equal(t, tc.wantStop, got.Stop, got.Why)
			assert.Equal(t, tc.wantFrom, got.SpecRestore)
			if tc.wantFrom != "" {
				assert.Contains(t, got.Why, "spec.job.fromSavepoint names "+tc.wantFrom)
			}
		})
	}
}
