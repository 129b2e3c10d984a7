package fakeflink_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
