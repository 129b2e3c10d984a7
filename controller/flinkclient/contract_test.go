package flinkclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
)

// The files under testdata/<version> are answers in the exact shapes of Flink's REST message
// classes for that version (see testdata/README.md). The fake's answers are checked against
// the same files in package fakeflink, so client, fake and Flink cannot drift apart.

const (
	contractJobID = "0a1b2c3d4e5f60718293a4b5c6d7e8f9"
	contractAppID = "5d9c1e2f3a4b5c6d7e8f901a2b3c4d5e"
	contractTID   = "0123456789abcdef0123456789abcdef"
)

var versions = []string{"1.20", "2.2", "2.3"}

// serveTestdata answers each call with a file of testdata/<version>; savepointFile picks
// the savepoint status answer. Calls without a file answer 404, as Flink's router does.
func serveTestdata(t *testing.T, version string, savepointFile *string) *flinkclient.HTTPClient {
	t.Helper()
	files := map[string]string{
		"GET /jobs/overview":                                        "jobs-overview.json",
		"GET /jobs/" + contractJobID:                                "job-details.json",
		"GET /jobs/" + contractJobID + "/exceptions":                "job-exceptions.json",
		"GET /jobs/" + contractJobID + "/checkpoints":               "checkpoints.json",
		"POST /jobs/" + contractJobID + "/stop":                     "savepoint-trigger.json",
		"POST /jobs/" + contractJobID + "/savepoints":               "savepoint-trigger.json",
		"GET /applications/overview":                                "applications-overview.json",
		"GET /applications/" + contractAppID:                        "application-details.json",
		"GET /applications/" + contractAppID + "/exceptions":        "application-exceptions.json",
		"GET /jobs/" + contractJobID + "/savepoints/" + contractTID: "",
		"POST /savepoint-disposal":                                  "savepoint-trigger.json",
		"GET /savepoint-disposal/" + contractTID:                    "",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := files[r.Method+" "+r.URL.Path]
		if ok && name == "" {
			name = *savepointFile
		}
		data, err := os.ReadFile(filepath.Join("testdata", version, name))
		if !ok || err != nil {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"errors":["Not found: ` + r.URL.Path + `"]}`))
			return
		}
		status := http.StatusOK
		if r.Method == http.MethodPost {
			status = http.StatusAccepted
		}
		w.WriteHeader(status)
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return newClient(t, srv.URL)
}

func TestContractJobs(t *testing.T) {
	ctx := context.Background()
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			c := serveTestdata(t, v, nil)
			jobs, err := c.ListJobs(ctx)
			require.NoError(t, err)
			assert.Equal(t, []flinkclient.Job{{ID: contractJobID, Name: "wordcount", State: "RUNNING", StartTime: 1764504000000, EndTime: -1}}, jobs)

			j, err := c.GetJob(ctx, contractJobID)
			require.NoError(t, err)
			want := flinkclient.Job{ID: contractJobID, Name: "wordcount", State: "RUNNING", StartTime: 1764504000000, EndTime: -1}
			if v == "2.3" {
				want.ApplicationID = contractAppID
			}
			assert.Equal(t, want, *j)

			ex, err := c.GetExceptions(ctx, contractJobID)
			require.NoError(t, err)
			require.Len(t, ex, 2)
			assert.Equal(t, "org.apache.flink.runtime.JobException: Recovery is suppressed by FixedDelayRestartBackoffTimeStrategy(maxNumberRestartAttempts=3, backoffTimeMS=10000)", flinkclient.Summary(ex))
			assert.Equal(t, "Source: words -> Map (1/2)#3", ex[0].TaskName)
			assert.Greater(t, ex[0].Timestamp, ex[1].Timestamp)
		})
	}
}

func TestContractSavepoints(t *testing.T) {
	ctx := context.Background()
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			var file string
			c := serveTestdata(t, v, &file)
			tid, err := c.StopWithSavepoint(ctx, contractJobID, flinkclient.SavepointRequest{TriggerID: contractTID})
			require.NoError(t, err)
			assert.Equal(t, contractTID, tid)

			file = "savepoint-in-progress.json"
			st, err := c.SavepointStatus(ctx, contractJobID, contractTID)
			require.NoError(t, err)
			assert.Equal(t, &flinkclient.SavepointStatus{State: flinkclient.OperationInProgress}, st)

			file = "savepoint-completed.json"
			st, err = c.SavepointStatus(ctx, contractJobID, contractTID)
			require.NoError(t, err)
			assert.Equal(t, &flinkclient.SavepointStatus{State: flinkclient.OperationCompleted, Location: "s3://bucket/savepoints/savepoint-0a1b2c-0123456789ab"}, st)

			file = "savepoint-failed.json"
			st, err = c.SavepointStatus(ctx, contractJobID, contractTID)
			require.NoError(t, err)
			assert.True(t, st.Completed())
			assert.False(t, st.Succeeded())
			assert.Equal(t, "java.util.concurrent.CompletionException: org.apache.flink.runtime.checkpoint.CheckpointException: Checkpoint Coordinator is suspending.", st.FailureCause)

			file = "no-such-file.json"
			_, err = c.SavepointStatus(ctx, contractJobID, contractTID)
			assert.ErrorIs(t, err, flinkclient.ErrNotFound, "an expired result")

			cp, err := c.GetCheckpoints(ctx, contractJobID)
			require.NoError(t, err)
			assert.Equal(t, flinkclient.CheckpointCounts{Restored: 1, Total: 7, Completed: 6, Failed: 1}, cp.Counts)
			require.NotNil(t, cp.LatestSavepoint())
			assert.Equal(t, flinkclient.Checkpoint{
				ID: 6, Status: "COMPLETED", IsSavepoint: true, Type: "SAVEPOINT", TriggerTimestamp: 1764504030000, LatestAckTimestamp: 1764504030090,
				ExternalPath: "s3://bucket/savepoints/savepoint-0a1b2c-0123456789ab",
			}, *cp.LatestSavepoint())
			assert.Equal(t, "s3://bucket/checkpoints/"+contractJobID+"/chk-7", cp.Latest.Completed.ExternalPath)
			assert.False(t, cp.Latest.Completed.IsSavepoint)
			assert.Equal(t, "Checkpoint expired before completing.", cp.Latest.Failed.FailureMessage)
			assert.Equal(t, "s3://bucket/savepoints/savepoint-initial", cp.Latest.Restored.ExternalPath)
		})
	}
}

func TestContractSavepointDisposal(t *testing.T) {
	ctx := context.Background()
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			var file string
			c := serveTestdata(t, v, &file)
			tid, err := c.DisposeSavepoint(ctx, "s3://bucket/savepoints/savepoint-0a1b2c-0123456789ab")
			require.NoError(t, err)
			assert.Equal(t, contractTID, tid)

			file = "disposal-completed.json"
			st, err := c.DisposalStatus(ctx, tid)
			require.NoError(t, err)
			assert.Equal(t, &flinkclient.OperationStatus{State: flinkclient.OperationCompleted}, st)
			assert.True(t, st.Succeeded())

			file = "disposal-failed.json"
			st, err = c.DisposalStatus(ctx, tid)
			require.NoError(t, err)
			assert.True(t, st.Completed())
			assert.False(t, st.Succeeded())
			assert.Contains(t, st.FailureCause, "java.io.FileNotFoundException: Cannot find meta data file")

			file = "no-such-file.json"
			_, err = c.DisposalStatus(ctx, tid)
			assert.ErrorIs(t, err, flinkclient.ErrNotFound, "a result Flink forgot")

			_, err = c.DisposeSavepoint(ctx, " ")
			assert.Error(t, err, "no path: not sent")
		})
	}
}

func TestContractApplications(t *testing.T) {
	ctx := context.Background()
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			c := serveTestdata(t, v, nil)
			apps, err := c.ListApplications(ctx)
			if v != "2.3" {
				assert.ErrorIs(t, err, flinkclient.ErrNotFound, "no /applications before 2.3")
				_, err = c.GetApplication(ctx, contractAppID)
				assert.ErrorIs(t, err, flinkclient.ErrNotFound)
				return
			}
			require.NoError(t, err)
			require.Len(t, apps, 1)
			assert.Equal(t, flinkclient.Application{
				ID: contractAppID, Name: "wordcount", Status: flinkclient.ApplicationStateFailed,
				StartTime: 1764504000000, EndTime: 1764504070000, JobCounts: map[string]int{"CANCELED": 1},
			}, apps[0])

			app, err := c.GetApplication(ctx, contractAppID)
			require.NoError(t, err)
			assert.Equal(t, map[string]int{"CANCELED": 1}, app.JobCounts)
			require.Len(t, app.Jobs, 1)
			assert.Equal(t, flinkclient.Job{ID: contractJobID, Name: "wordcount", State: "CANCELED", StartTime: 1764504000000, EndTime: 1764504070000}, app.Jobs[0])

			ex, err := c.GetApplicationExceptions(ctx, contractAppID)
			require.NoError(t, err)
			require.Len(t, ex, 2)
			assert.Equal(t, "org.apache.flink.util.FlinkException: application failed", flinkclient.Summary(ex), "newest first, although Flink lists it last")
		})
	}
}
