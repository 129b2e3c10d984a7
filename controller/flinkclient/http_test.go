package flinkclient_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller/fakeflink"
	"github.com/flink-admission/flink-admission/controller/flinkclient"
)

const jobID = "a1b2c3d4e5f60718293a4b5c6d7e8f90"

func newClient(t *testing.T, url string) *flinkclient.HTTPClient {
	t.Helper()
	c, err := flinkclient.New(url, nil)
	require.NoError(t, err)
	return c
}

func TestNewRejectsBadAddresses(t *testing.T) {
	for _, addr := range []string{"", "ftp://x:1", "http://", "://nope"} {
		_, err := flinkclient.New(addr, nil)
		assert.Error(t, err, "address %q", addr)
	}
}

func TestJobs(t *testing.T) {
	ctx := context.Background()
	fake := fakeflink.New()
	defer fake.Close()
	c := newClient(t, fake.URL())

	jobs, err := c.ListJobs(ctx)
	require.NoError(t, err)
	assert.Empty(t, jobs, "a fresh JobManager lists no jobs")

	fake.SetJobs(flinkclient.Job{ID: jobID, Name: "wordcount", State: flinkclient.JobStateRunning, StartTime: 42})
	jobs, err = c.ListJobs(ctx)
	require.NoError(t, err)
	assert.Equal(t, []flinkclient.Job{{ID: jobID, Name: "wordcount", State: "RUNNING", StartTime: 42}}, jobs)

	j, err := c.GetJob(ctx, jobID)
	require.NoError(t, err)
	assert.Equal(t, "RUNNING", j.State)

	_, err = c.GetJob(ctx, "ffffffffffffffffffffffffffffffff")
	assert.ErrorIs(t, err, flinkclient.ErrNotFound, "an unknown job is ErrNotFound")

	_, err = c.GetJob(ctx, "../overview")
	assert.Error(t, err, "an id that changes the path is refused")
}

func TestExceptionsSummary(t *testing.T) {
	ctx := context.Background()
	fake := fakeflink.New()
	defer fake.Close()
	c := newClient(t, fake.URL())
	fake.SetJobs(flinkclient.Job{ID: jobID, State: flinkclient.JobStateFailed})
	fake.SetExceptions(jobID,
		flinkclient.Exception{Name: "org.apache.flink.runtime.JobException", StackTrace: "org.apache.flink.runtime.JobException: Recovery is suppressed by FixedDelayRestartBackoffTimeStrategy\n\tat x.y(Z.java:1)"},
		flinkclient.Exception{Name: "older"},
	)
	ex, err := c.GetExceptions(ctx, jobID)
	require.NoError(t, err)
	require.Len(t, ex, 2)
	assert.Equal(t, "org.apache.flink.runtime.JobException: Recovery is suppressed by FixedDelayRestartBackoffTimeStrategy", flinkclient.Summary(ex))
	assert.Equal(t, "", flinkclient.Summary(nil))
	assert.Equal(t, "a.B: c", flinkclient.Summary([]flinkclient.Exception{{Name: "a.B", StackTrace: "c\nd"}}))
	assert.Equal(t, "a.B", flinkclient.Summary([]flinkclient.Exception{{Name: "a.B"}}))
}

