package realplane_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/shard"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
	"github.com/flink-admission/flink-admission/scope"
)

// sharedFleetLabel marks the clusters of TestSharedFleetSurvivesAKilledReplica: its
// replicas run them, the package's controller leaves them alone.
const sharedFleetLabel = "flink-admission.dev/shared-fleet"

// fleetTiming is short, so that the row's joins and takeover take seconds; the margin
// still covers a loaded machine's slow renewals (a slower one only makes its replica wait
// and join again).
var fleetTiming = shard.Timing{LeaseDuration: 12 * time.Second, RenewPeriod: time.Second, Margin: 3 * time.Second}

// TestSharedFleetSurvivesAKilledReplica runs three replicas that share the fleet, each a
// manager of its own with its own Kubernetes and Flink clients, and kills one (its context
// cancelled, its Lease left behind) while its clusters update. Each replica's clients record
// every write to a cluster's namespace and every Flink call that is not a read, with when it
// started and ended; no two replicas' requests on one cluster may overlap, every update
// completes, and each cluster ran exactly its two jobs (the old and the updated one), each
// submitted once, the updated one restored from the update's savepoint.
func TestSharedFleetSurvivesAKilledReplica(t *testing.T) {
	t.Parallel()
	leases := newRow(t, jobMode, "leases").ns
	t.Cleanup(func() {
		assert.NoError(t, k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leases}}))
	})
	rec := &fleetActions{}
	replicas := make([]*fleetReplica, 3)
	for i := range replicas {
		replicas[i] = startFleetReplica(t, i, leases, rec)
	}
	members := []string{replicas[0].m.Identity(), replicas[1].m.Identity(), replicas[2].m.Identity()}
	slices.Sort(members)
	eventually(t, "three replicas acting, each seeing all three", func() bool {
		for _, r := range replicas {
			if v := r.m.View(); !v.Acting || !slices.Equal(v.Members, members) {
				return false
			}
		}
		return true
	})

	var rows []*harness
	for i := range 6 {
		mode := jobMode
		if i%2 == 1 {
			mode = depMode
		}
		rows = append(rows, newHarness(t, mode, func(w *builder.FlinkClusterWrapper) { w.Label(sharedFleetLabel, "true") }))
	}
	owner := func(h *harness) string { return shard.Owner(h.ns+"/"+h.name, members) }
	victim := owner(rows[0])
	type before struct {
		revision, id string
		jm           *fakeflink.JobManager
	}
	was := make([]before, len(rows))
	for i, h := range rows {
		_, pod := h.runJob()
		was[i] = before{revision: h.get().Status.Revision.CurrentRevision, id: h.jobID(), jm: h.process(pod)}
	}
	// The victim's first cluster: its update stops in its stop-with-savepoint until the
	// victim is gone, so that the replica that takes it over finishes what the victim began.
	held := rows[0]
	was[0].jm.SetSavepointMode(fakeflink.SavepointHold)
	for _, h := range rows {
		h.updateArgs("--words", "updated")
	}
	held.eventually("the victim's stop-with-savepoint", func() bool { return held.countRequests("POST /jobs/"+was[0].id+"/stop") >= 1 })
	for _, r := range replicas {
		if r.m.Identity() == victim {
			r.kill()
		}
	}
	was[0].jm.SetSavepointMode(fakeflink.SavepointComplete)
	was[0].jm.CompleteSavepoints()

	for i, h := range rows {
		job := h.runsNextRevision(was[i].revision)
		require.NotEqual(t, was[i].id, job.ID, "%s: the update runs a new job", h.ns)
		var ids []string
		for _, e := range h.flink.Executions() {
			if !e.Recovered {
				ids = append(ids, e.JobID)
			}
		}
		assert.Equal(t, []string{was[i].id, job.ID}, ids, "%s: each job submitted once, no other", h.ns)
		assert.NotEmpty(t, job.FromSavepoint, "%s: the updated job restores the update's savepoint", h.ns)
		h.eventually("the updated job running in Flink", func() bool {
			l := h.flink.Leader()
			return l != nil && l.JobState(job.ID) == flinkclient.JobStateRunning
		})
	}

	took := map[string]bool{}
	for _, h := range rows {
		tenures := rec.tenures(h.ns)
		for i := 1; i < len(tenures); i++ {
			prev, next := tenures[i-1], tenures[i]
			assert.False(t, next.first.Before(prev.last), "%s: %s acted from %s while %s's request of %s was in flight", h.ns,
				next.replica, next.first.Format(time.StampMilli), prev.replica, prev.last.Format(time.StampMilli))
			if prev.replica == victim {
				took[h.ns] = true
			}
		}
		assert.True(t, slices.ContainsFunc(tenures, func(x tenure) bool { return x.replica == owner(h) }), "%s: its owner acted on it", h.ns)
		if owner(h) == victim {
			assert.True(t, took[h.ns], "%s: another replica took the victim's cluster over", h.ns)
		}
	}
}

