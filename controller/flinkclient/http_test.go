package flinkclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller/flinkclient"
	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

const jobID = "a1b2c3d4e5f60718293a4b5c6d7e8f90"

func newClient(t *testing.T, url string) *flinkclient.HTTPClient {
	t.Helper()
	c, err := flinkclient.New(url, nil)
	require.NoError(t, err)
	return c
}

// runningJob returns a fake JobManager running jobID, closed when the test ends, and a client
// of it.
func runningJob(t *testing.T) (*fakeflink.JobManager, *flinkclient.HTTPClient) {
	t.Helper()
	fake := fakeflink.New()
	t.Cleanup(fake.Close)
	fake.SetJobs(flinkclient.Job{ID: jobID, State: flinkclient.JobStateRunning})
	return fake, newClient(t, fake.URL())
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
	assert.Equal(t, []flinkclient.Job{{ID: jobID, Name: "wordcount", State: "RUNNING", StartTime: 42, EndTime: -1}}, jobs, "Flink reports end-time -1 while a job runs")

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
	fake, c := runningJob(t)

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
	fake, c := runningJob(t)
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

	again, err := c.StopWithSavepoint(ctx, jobID, flinkclient.SavepointRequest{})
	require.NoError(t, err, "Flink accepts the request and fails the operation")
	st, err = c.SavepointStatus(ctx, jobID, again)
	require.NoError(t, err)
	assert.True(t, st.Completed())
	assert.False(t, st.Succeeded(), "a finished job cannot be stopped again")
}

func TestSavepointFails(t *testing.T) {
	ctx := context.Background()
	fake, c := runningJob(t)
	fake.SetSavepointMode(fakeflink.SavepointFail)
	tid, err := c.TriggerSavepoint(ctx, jobID, flinkclient.SavepointRequest{})
	require.NoError(t, err)
	st, err := c.SavepointStatus(ctx, jobID, tid)
	require.NoError(t, err)
	assert.True(t, st.Completed())
	assert.False(t, st.Succeeded())
	assert.Contains(t, st.FailureCause, "Checkpoint Coordinator is suspending")

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
	assert.Equal(t, []flinkclient.Application{{ID: "app1", Name: "wordcount", Status: "FAILED", JobCounts: map[string]int{}}}, apps)
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

// recorder answers every call with answer and keeps the last request's method, URL and body.
type recorder struct {
	method, uri string
	body        map[string]any
}

func recordingServer(t *testing.T, status int, answer string) (*httptest.Server, *recorder) {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.method, rec.uri, rec.body = r.Method, r.URL.RequestURI(), nil
		_ = json.NewDecoder(r.Body).Decode(&rec.body)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(answer))
	}))
	t.Cleanup(srv.Close)
	return srv, rec
}

func TestTriggerBodiesCarryTheCallersTriggerID(t *testing.T) {
	const tid = "0123456789abcdef0123456789abcdef"
	ctx := context.Background()
	srv, rec := recordingServer(t, http.StatusAccepted, `{"request-id":"`+tid+`"}`)
	c := newClient(t, srv.URL)

	got, err := c.StopWithSavepoint(ctx, jobID, flinkclient.SavepointRequest{TargetDirectory: "s3://b/sp", FormatType: "CANONICAL", TriggerID: tid})
	require.NoError(t, err)
	assert.Equal(t, tid, got)
	assert.Equal(t, "POST /jobs/"+jobID+"/stop", rec.method+" "+rec.uri)
	assert.Equal(t, map[string]any{"targetDirectory": "s3://b/sp", "formatType": "CANONICAL", "drain": false, "triggerId": tid}, rec.body,
		"field names of StopWithSavepointRequestBody")

	got, err = c.TriggerSavepoint(ctx, jobID, flinkclient.SavepointRequest{TargetDirectory: "s3://b/sp", TriggerID: tid})
	require.NoError(t, err)
	assert.Equal(t, tid, got)
	assert.Equal(t, "POST /jobs/"+jobID+"/savepoints", rec.method+" "+rec.uri)
	assert.Equal(t, map[string]any{"target-directory": "s3://b/sp", "cancel-job": false, "triggerId": tid}, rec.body,
		"field names of SavepointTriggerRequestBody")
}