func TestRootExceptionOfFlink1(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"root-exception":"java.lang.RuntimeException: boom\n\tat a.b","timestamp":5}`))
	}))
	defer srv.Close()
	ex, err := newClient(t, srv.URL).GetExceptions(context.Background(), jobID)
	require.NoError(t, err)
	assert.Equal(t, "java.lang.RuntimeException: boom", flinkclient.Summary(ex))
}

func TestSavepointCompletes(t *testing.T) {
	ctx := context.Background()
	fake := fakeflink.New()
	defer fake.Close()
	c := newClient(t, fake.URL())
	fake.SetJobs(flinkclient.Job{ID: jobID, State: flinkclient.JobStateRunning})

	tid, err := c.TriggerSavepoint(ctx, jobID, flinkclient.SavepointRequest{TargetDirectory: "s3://b/sp", FormatType: "CANONICAL"})
	require.NoError(t, err)
	st, err := c.SavepointStatus(ctx, jobID, tid)
	require.NoError(t, err)
	assert.True(t, st.Succeeded(), "status %+v", st)
	assert.NotEmpty(t, st.Location)
	assert.Equal(t, flinkclient.JobStateRunning, fake.JobState(jobID), "a savepoint leaves the job running")
}

func TestStopWithSavepointFinishesTheJob(t *testing.T) {
	ctx := context.Background()
	fake := fakeflink.New()
	defer fake.Close()
	c := newClient(t, fake.URL())
	fake.SetJobs(flinkclient.Job{ID: jobID, State: flinkclient.JobStateRunning})
	fake.SetSavepointMode(fakeflink.SavepointHold)

	tid, err := c.StopWithSavepoint(ctx, jobID, flinkclient.SavepointRequest{})
	require.NoError(t, err)
	st, err := c.SavepointStatus(ctx, jobID, tid)
	require.NoError(t, err)
	assert.False(t, st.Completed(), "held trigger is in progress")
	assert.Equal(t, flinkclient.JobStateRunning, fake.JobState(jobID))

	fake.CompleteSavepoints()
	st, err = c.SavepointStatus(ctx, jobID, tid)
	require.NoError(t, err)
	assert.True(t, st.Succeeded())
	assert.Equal(t, flinkclient.JobStateFinished, fake.JobState(jobID), "stop-with-savepoint ends FINISHED")
	assert.Equal(t, 1, fake.CountRequests("POST /jobs/"+jobID+"/stop"))

	_, err = c.StopWithSavepoint(ctx, jobID, flinkclient.SavepointRequest{})
	assert.Error(t, err, "a finished job cannot be stopped again")
}

func TestSavepointFails(t *testing.T) {
	ctx := context.Background()
	fake := fakeflink.New()
	defer fake.Close()
	c := newClient(t, fake.URL())
	fake.SetJobs(flinkclient.Job{ID: jobID, State: flinkclient.JobStateRunning})
	fake.SetSavepointMode(fakeflink.SavepointFail)
	tid, err := c.TriggerSavepoint(ctx, jobID, flinkclient.SavepointRequest{})
	require.NoError(t, err)
	st, err := c.SavepointStatus(ctx, jobID, tid)
	require.NoError(t, err)
	assert.True(t, st.Completed())
	assert.False(t, st.Succeeded())
	assert.Contains(t, st.FailureCause, "checkpoint coordinator")

	_, err = c.SavepointStatus(ctx, jobID, "nosuchtrigger")
	assert.ErrorIs(t, err, flinkclient.ErrNotFound)
}

func TestApplicationsAbsentBeforeFlink23(t *testing.T) {
	ctx := context.Background()
	fake := fakeflink.New()
	defer fake.Close()
	c := newClient(t, fake.URL())
	_, err := c.ListApplications(ctx)
	assert.ErrorIs(t, err, flinkclient.ErrNotFound, "older Flink answers 404")

	fake.SetApplications(flinkclient.Application{ID: "app1", Name: "wordcount", Status: flinkclient.ApplicationStateFailed})
	fake.SetApplicationExceptions("app1", flinkclient.Exception{Name: "java.lang.NumberFormatException", StackTrace: "java.lang.NumberFormatException: For input string: \"x\""})
	apps, err := c.ListApplications(ctx)
	require.NoError(t, err)
	assert.Equal(t, []flinkclient.Application{{ID: "app1", Name: "wordcount", Status: "FAILED"}}, apps)
	ex, err := c.GetApplicationExceptions(ctx, "app1")
	require.NoError(t, err)
	assert.Equal(t, `java.lang.NumberFormatException: For input string: "x"`, flinkclient.Summary(ex))
}

func TestUnavailable(t *testing.T) {
	fake := fakeflink.New()
	defer fake.Close()
	c := newClient(t, fake.URL())
	fake.SetUnavailable(true)
	_, err := c.ListJobs(context.Background())
	var herr *flinkclient.HTTPError
	require.ErrorAs(t, err, &herr)
	assert.Equal(t, http.StatusServiceUnavailable, herr.StatusCode)
	assert.False(t, errors.Is(err, flinkclient.ErrNotFound), "503 is not 404")

	fake.Close()
	_, err = c.ListJobs(context.Background())
	assert.Error(t, err, "a closed endpoint is an error")
}

func TestMalformedAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"jobs": [`))
	}))
	defer srv.Close()
	_, err := newClient(t, srv.URL).ListJobs(context.Background())
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "decoding"), err.Error())
}

func TestSavepointCompletedWithoutLocationIsAFailure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"status":{"id":"COMPLETED"},"operation":{}}`))
	}))
	defer srv.Close()
	st, err := newClient(t, srv.URL).SavepointStatus(context.Background(), jobID, "t1")
	require.NoError(t, err)
	assert.False(t, st.Succeeded())
	assert.NotEmpty(t, st.FailureCause)
}
