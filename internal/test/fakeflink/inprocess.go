package fakeflink

import (
	"fmt"
	"net/http"
	"net/http/httptest"
)

// inProcess is an http.RoundTripper that serves requests with a handler in the same process:
// no sockets, so that property tests can run many sequences fast.
type inProcess struct {
	handler http.Handler
	// refused reports whether a connection would be refused (a dead process).
	refused func() bool
}

// RoundTrip implements http.RoundTripper.
func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.refused != nil && t.refused() {
		return nil, fmt.Errorf("dial tcp %s: connection refused", r.URL.Host)
	}
	rec := httptest.NewRecorder()
	t.handler.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// HTTPClient returns a client that reaches the cluster's Service (URL) without a socket: use
// it with flinkclient.New(c.URL(), c.HTTPClient()) in fast tests.
func (c *Cluster) HTTPClient() *http.Client {
	return &http.Client{Transport: inProcess{handler: http.HandlerFunc(c.serveService)}}
}

// HTTPClient returns a client that reaches this process (URL) without a socket; calls to a
// dead process fail as a refused connection.
func (p *JobManager) HTTPClient() *http.Client {
	return &http.Client{Transport: inProcess{handler: p, refused: func() bool { return !p.Alive() }}}
}
