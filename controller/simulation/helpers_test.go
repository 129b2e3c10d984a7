package simulation_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkha"
)

// Steps and predicates of the directed tests: run the world until a condition holds, finish
// the pending savepoints, find the leader, check that no invariant broke.

// settle lets the model and the controller run n rounds, a few seconds apart.
func (w *world) settle(n int) {
	for range n {
		w.clock.Step(2 * time.Second)
		w.kube()
		w.flink()
		w.reconcileAtOnce()
	}
}

// reconcileAtOnce reconciles as the work queue does: again, with nothing else in between,
// while the controller asks to look again at once (a decision it recorded before acting on
// it). TestInvariants reconciles once per step instead, so that its events fall in between too.
func (w *world) reconcileAtOnce() {
	for range 4 {
		if !w.reconcile() {
			return
		}
	}
}

// until settles until cond holds, failing after n rounds.
func (w *world) until(t *testing.T, what string, n int, cond func(fc *v1beta1.FlinkCluster) bool) *v1beta1.FlinkCluster {
	t.Helper()
	for range n {
		if fc := w.cluster(); fc != nil && cond(fc) {
			return fc
		}
		w.settle(1)
	}
	t.Fatalf("%s: not reached\n%s", what, w.dump())
	return nil
}

// during settles until the clock has moved on by d, failing the test as soon as ok (checked
// before every round) does not hold.
func (w *world) during(t *testing.T, d time.Duration, what string, ok func(fc *v1beta1.FlinkCluster) bool) {
	t.Helper()
	for end := w.clock.Now().Add(d); w.clock.Now().Before(end); w.settle(1) {
		if fc := w.cluster(); fc == nil || !ok(fc) {
			t.Fatalf("%s: broken at %s\n%s", what, w.clock.Now().Format(time.TimeOnly), w.dump())
		}
	}
}

func jobIs(state string) func(fc *v1beta1.FlinkCluster) bool {
	return func(fc *v1beta1.FlinkCluster) bool {
		return fc.Status.Components.Job != nil && fc.Status.Components.Job.State == state
	}
}

func conditionIs(typ, reason string) func(fc *v1beta1.FlinkCluster) bool {
	return func(fc *v1beta1.FlinkCluster) bool {
		c := meta.FindStatusCondition(fc.Status.Conditions, typ)
		return c != nil && c.Status == "True" && (reason == "" || c.Reason == reason)
	}
}

// finishTriggers completes every pending savepoint operation of the live JobManagers now,
// successfully or not.
func (w *world) finishTriggers(fail bool) {
	for _, pr := range w.procs {
		switch {
		case !pr.alive():
		case fail:
			pr.jm.FailSavepoints("")
		default:
			pr.jm.CompleteSavepoints()
		}
	}
	w.flink()
}

// leader is the container whose process leads, nil for none.
func (w *world) leader() *proc {
	for _, pr := range w.sortedProcs() {
		if pr.alive() && pr.jm.Leads() {
			return pr
		}
	}
	return nil
}

// triggerOutside takes a savepoint of the leader's job through its REST API, as a user with
// the Flink UI or a script would: the controller never hears of its trigger.
func (w *world) triggerOutside(t *testing.T, jobID string) {
	t.Helper()
	l := w.leader()
	require.NotNil(t, l, "a leader")
	rec := httptest.NewRecorder()
	l.jm.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/jobs/"+jobID+"/savepoints", strings.NewReader(`{"cancel-job":false}`)))
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	l.jm.CompleteSavepoints()
}

// storeDuration is past Flink's rest.async.store-duration (default 5 min): the controller was
// down longer, so every savepoint result it had not read is gone.
const storeDuration = 6 * time.Minute

// haJobGraphs lists the job IDs whose graphs the HA cluster ConfigMap holds.
func (w *world) haJobGraphs() []string {
	if cm := w.haConfigMap(); cm != nil {
		return flinkha.JobGraphs(cm)
	}
	return nil
}

func noViolations(t *testing.T, w *world) {
	t.Helper()
	assert.Empty(t, w.violations, w.dump())
}

func slicesContains(notes []string, prefix string) bool {
	for _, n := range notes {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

func countPrefix(notes []string, prefix string) int {
	n := 0
	for _, s := range notes {
		if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}

func slicesHasPod(pods []corev1.Pod, name string) bool {
	return slices.ContainsFunc(pods, func(p corev1.Pod) bool { return p.Name == name })
}

func ptrTo[T any](v T) *T { return &v }
