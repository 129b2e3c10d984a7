package controller

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	lua "github.com/yuin/gopher-lua"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// healthCase is a cluster's status before health runs: the job state, the other conditions,
// the revisions, and what kstatus and the documented Argo CD check must read once health ran.
type healthCase struct {
	name      string
	job       string
	conds     []metav1.Condition
	nextRev   string // "" means the current revision
	cancel    bool
	failed    string // the error that ended the reconcile
	reason    string // the reason of the True health condition
	kstatus   kstatus.Status
	argo      string
	unhealthy bool // Ready False
}

func hcond(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return condition(typ, status, reason, "message of "+typ)
}

var (
	jmReady    = hcond(ConditionJobManagerReady, metav1.ConditionTrue, ConditionReasonPodReady)
	jmNotReady = hcond(ConditionJobManagerReady, metav1.ConditionFalse, ConditionReasonPodNotReady)
)

func healthCases() []healthCase {
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	return []healthCase{
		{name: "current: job runs with a ready JobManager", job: v1beta1.JobStateRunning, conds: []metav1.Condition{jmReady},
			reason: ConditionReasonJobRunning, kstatus: kstatus.CurrentStatus, argo: "Healthy"},
		{name: "current: job succeeded", job: v1beta1.JobStateSucceeded, conds: []metav1.Condition{hcond(ConditionJobManagerReady, F, ConditionReasonJobManagerMissing)},
			reason: ConditionReasonJobSucceeded, kstatus: kstatus.CurrentStatus, argo: "Healthy"},
		{name: "current: job cancelled on request", job: v1beta1.JobStateCancelled, cancel: true,
			reason: ConditionReasonJobCancelled, kstatus: kstatus.CurrentStatus, argo: "Healthy"},
		{name: "in progress: job deploying", job: v1beta1.JobStateDeploying, conds: []metav1.Condition{jmNotReady},
			reason: ConditionReasonProgressing, kstatus: kstatus.InProgressStatus, argo: "Progressing", unhealthy: true},
		{name: "in progress: job pending before the first deploy", job: v1beta1.JobStatePending,
			reason: ConditionReasonProgressing, kstatus: kstatus.InProgressStatus, argo: "Progressing", unhealthy: true},
		{name: "in progress: job runs but the JobManager is not ready", job: v1beta1.JobStateRunning, conds: []metav1.Condition{jmNotReady},
			reason: ConditionReasonProgressing, kstatus: kstatus.InProgressStatus, argo: "Progressing", unhealthy: true},
		{name: "in progress: a new revision waits for its rollout", job: v1beta1.JobStateRunning, conds: []metav1.Condition{jmReady}, nextRev: "wc-r2",
			reason: ConditionReasonProgressing, kstatus: kstatus.InProgressStatus, argo: "Progressing", unhealthy: true},
		{name: "in progress: update deploys the next revision", job: v1beta1.JobStateDeploying,
			conds:  []metav1.Condition{hcond(ConditionUpdating, T, ConditionReasonDeployingNextRevision)},
			reason: ConditionReasonProgressing, kstatus: kstatus.InProgressStatus, argo: "Progressing", unhealthy: true},
		{name: "in progress: job restarting from its savepoint", job: v1beta1.JobStateRestarting,
			reason: ConditionReasonProgressing, kstatus: kstatus.InProgressStatus, argo: "Progressing", unhealthy: true},
		{name: "in progress: job lost within its timeout", job: v1beta1.JobStateLost, conds: []metav1.Condition{hcond(ConditionLost, T, ConditionReasonJobNotReported)},
			reason: ConditionReasonProgressing, kstatus: kstatus.InProgressStatus, argo: "Progressing", unhealthy: true},
		{name: "failed: job failed", job: v1beta1.JobStateFailed,
			reason: ConditionReasonJobFailed, kstatus: kstatus.FailedStatus, argo: "Degraded", unhealthy: true},
		{name: "failed: job could not be deployed", job: v1beta1.JobStateDeployFailed,
			reason: ConditionReasonJobFailed, kstatus: kstatus.FailedStatus, argo: "Degraded", unhealthy: true},
		{name: "failed: job lost past its timeout", job: v1beta1.JobStateLost, conds: []metav1.Condition{hcond(ConditionLost, T, ConditionReasonLostTimeout)},
			reason: ConditionReasonJobLost, kstatus: kstatus.FailedStatus, argo: "Degraded", unhealthy: true},
		{name: "stalled: job ended unobserved, how unknown (the user reads the logs)", job: v1beta1.JobStateLost, conds: []metav1.Condition{hcond(ConditionLost, T, ConditionReasonEndedUnobserved)},
			reason: ConditionReasonJobLost, kstatus: kstatus.FailedStatus, argo: "Degraded", unhealthy: true},
		{name: "failed: JobManager in a crash loop", job: v1beta1.JobStateDeploying, conds: []metav1.Condition{hcond(ConditionDeploymentFailed, T, "CrashLoopBackOff")},
			reason: "CrashLoopBackOff", kstatus: kstatus.FailedStatus, argo: "Degraded", unhealthy: true},
		{name: "failed: an update stopped for want of a savepoint, job still running", job: v1beta1.JobStateRunning, nextRev: "wc-r2",
			conds:  []metav1.Condition{jmReady, hcond(ConditionSavepointRequired, T, ConditionReasonNoFinalSavepoint), hcond(ConditionUpdating, T, ConditionReasonNoFinalSavepoint)},
			reason: ConditionReasonNoFinalSavepoint, kstatus: kstatus.FailedStatus, argo: "Degraded", unhealthy: true},
		{name: "failed: job cancelled without a request", job: v1beta1.JobStateCancelled,
			reason: ConditionReasonJobCancelled, kstatus: kstatus.FailedStatus, argo: "Degraded", unhealthy: true},
		{name: "in progress: a reconcile of a running job failed", job: v1beta1.JobStateRunning, conds: []metav1.Condition{jmReady}, failed: "observe: etcdserver: request timed out",
			reason: ConditionReasonReconcileFailed, kstatus: kstatus.InProgressStatus, argo: "Progressing", unhealthy: true},
		{name: "failed: a failed job stays Stalled when a reconcile fails too", job: v1beta1.JobStateFailed, failed: "observe: etcdserver: request timed out",
			reason: ConditionReasonJobFailed, kstatus: kstatus.FailedStatus, argo: "Degraded", unhealthy: true},
	}
}

