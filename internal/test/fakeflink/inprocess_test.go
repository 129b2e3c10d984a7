package fakeflink_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

func TestInProcessClient(t *testing.T) {
	c := newCluster(t, fakeflink.Options{})
	jm := c.Start(fakeflink.Config{Properties: haProps()})
	viaService, err := flinkclient.New(c.URL(), c.HTTPClient())
	require.NoError(t, err)
	direct, err := flinkclient.New(jm.URL(), jm.HTTPClient())
	require.NoError(t, err)
	for _, fc := range []*flinkclient.HTTPClient{viaService, direct} {
		j, err := fc.GetJob(context.Background(), jobID)
		require.NoError(t, err)
		assert.Equal(t, flinkclient.JobStateRunning, j.State)
		_, err = fc.GetJob(context.Background(), "ffffffffffffffffffffffffffffffff")
		assert.ErrorIs(t, err, flinkclient.ErrNotFound)
	}

	jm.Hold()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = direct.ListJobs(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	jm.Release()

	jm.Kill()
	_, err = direct.ListJobs(context.Background())
	assert.ErrorContains(t, err, "connection refused")
	var herr *flinkclient.HTTPError
	_, err = viaService.ListJobs(context.Background())
	require.ErrorAs(t, err, &herr)
	assert.Equal(t, 502, herr.StatusCode, "no endpoint behind the Service")
}

// BenchmarkListJobs compares a REST call over a socket with the in-process client.
func BenchmarkListJobs(b *testing.B) {
	c := fakeflink.NewCluster(fakeflink.Options{ClusterID: clusterID})
	defer c.Close()
	c.Start(fakeflink.Config{Properties: haProps()})
	for name, hc := range map[string]func() *flinkclient.HTTPClient{
		"socket": func() *flinkclient.HTTPClient { fc, _ := flinkclient.New(c.URL(), nil); return fc },
		"in-process": func() *flinkclient.HTTPClient {
			fc, _ := flinkclient.New(c.URL(), c.HTTPClient())
			return fc
		},
	} {
		b.Run(name, func(b *testing.B) {
			fc := hc()
			for b.Loop() {
				if _, err := fc.ListJobs(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// blockingHA is a MemoryHA whose reads wait until release is closed: an API server that
// does not answer yet.
type blockingHA struct {
	fakeflink.MemoryHA
	release chan struct{}
}

func (b *blockingHA) Get(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	<-b.release
	return b.MemoryHA.Get(ctx, name)
}

func TestElectInBackgroundStartsWithoutWaitingOnHA(t *testing.T) {
	ha := &blockingHA{release: make(chan struct{})}
	c := newCluster(t, fakeflink.Options{HA: ha, ElectInBackground: true})
	started := make(chan *fakeflink.JobManager)
	go func() { started <- c.Start(fakeflink.Config{Properties: haProps()}) }()
	var jm *fakeflink.JobManager
	select {
	case jm = <-started:
	case <-time.After(10 * time.Second):
		close(ha.release)
		t.Fatal("Start waited on the HA store")
	}
	close(ha.release)
	// Nothing here asks the cluster anything (a REST call, Leads, Leader: each elects): the
	// HA ConfigMap appears because the started process ran for leadership on its own.
	assert.Eventually(t, func() bool {
		names, err := ha.List(context.Background(), clusterID)
		return err == nil && len(names) > 0
	}, 10*time.Second, 10*time.Millisecond, "the process's own election wrote the HA ConfigMap")
	assert.True(t, jm.Leads())
}

// countingHA is a MemoryHA that counts its reads: the API server requests of the election.
type countingHA struct {
	fakeflink.MemoryHA
	gets atomic.Int64
}

func (h *countingHA) Get(ctx context.Context, name string) (*corev1.ConfigMap, error) {
	h.gets.Add(1)
	return h.MemoryHA.Get(ctx, name)
}

func TestLeaderReadsTheLeaseOncePerRenewPeriod(t *testing.T) {
	ha := &countingHA{}
	c := newCluster(t, fakeflink.Options{HA: ha})
	jm := c.Start(fakeflink.Config{Properties: haProps()})
	require.True(t, jm.Leads())
	before := ha.gets.Load()
	for range 5 {
		assert.Same(t, jm, c.Leader())
	}
	assert.Equal(t, before, ha.gets.Load(), "a leader within its renew period asks the API server nothing")
	c.Advance(5 * time.Second) // a third of the default 15 s lease: Flink's retry period
	assert.Greater(t, ha.gets.Load(), before, "a renewal is due: the leader reads its lease")
	assert.Same(t, jm, c.Leader(), "and keeps it")
}