func TestTriggerIDChecks(t *testing.T) {
	ctx := context.Background()
	srv, _ := recordingServer(t, http.StatusAccepted, `{"request-id":"ffffffffffffffffffffffffffffffff"}`)
	c := newClient(t, srv.URL)
	for name, tid := range map[string]string{"too short": "abc", "not hex": "zz23456789abcdef0123456789abcdef", "path": "../../../jobs/overview/0123456789"} {
		_, err := c.StopWithSavepoint(ctx, jobID, flinkclient.SavepointRequest{TriggerID: tid})
		assert.ErrorContains(t, err, "invalid trigger id", name)
	}
	_, err := c.StopWithSavepoint(ctx, jobID, flinkclient.SavepointRequest{TriggerID: "0123456789abcdef0123456789abcdef"})
	assert.ErrorContains(t, err, "asked for trigger", "an answer about another trigger is an error")
	assert.True(t, flinkclient.IsID(flinkclient.NewID()))
	assert.NotEqual(t, flinkclient.NewID(), flinkclient.NewID())
}

func TestCancel(t *testing.T) {
	ctx := context.Background()
	srv, rec := recordingServer(t, http.StatusAccepted, `{}`)
	c := newClient(t, srv.URL)
	require.NoError(t, c.CancelJob(ctx, jobID))
	assert.Equal(t, "PATCH /jobs/"+jobID+"?mode=cancel", rec.method+" "+rec.uri)
	require.NoError(t, c.CancelApplication(ctx, jobID))
	assert.Equal(t, "POST /applications/"+jobID+"/cancel", rec.method+" "+rec.uri)

	conflict, _ := recordingServer(t, http.StatusConflict, `{"errors":["Job cancellation failed because the job has already reached another terminal state (FINISHED)."]}`)
	err := newClient(t, conflict.URL).CancelJob(ctx, jobID)
	var herr *flinkclient.HTTPError
	require.ErrorAs(t, err, &herr)
	assert.Equal(t, http.StatusConflict, herr.StatusCode)
}

func TestShutdownCluster(t *testing.T) {
	ctx := context.Background()
	srv, rec := recordingServer(t, http.StatusOK, `{}`)
	require.NoError(t, newClient(t, srv.URL).ShutdownCluster(ctx))
	assert.Equal(t, "DELETE /cluster", rec.method+" "+rec.uri)

	// A JobManager that is not ready (or is already shutting down) answers 503: the
	// controller must see that the shutdown was not taken.
	unavailable, _ := recordingServer(t, http.StatusServiceUnavailable, `{"errors":["Service temporarily unavailable due to an ongoing leader election. Please refresh."]}`)
	err := newClient(t, unavailable.URL).ShutdownCluster(ctx)
	var herr *flinkclient.HTTPError
	require.ErrorAs(t, err, &herr)
	assert.Equal(t, http.StatusServiceUnavailable, herr.StatusCode)
	assert.Equal(t, http.MethodDelete, herr.Method)
}

func TestApplicationJobsInBothShapes(t *testing.T) {
	ctx := context.Background()
	overview, _ := recordingServer(t, http.StatusOK, `{"applications":[{"id":"`+jobID+`","name":"wc","status":"FAILED","start-time":1,"end-time":2,"duration":1,"jobs":{"CANCELED":1}}]}`)
	apps, err := newClient(t, overview.URL).ListApplications(ctx)
	require.NoError(t, err)
	require.Len(t, apps, 1)
	assert.Equal(t, map[string]int{"CANCELED": 1}, apps[0].JobCounts)

	details, _ := recordingServer(t, http.StatusOK, `{"id":"`+jobID+`","name":"wc","status":"RUNNING","start-time":1,"end-time":-1,"duration":5,"timestamps":{"RUNNING":1},
		"jobs":[{"jid":"ffffffffffffffffffffffffffffffff","name":"wc","state":"RUNNING","start-time":1,"end-time":-1,"duration":5,"last-modification":1,"tasks":{"total":1}}]}`)
	app, err := newClient(t, details.URL).GetApplication(ctx, jobID)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"RUNNING": 1}, app.JobCounts)
	require.Len(t, app.Jobs, 1)
	assert.Equal(t, "ffffffffffffffffffffffffffffffff", app.Jobs[0].ID)

	bad, _ := recordingServer(t, http.StatusOK, `{"id":"x","jobs":7}`)
	_, err = newClient(t, bad.URL).GetApplication(ctx, jobID)
	assert.ErrorContains(t, err, "neither a map nor a list")
}