// statusOf runs health on the case's status, as setConditions does, for generation 2.
func statusOf(tc healthCase) v1beta1.FlinkClusterStatus {
	st := v1beta1.FlinkClusterStatus{
		State:              v1beta1.ClusterStateRunning,
		Components:         v1beta1.FlinkClusterComponentsStatus{Job: &v1beta1.JobStatus{State: tc.job, FailureReasons: []string{"boom"}}},
		Revision:           v1beta1.RevisionStatus{CurrentRevision: "wc-r1", NextRevision: "wc-r1"},
		ObservedGeneration: 2,
	}
	if tc.nextRev != "" {
		st.Revision.NextRevision = tc.nextRev
	}
	for _, c := range tc.conds {
		setCondition(&st.Conditions, c, t0)
	}
	ready, reconciling, stalled := health(healthInput{Status: &st, CancelRequested: tc.cancel, Failed: tc.failed})
	for _, c := range []metav1.Condition{ready, reconciling, stalled} {
		setCondition(&st.Conditions, c, t0)
	}
	observedGeneration(st.Conditions, 2)
	return st
}

func clusterWith(st v1beta1.FlinkClusterStatus, generation int64) *v1beta1.FlinkCluster {
	fc := builder.MakeAppCluster("wc").Obj()
	fc.Generation = generation
	fc.Status = st
	return fc
}