// fleetReplica is one replica of the shared fleet: its manager and its membership.
type fleetReplica struct {
	m    *shard.Membership
	kill func()
}

// startFleetReplica starts replica i: a manager running the controller on the clusters
// labelled sharedFleetLabel, a member of the group whose Leases are in namespace leases,
// whose Kubernetes and Flink requests rec records.
func startFleetReplica(t *testing.T, i int, leases string, rec *fleetActions) *fleetReplica {
	t.Helper()
	name := fmt.Sprintf("replica-%d", i)
	cfg := rest.CopyConfig(cp.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return rec.kube(name, rt) })
	fleet := scope.Scope{Selector: labels.SelectorFromSet(labels.Set{sharedFleetLabel: "true"})}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Cache: controller.ScopedCacheOptions(fleet),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	m, err := shard.New(shard.Options{
		Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Namespace: leases, Group: "realplane",
		Identity: name, Timing: fleetTiming, Log: ctrl.Log.WithName(name),
	})
	require.NoError(t, err)
	require.NoError(t, controller.Setup(mgr, controller.Options{
		Clock: fakeClock, HARecoveryGrace: haGrace, LostTimeout: lostTimeout, RequeueInterval: pollInterval, SteadyPollInterval: 3 * pollInterval, ResyncInterval: resyncInterval,
		Scope: fleet, Shard: m,
		FlinkClientFor: func(fc *v1beta1.FlinkCluster) (flinkclient.Client, error) {
			return flinkClientFor(fc, &http.Client{Timeout: flinkclient.DefaultTimeout, Transport: rec.flink(name, fc.Namespace, http.DefaultTransport)})
		},
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		assert.NoError(t, <-done, "%s stopped", name)
	})
	t.Cleanup(stop)
	return &fleetReplica{m: m, kill: stop}
}

// eventually waits until cond holds; the test fails after waitTimeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fleetActions records the replicas' actions, by namespace (each cluster has its own):
// every Kubernetes write there (but Events, which are no action on the cluster) and every
// Flink call that is not a GET.
type fleetActions struct {
	mu   sync.Mutex
	list []fleetAction
}

type fleetAction struct {
	replica, ns, what string
	start, end        time.Time
}

func (a *fleetActions) record(replica, ns string, req *http.Request, next http.RoundTripper) (*http.Response, error) {
	start := time.Now()
	resp, err := next.RoundTrip(req)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.list = append(a.list, fleetAction{replica: replica, ns: ns, what: req.Method + " " + req.URL.Path, start: start, end: time.Now()})
	return resp, err
}

// kube records replica's writes to the API server.
func (a *fleetActions) kube(replica string, next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		_, rest, ok := strings.Cut(req.URL.Path, "/namespaces/")
		ns, resource, _ := strings.Cut(rest, "/")
		if !ok || req.Method == http.MethodGet || strings.HasPrefix(resource, "events") {
			return next.RoundTrip(req)
		}
		return a.record(replica, ns, req, next)
	})
}

// flink records replica's Flink calls to the cluster in namespace ns.
func (a *fleetActions) flink(replica, ns string, next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet {
			return next.RoundTrip(req)
		}
		return a.record(replica, ns, req, next)
	})
}

// tenure is a replica's uninterrupted run of actions on one cluster: from the start of its
// first request to the end of its last.
type tenure struct {
	replica     string
	first, last time.Time
}

// tenures are the cluster's tenures, in the order of their first requests.
func (a *fleetActions) tenures(ns string) []tenure {
	a.mu.Lock()
	acts := slices.DeleteFunc(slices.Clone(a.list), func(x fleetAction) bool { return x.ns != ns })
	a.mu.Unlock()
	slices.SortFunc(acts, func(x, y fleetAction) int { return x.start.Compare(y.start) })
	var ts []tenure
	for _, x := range acts {
		if n := len(ts); n > 0 && ts[n-1].replica == x.replica {
			if x.end.After(ts[n-1].last) {
				ts[n-1].last = x.end
			}
			continue
		}
		ts = append(ts, tenure{replica: x.replica, first: x.start, last: x.end})
	}
	return ts
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
