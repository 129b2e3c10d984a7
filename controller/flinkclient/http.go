package flinkclient

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// maxResponseBytes bounds what is read from Flink: exception histories carry stack traces,
// and a misbehaving endpoint must not make the controller buffer without limit.
const maxResponseBytes = 4 << 20

// DefaultTimeout bounds one REST call when the caller's context has no earlier deadline, so
// that a JobManager that accepts connections but never answers cannot stall a reconcile.
const DefaultTimeout = 10 * time.Second

// HTTPClient talks to one JobManager's REST endpoint.
type HTTPClient struct {
	base *url.URL
	http *http.Client
}

var _ Client = &HTTPClient{}

// New returns a client for the REST endpoint at baseURL (e.g. http://name-jobmanager.ns.svc:8081).
// A nil httpClient uses one with DefaultTimeout.
func New(baseURL string, httpClient *http.Client) (*HTTPClient, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("parsing the Flink REST address %q: %w", baseURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("the Flink REST address %q must be http or https", baseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("the Flink REST address %q has no host", baseURL)
	}
	if httpClient == nil {
		httpClient = &http.Client{Timeout: DefaultTimeout}
	}
	return &HTTPClient{base: u, http: httpClient}, nil
}

// HTTPError is a non-2xx answer from Flink.
type HTTPError struct {
	Method, Path string
	StatusCode   int
	Body         string
}

// Error implements error.
func (e *HTTPError) Error() string {
	return fmt.Sprintf("flink %s %s: HTTP %d: %s", e.Method, e.Path, e.StatusCode, e.Body)
}

// Unwrap makes errors.Is(err, ErrNotFound) true for a 404.
func (e *HTTPError) Unwrap() error {
	if e.StatusCode == http.StatusNotFound {
		return ErrNotFound
	}
	return nil
}

func (c *HTTPClient) do(ctx context.Context, method, path string, body, out any) error {
	return c.doQuery(ctx, method, path, nil, body, out)
}

func (c *HTTPClient) doQuery(ctx context.Context, method, path string, query url.Values, body, out any) error {
	var reqBody io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		reqBody = bytes.NewReader(b)
	}
	u := c.base.JoinPath(path)
	if query != nil {
		u.RawQuery = query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), reqBody)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("flink %s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("flink %s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &HTTPError{Method: method, Path: path, StatusCode: resp.StatusCode, Body: firstLine(string(data), 200)}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("flink %s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// ListJobs implements Client.
func (c *HTTPClient) ListJobs(ctx context.Context) ([]Job, error) {
	var out struct {
		Jobs []Job `json:"jobs"`
	}
	if err := c.do(ctx, http.MethodGet, "/jobs/overview", nil, &out); err != nil {
		return nil, err
	}
	return out.Jobs, nil
}

// GetJob implements Client.
func (c *HTTPClient) GetJob(ctx context.Context, jobID string) (*Job, error) {
	if err := checkID("job", jobID); err != nil {
		return nil, err
	}
	out := &Job{}
	if err := c.do(ctx, http.MethodGet, "/jobs/"+jobID, nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// exceptionsBody is the answer of /jobs/:jobid/exceptions and /applications/:id/exceptions.
// Flink 1.x also sends root-exception; 2.x only the history.
type exceptionsBody struct {
	RootException string `json:"root-exception"`
	Timestamp     int64  `json:"timestamp"`
	History       struct {
		Entries []Exception `json:"entries"`
	} `json:"exceptionHistory"`
}

// list returns the history sorted newest first. The order is not taken from Flink: the job
// handler reverses its history, the application handler (2.3) does not.
func (b *exceptionsBody) list() []Exception {
	if len(b.History.Entries) > 0 {
		out := slices.Clone(b.History.Entries)
		SortNewestFirst(out)
		return out
	}
	if b.RootException != "" {
		name, _, _ := strings.Cut(b.RootException, "\n")
		return []Exception{{Name: name, StackTrace: b.RootException, Timestamp: b.Timestamp}}
	}
	return nil
}

// SortNewestFirst orders exceptions newest first, stably.
func SortNewestFirst(exceptions []Exception) {
	slices.SortStableFunc(exceptions, func(a, b Exception) int {
		switch {
		case a.Timestamp > b.Timestamp:
			return -1
		case a.Timestamp < b.Timestamp:
			return 1
		}
		return 0
	})
}

// GetExceptions implements Client.
func (c *HTTPClient) GetExceptions(ctx context.Context, jobID string) ([]Exception, error) {
	if err := checkID("job", jobID); err != nil {
		return nil, err
	}
	out := &exceptionsBody{}
	if err := c.do(ctx, http.MethodGet, "/jobs/"+jobID+"/exceptions", nil, out); err != nil {
		return nil, err
	}
	return out.list(), nil
}

type triggerAnswer struct {
	RequestID string `json:"request-id"`
}

// TriggerSavepoint implements Client.
func (c *HTTPClient) TriggerSavepoint(ctx context.Context, jobID string, req SavepointRequest) (string, error) {
	if err := checkID("job", jobID); err != nil {
		return "", err
	}
	if err := checkTriggerID(req.TriggerID); err != nil {
		return "", err
	}
	// SavepointTriggerRequestBody.
	body := map[string]any{"cancel-job": false}
	if req.TargetDirectory != "" {
		body["target-directory"] = req.TargetDirectory
	}
	if req.FormatType != "" {
		body["formatType"] = req.FormatType
	}
	if req.TriggerID != "" {
		body["triggerId"] = req.TriggerID
	}
	return c.trigger(ctx, "/jobs/"+jobID+"/savepoints", body, req.TriggerID)
}

// trigger posts a savepoint or stop request and returns Flink's request id
// (TriggerResponse), which must be the caller's trigger ID when one was sent.
func (c *HTTPClient) trigger(ctx context.Context, path string, body map[string]any, triggerID string) (string, error) {
	var out triggerAnswer
	if err := c.do(ctx, http.MethodPost, path, body, &out); err != nil {
		return "", err
	}
	if out.RequestID == "" {
		return "", fmt.Errorf("flink POST %s: accepted without a request id", path)
	}
	if triggerID != "" && !strings.EqualFold(out.RequestID, triggerID) {
		return "", fmt.Errorf("flink POST %s: asked for trigger %s, got %s", path, triggerID, out.RequestID)
	}
	return out.RequestID, nil
}

// StopWithSavepoint implements Client. drain stays false: the job is stopped to be resumed
// from the savepoint, so its event-time timers must not fire.
func (c *HTTPClient) StopWithSavepoint(ctx context.Context, jobID string, req SavepointRequest) (string, error) {
	if err := checkID("job", jobID); err != nil {
		return "", err
	}
	if err := checkTriggerID(req.TriggerID); err != nil {
		return "", err
	}
	// StopWithSavepointRequestBody.
	body := map[string]any{"drain": false}
	if req.TargetDirectory != "" {
		body["targetDirectory"] = req.TargetDirectory
	}
	if req.FormatType != "" {
		body["formatType"] = req.FormatType
	}
	if req.TriggerID != "" {
		body["triggerId"] = req.TriggerID
	}
	return c.trigger(ctx, "/jobs/"+jobID+"/stop", body, req.TriggerID)
}

// SavepointStatus implements Client.
func (c *HTTPClient) SavepointStatus(ctx context.Context, jobID, triggerID string) (*SavepointStatus, error) {
	if err := checkID("job", jobID); err != nil {
		return nil, err
	}
	if err := checkID("trigger", triggerID); err != nil {
		return nil, err
	}
	st, err := c.operationStatus(ctx, "/jobs/"+jobID+"/savepoints/"+triggerID, "savepoint failed")
	if err != nil {
		return nil, err
	}
	if st.State == OperationCompleted && st.Location == "" && st.FailureCause == "" {
		st.FailureCause = "savepoint completed without a location"
	}
	return st, nil
}

// operationAnswer is an AsynchronousOperationResult: a queue status and, once completed, a result.
type operationAnswer struct {
	Status struct {
		ID string `json:"id"`
	} `json:"status"`
	Operation *struct {
		Location     string `json:"location"`
		FailureCause *struct {
			Class      string `json:"class"`
			StackTrace string `json:"stack-trace"`
		} `json:"failure-cause"`
	} `json:"operation"`
}

// operationStatus polls an asynchronous operation at path. A failure cause may come with neither a
// stack trace nor a class, and must still read as failed.
func (c *HTTPClient) operationStatus(ctx context.Context, path, failed string) (*SavepointStatus, error) {
	var out operationAnswer
	if err := c.do(ctx, http.MethodGet, path, nil, &out); err != nil {
		return nil, err
	}
	res := &SavepointStatus{State: out.Status.ID}
	if out.Operation == nil {
		return res, nil
	}
	res.Location = out.Operation.Location
	if fc := out.Operation.FailureCause; fc != nil {
		res.FailureCause = firstLine(fc.StackTrace, 500)
		if res.FailureCause == "" {
			res.FailureCause = fc.Class
		}
		if res.FailureCause == "" {
			res.FailureCause = failed
		}
	}
	return res, nil
}

// DisposeSavepoint implements Client.
func (c *HTTPClient) DisposeSavepoint(ctx context.Context, savepointPath string) (string, error) {
	if strings.TrimSpace(savepointPath) == "" {
		return "", fmt.Errorf("savepoint disposal: empty savepoint path")
	}
	// SavepointDisposalRequest.
	return c.trigger(ctx, "/savepoint-disposal", map[string]any{"savepoint-path": savepointPath}, "")
}

// DisposalStatus implements Client.
func (c *HTTPClient) DisposalStatus(ctx context.Context, triggerID string) (*OperationStatus, error) {
	if err := checkID("trigger", triggerID); err != nil {
		return nil, err
	}
	op, err := c.operationStatus(ctx, "/savepoint-disposal/"+triggerID, "savepoint disposal failed")
	if err != nil {
		return nil, err
	}
	return &OperationStatus{State: op.State, FailureCause: op.FailureCause}, nil
}

// GetCheckpoints implements Client.
func (c *HTTPClient) GetCheckpoints(ctx context.Context, jobID string) (*Checkpoints, error) {
	if err := checkID("job", jobID); err != nil {
		return nil, err
	}
	out := &Checkpoints{}
	if err := c.do(ctx, http.MethodGet, "/jobs/"+jobID+"/checkpoints", nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// CancelJob implements Client.
func (c *HTTPClient) CancelJob(ctx context.Context, jobID string) error {
	if err := checkID("job", jobID); err != nil {
		return err
	}
	return c.doQuery(ctx, http.MethodPatch, "/jobs/"+jobID, url.Values{"mode": {"cancel"}}, nil, nil)
}

// ShutdownCluster implements Client.
func (c *HTTPClient) ShutdownCluster(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/cluster", nil, nil)
}

// ListApplications implements Client.
func (c *HTTPClient) ListApplications(ctx context.Context) ([]Application, error) {
	var out struct {
		Applications []Application `json:"applications"`
	}
	if err := c.do(ctx, http.MethodGet, "/applications/overview", nil, &out); err != nil {
		return nil, err
	}
	return out.Applications, nil
}

// GetApplication implements Client.
func (c *HTTPClient) GetApplication(ctx context.Context, applicationID string) (*Application, error) {
	if err := checkID("application", applicationID); err != nil {
		return nil, err
	}
	out := &Application{}
	if err := c.do(ctx, http.MethodGet, "/applications/"+applicationID, nil, out); err != nil {
		return nil, err
	}
	return out, nil
}

// CancelApplication implements Client.
func (c *HTTPClient) CancelApplication(ctx context.Context, applicationID string) error {
	if err := checkID("application", applicationID); err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, "/applications/"+applicationID+"/cancel", nil, nil)
}

// GetApplicationExceptions implements Client.
func (c *HTTPClient) GetApplicationExceptions(ctx context.Context, applicationID string) ([]Exception, error) {
	if err := checkID("application", applicationID); err != nil {
		return nil, err
	}
	out := &exceptionsBody{}
	if err := c.do(ctx, http.MethodGet, "/applications/"+applicationID+"/exceptions", nil, out); err != nil {
		return nil, err
	}
	return out.list(), nil
}

// checkID refuses IDs that would change the request path: Flink's IDs are hexadecimal.
func checkID(kind, id string) error {
	if id == "" {
		return fmt.Errorf("empty %s id", kind)
	}
	for _, r := range id {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_') {
			return fmt.Errorf("invalid %s id %q", kind, id)
		}
	}
	return nil
}

func checkTriggerID(id string) error {
	if id != "" && !IsID(id) {
		return fmt.Errorf("invalid trigger id %q: want 32 hexadecimal characters", id)
	}
	return nil
}

// IsID reports whether s has the form of Flink's IDs (an AbstractID: 32 hexadecimal characters).
func IsID(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// NewID returns a random ID in Flink's format, for the job and trigger IDs the controller picks.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	return hex.EncodeToString(b[:])
}

func firstLine(s string, max int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.TrimSpace(s)
	if len(s) > max {
		s = s[:max]
	}
	return s
}

// Summary is a one-line failure reason from an exception history: the newest exception's
// name, or its first stack-trace line when Flink sends no name.
func Summary(exceptions []Exception) string {
	if len(exceptions) == 0 {
		return ""
	}
	e := exceptions[0]
	line := firstLine(e.StackTrace, 500)
	if e.Name == "" {
		return line
	}
	if line == "" || strings.HasPrefix(line, e.Name) {
		if line != "" {
			return line
		}
		return e.Name
	}
	return e.Name + ": " + line
}