func TestHealthConditions(t *testing.T) {
	for _, tc := range healthCases() {
		t.Run(tc.name, func(t *testing.T) {
			st := statusOf(tc)
			trues := 0
			for _, typ := range []string{ConditionReady, ConditionReconciling, ConditionStalled} {
				c := findCondition(t, st.Conditions, typ)
				requireValid(t, c)
				if c.Status == metav1.ConditionTrue {
					trues++
					assert.Equal(t, tc.reason, c.Reason, "%s's reason", typ)
					assert.NotEmpty(t, c.Message)
				}
			}
			assert.Equal(t, 1, trues, "exactly one of Ready, Reconciling, Stalled is True")
			ready := findCondition(t, st.Conditions, ConditionReady)
			assert.Equal(t, !tc.unhealthy, ready.Status == metav1.ConditionTrue, "Ready")
			if tc.unhealthy {
				assert.Equal(t, ConditionReasonNotReady, ready.Reason)
			}
		})
	}
}

func findCondition(t *testing.T, conds []metav1.Condition, typ string) metav1.Condition {
	t.Helper()
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	require.Failf(t, "condition missing", "no %s condition in %+v", typ, conds)
	return metav1.Condition{}
}

func TestHealthMessagesSayWhy(t *testing.T) {
	st := v1beta1.FlinkClusterStatus{
		Components: v1beta1.FlinkClusterComponentsStatus{Job: &v1beta1.JobStatus{State: v1beta1.JobStateFailed, FailureReasons: []string{"first", "OutOfMemoryError"}}},
	}
	_, _, stalled := health(healthInput{Status: &st})
	assert.Equal(t, "job is Failed: OutOfMemoryError", stalled.Message, "the last failure reason")

	st = v1beta1.FlinkClusterStatus{Components: v1beta1.FlinkClusterComponentsStatus{Job: &v1beta1.JobStatus{State: v1beta1.JobStateDeploying}}}
	setCondition(&st.Conditions, condition(ConditionWaiting, metav1.ConditionTrue, ConditionReasonWaitingForFlinkAPI, "no answer from http://wc-jobmanager:8081"), t0)
	ready, reconciling, _ := health(healthInput{Status: &st})
	assert.Equal(t, "job is Deploying; waiting: no answer from http://wc-jobmanager:8081", reconciling.Message, "what the controller waits on")
	assert.Equal(t, reconciling.Message, ready.Message, "Ready False says why")
}

// toUnstructured is the object as kstatus and Argo CD see it: its JSON.
func toUnstructured(t *testing.T, fc *v1beta1.FlinkCluster) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fc)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(v1beta1.GroupVersion.String())
	u.SetKind("FlinkCluster")
	return u
}

func TestKstatusReadsHealth(t *testing.T) {
	for _, tc := range healthCases() {
		t.Run(tc.name, func(t *testing.T) {
			res, err := kstatus.Compute(toUnstructured(t, clusterWith(statusOf(tc), 2)))
			require.NoError(t, err)
			assert.Equal(t, tc.kstatus, res.Status, "%s", res.Message)
		})
	}
	t.Run("in progress: a spec edit not yet reconciled, though Ready", func(t *testing.T) {
		st := statusOf(healthCases()[0])
		res, err := kstatus.Compute(toUnstructured(t, clusterWith(st, 3)))
		require.NoError(t, err)
		assert.Equal(t, kstatus.InProgressStatus, res.Status, "%s", res.Message)
	})
	t.Run("terminating: a deleted cluster", func(t *testing.T) {
		fc := clusterWith(statusOf(healthCases()[0]), 2)
		fc.DeletionTimestamp = &metav1.Time{Time: t0}
		res, err := kstatus.Compute(toUnstructured(t, fc))
		require.NoError(t, err)
		assert.Equal(t, kstatus.TerminatingStatus, res.Status)
	})
}

