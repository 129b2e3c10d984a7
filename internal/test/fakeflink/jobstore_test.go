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

// The Dispatcher's job store keeps an ended job listed: an application cluster's for as long
// as its JobManager runs (ApplicationClusterEntryPoint's store has no expiry, whatever
// jobstore.expiration-time says), a session cluster's until jobstore.expiration-time after
// the job's end (3600 s by default).
func TestEndedJobsStayListedPerTheJobStore(t *testing.T) {
	for _, tc := range []struct {
		name       string
		session    bool
		expiration string
		// listedFor is how long the ended job stays listed; 0 for ever.
		listedFor time.Duration
	}{
		{name: "application cluster: listed past the default expiration", listedFor: 0},
		{name: "application cluster: listed past a configured expiration", expiration: "60", listedFor: 0},
		{name: "session cluster: forgotten after the default 3600 s", session: true, listedFor: time.Hour},
		{name: "session cluster: forgotten after a configured 600 s", session: true, expiration: "600", listedFor: 10 * time.Minute},
		{name: "session cluster: a duration with its unit", session: true, expiration: "5 min", listedFor: 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := newCluster(t, fakeflink.Options{})
			props := map[string]string{fakeflink.PropJobID: jobID}
			if tc.expiration != "" {
				props[fakeflink.PropJobStoreExpiration] = tc.expiration
			}
			jm := c.Start(fakeflink.Config{Session: tc.session, Properties: props})
			jm.SetJobState(jobID, flinkclient.JobStateRunning)
			jm.SetJobState(jobID, flinkclient.JobStateFinished)
			fc := restClient(t, jm.URL())

			listed := func() bool {
				jobs, err := fc.ListJobs(ctx)
				require.NoError(t, err)
				_, err = fc.GetJob(ctx, jobID)
				if len(jobs) == 0 {
					assert.ErrorIs(t, err, flinkclient.ErrNotFound, "GET /jobs/:id answers as the overview does")
					return false
				}
				require.NoError(t, err)
				assert.Equal(t, flinkclient.JobStateFinished, jobs[0].State)
				return true
			}
			require.True(t, listed(), "listed once it ended")
			if tc.listedFor == 0 {
				c.Advance(24 * time.Hour)
				assert.True(t, listed(), "still listed a day later")
				assert.Equal(t, flinkclient.JobStateFinished, jm.JobState(jobID))
				return
			}
			c.Advance(tc.listedFor - time.Second)
			assert.True(t, listed(), "listed until the expiration")
			c.Advance(time.Second)
			assert.False(t, listed(), "forgotten at the expiration")
			assert.Empty(t, jm.JobIDs())
		})
	}
}