func TestExceptionsSortedNewestFirst(t *testing.T) {
	ctx := context.Background()
	// The application handler of Flink 2.3 keeps the order in which failures happened.
	srv, _ := recordingServer(t, http.StatusOK, `{"exceptionHistory":{"entries":[
		{"exceptionName":"first","timestamp":10},{"exceptionName":"third","timestamp":30},{"exceptionName":"second","timestamp":20}]}}`)
	c := newClient(t, srv.URL)
	for name, get := range map[string]func() ([]flinkclient.Exception, error){
		"job":         func() ([]flinkclient.Exception, error) { return c.GetExceptions(ctx, jobID) },
		"application": func() ([]flinkclient.Exception, error) { return c.GetApplicationExceptions(ctx, jobID) },
	} {
		ex, err := get()
		require.NoError(t, err, name)
		var names []string
		for _, e := range ex {
			names = append(names, e.Name)
		}
		assert.Equal(t, []string{"third", "second", "first"}, names, name)
	}
}

func TestLatestSavepointMustBeRestorable(t *testing.T) {
	for name, tc := range map[string]struct {
		sp   *flinkclient.Checkpoint
		want bool
	}{
		"none":                       {nil, false},
		"restorable":                 {&flinkclient.Checkpoint{IsSavepoint: true, ExternalPath: "s3://b/sp-1"}, true},
		"not externally addressable": {&flinkclient.Checkpoint{IsSavepoint: true, ExternalPath: flinkclient.NotExternallyAddressable}, false},
		"discarded":                  {&flinkclient.Checkpoint{IsSavepoint: true, ExternalPath: "s3://b/sp-1", Discarded: true}, false},
		"no path":                    {&flinkclient.Checkpoint{IsSavepoint: true}, false},
	} {
		cp := &flinkclient.Checkpoints{Latest: flinkclient.LatestCheckpoints{Savepoint: tc.sp}}
		assert.Equal(t, tc.want, cp.LatestSavepoint() != nil, name)
	}
}

// Savepoint and disposal statuses are read by one helper: both name a failure by the first
// line of its stack trace, else its class, else say it failed, so that a completed operation
// with a failure cause never reads as a success.
func TestOperationFailureCauses(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		operation         string
		wantSavepoint     string
		wantDisposal      string
		savepointLocation string
	}{
		"stack trace: its first line": {
			operation:     `{"failure-cause":{"class":"java.io.IOException","stack-trace":"java.io.IOException: disk full\n\tat a.b(C.java:1)"}}`,
			wantSavepoint: "java.io.IOException: disk full", wantDisposal: "java.io.IOException: disk full",
		},
		"class only": {
			operation:     `{"failure-cause":{"class":"java.io.IOException"}}`,
			wantSavepoint: "java.io.IOException", wantDisposal: "java.io.IOException",
		},
		"empty failure cause: still a failure": {
			operation:     `{"failure-cause":{}}`,
			wantSavepoint: "savepoint failed", wantDisposal: "savepoint disposal failed",
		},
		"no failure cause: a success": {
			operation:         `{"location":"s3://b/sp-1"}`,
			savepointLocation: "s3://b/sp-1",
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv, rec := recordingServer(t, http.StatusOK, `{"status":{"id":"COMPLETED"},"operation":`+tc.operation+`}`)
			c := newClient(t, srv.URL)

			sp, err := c.SavepointStatus(ctx, jobID, contractTID)
			require.NoError(t, err)
			assert.Equal(t, "GET /jobs/"+jobID+"/savepoints/"+contractTID, rec.method+" "+rec.uri)
			assert.Equal(t, &flinkclient.SavepointStatus{State: flinkclient.OperationCompleted, Location: tc.savepointLocation, FailureCause: tc.wantSavepoint}, sp)

			d, err := c.DisposalStatus(ctx, contractTID)
			require.NoError(t, err)
			assert.Equal(t, "GET /savepoint-disposal/"+contractTID, rec.method+" "+rec.uri)
			assert.Equal(t, &flinkclient.OperationStatus{State: flinkclient.OperationCompleted, FailureCause: tc.wantDisposal}, d)
			assert.Equal(t, tc.wantDisposal == "", d.Succeeded())
		})
	}
}
