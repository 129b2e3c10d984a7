package flinksim_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/resources"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
	"github.com/flink-admission/flink-admission/internal/test/flinksim"
)

// countingTransport counts the requests to the API server by verb ("GET", "PUT", ...).
type countingTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	n    map[string]int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n[r.Method]++
	c.mu.Unlock()
	return c.base.RoundTrip(r)
}

// take returns the counts since the last take and starts again.
func (c *countingTransport) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

// A driven fake cluster (what make run and make bench attach) loads the API server as Flink
// does, whatever polls its REST API: the Simulator renews its leader's lease once a retry
// period and writes each checkpoint to the HA store when it completes, on the cluster's clock,
// and no REST answer reads an HA ConfigMap. Over a lease period (15 s) with checkpoints every
// 3 s: 3 renewals (a read and a write each) and 5 checkpoints (a read and a write each), with
// or without 600 REST calls; and the HA store holds each checkpoint before anything asks.
func TestDrivenClusterLoadsTheAPIServerAsFlinkDoes(t *testing.T) {
	ctx := context.Background()
	ns := fmt.Sprintf("sim%d", nsSeq.Add(1))
	require.NoError(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	fc := builder.MakeAppCluster("wc").Namespace(ns).UID("").Deployment().
		FlinkProperty(fakeflink.PropCheckpointInterval, "3 s").Obj()
	require.NoError(t, k8s.Create(ctx, fc))

	counting := &countingTransport{n: map[string]int{}}
	cfg := rest.CopyConfig(cp.Config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { counting.base = rt; return counting }
	haClient, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	clock := clocktesting.NewFakeClock(time.Now())
	flink := fakeflink.NewCluster(fakeflink.Options{
		ClusterID: resources.HAClusterID(fc), Version: fakeflink.Version2_2, Clock: clock, InProcess: true,
		HA: &fakeflink.KubeHA{Client: haClient, Namespace: ns}, Driven: true,
	})
	t.Cleanup(flink.Close)
	jobID := flinkclient.NewID()
	d := resources.Deploy{Revision: "wc-r1", JobID: jobID}
	cm, err := resources.ConfigMap(fc, d)
	require.NoError(t, err)
	require.NoError(t, k8s.Create(ctx, cm))
	sim, err := flinksim.New(flinksim.Options{
		Config: cp.Config, Scheme: scheme, Namespace: ns, Log: testr.NewWithOptions(t, testr.Options{Verbosity: 0}),
		Clusters: func(context.Context, *v1beta1.FlinkCluster) *fakeflink.Cluster { return flink },
	})
	require.NoError(t, err)
	simCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sim.Start(simCtx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.NoError(t, k8s.Create(ctx, resources.JobManagerDeployment(fc, d, 1)))

	var jm *fakeflink.JobManager
	require.Eventually(t, func() bool {
		jm = flink.Leader()
		return jm != nil && jm.JobState(jobID) == flinkclient.JobStateRunning
	}, time.Minute, 20*time.Millisecond, "the simulated JobManager leads and runs the job")
	rest, err := flinkclient.New(flink.URL(), flink.HTTPClient())
	require.NoError(t, err)

	// leasePeriod moves the cluster's clock through one lease duration, a quarter second at a
	// time, letting the Simulator's timers run at each step, with calls REST calls per step.
	leasePeriod := func(calls int) map[string]int {
		counting.take()
		for range 60 {
			clock.Step(250 * time.Millisecond)
			require.NoError(t, sim.Settle(ctx))
			require.Eventually(t, func() bool { return flink.NextTick().After(clock.Now()) }, 10*time.Second, 5*time.Millisecond, "the timers ran")
			for range calls {
				_, err := rest.ListJobs(ctx)
				require.NoError(t, err)
			}
		}
		return counting.take()
	}
	quiet := leasePeriod(0)
	busy := leasePeriod(10)
	for _, n := range []map[string]int{quiet, busy} {
		// 3 renewals + 5 checkpoints, each one read and one write of an HA ConfigMap (one
		// fewer when a timer falls on the period's edge), nothing else.
		assert.InDelta(t, 8, n[http.MethodGet], 1, "reads per lease period: %v", n)
		assert.InDelta(t, 8, n[http.MethodPut], 1, "writes per lease period: %v", n)
		assert.Len(t, n, 2, "no other request: %v", n)
	}
	assert.InDelta(t, quiet[http.MethodGet], busy[http.MethodGet], 1, "600 REST calls read nothing more")

	stored := &corev1.ConfigMap{}
	require.NoError(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: flinkha.JobConfigMapName(resources.HAClusterID(fc), jobID)}, stored))
	ids := flinkha.CheckpointIDs(stored)
	require.NotEmpty(t, ids)
	cps, err := rest.GetCheckpoints(ctx, jobID)
	require.NoError(t, err)
	require.NotNil(t, cps.Latest.Completed)
	assert.Equal(t, ids[len(ids)-1], cps.Latest.Completed.ID, "the HA store holds the newest checkpoint before any REST call")
	assert.True(t, strings.HasPrefix(cps.Latest.Completed.ExternalPath, "file:/"), cps.Latest.Completed.ExternalPath)
}