// TestKstatusReadsAReconciledCluster: a new cluster after one reconcile is InProgress (its job
// deploys) with the generation observed; a spec edit after it is InProgress by generation.
func TestKstatusReadsAReconciledCluster(t *testing.T) {
	fc := builder.MakeAppCluster("wc").Obj()
	fc.Generation = 1
	r, cl := reconcilerWith(t, fc, func() error { return nil })
	_, err := r.Reconcile(t.Context(), reqFor(fc))
	require.NoError(t, err)
	got := &v1beta1.FlinkCluster{}
	require.NoError(t, cl.Get(t.Context(), keyOf(fc), got))
	assert.Equal(t, got.Generation, got.Status.ObservedGeneration)
	assert.Equal(t, "Job", got.Status.Components.JobManager.DeploymentType, "unset deploymentType shows as Job")
	res, err := kstatus.Compute(toUnstructured(t, got))
	require.NoError(t, err)
	assert.Equal(t, kstatus.InProgressStatus, res.Status, "%s", res.Message)
	rec := findCondition(t, got.Status.Conditions, ConditionReconciling)
	assert.Equal(t, metav1.ConditionTrue, rec.Status, "%+v", rec)
	assert.Equal(t, got.Generation, rec.ObservedGeneration)
}

// argoHealthScript is the Lua health check docs/troubleshooting.md tells Argo CD users to
// install: the test runs the documented text, so the docs cannot drift from the conditions.
func argoHealthScript(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/troubleshooting.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "\n```lua\n")
	require.True(t, ok, "docs/troubleshooting.md has no lua block")
	script, _, ok := strings.Cut(rest, "\n```\n")
	require.True(t, ok, "the lua block is not closed")
	return script
}

// argoHealth runs the health script as Argo CD does: obj is the object, the result a table
// with status and message.
func argoHealth(t *testing.T, script string, obj map[string]any) (status, message string) {
	t.Helper()
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	L.SetGlobal("obj", toLua(L, obj))
	fn, err := L.LoadString(script)
	require.NoError(t, err, "the documented script compiles")
	L.Push(fn)
	require.NoError(t, L.PCall(0, 1, nil))
	tbl, ok := L.Get(-1).(*lua.LTable)
	require.True(t, ok, "the script returns a table, got %s", L.Get(-1).Type())
	return lua.LVAsString(tbl.RawGetString("status")), lua.LVAsString(tbl.RawGetString("message"))
}

// toLua converts an object's JSON values to Lua values, as Argo CD does: maps to tables,
// arrays to sequences from 1, numbers to numbers.
func toLua(L *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range v {
			t.Append(toLua(L, e))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case nil:
		return lua.LNil
	}
	panic("unexpected JSON value")
}

func TestArgoCDHealthCheck(t *testing.T) {
	script := argoHealthScript(t)
	for _, tc := range healthCases() {
		t.Run(tc.name, func(t *testing.T) {
			status, message := argoHealth(t, script, toUnstructured(t, clusterWith(statusOf(tc), 2)).Object)
			assert.Equal(t, tc.argo, status, "%s", message)
			assert.NotEmpty(t, message)
		})
	}
	t.Run("progressing: a spec edit not yet reconciled, though Ready", func(t *testing.T) {
		status, message := argoHealth(t, script, toUnstructured(t, clusterWith(statusOf(healthCases()[0]), 3)).Object)
		assert.Equal(t, "Progressing", status)
		assert.Equal(t, "the controller has not reconciled generation 3 yet", message)
	})
	t.Run("progressing: no status yet", func(t *testing.T) {
		u := toUnstructured(t, builder.MakeAppCluster("wc").Obj())
		delete(u.Object, "status")
		status, _ := argoHealth(t, script, u.Object)
		assert.Equal(t, "Progressing", status)
	})
	t.Run("healthy: a cluster left to another operator", func(t *testing.T) {
		fc := builder.MakeAppCluster("wc").JobMode(v1beta1.JobModeDetached).Obj()
		setCondition(&fc.Status.Conditions, managedCondition(fc), t0)
		u := toUnstructured(t, fc)
		status, _ := argoHealth(t, script, u.Object)
		assert.Equal(t, "Healthy", status)
		res, err := kstatus.Compute(u)
		require.NoError(t, err)
		assert.Equal(t, kstatus.CurrentStatus, res.Status, "kstatus agrees")
	})
}
