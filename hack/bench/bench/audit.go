package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The identities of section 6's clients, so that the API server's audit log tells their
// requests apart. The control plane's components and the bench itself run as the admin user;
// the replicas and the simulated Flink each get a user of their own (RunController).
const (
	// controllerUser is the user the `serve` replicas run as.
	controllerUser = "flink-admission-controller"
	// simulatedFlinkUser is the user the simulated Flink's JobManagers (their HA ConfigMaps
	// and leader Leases) run as.
	simulatedFlinkUser = "bench-simulated-flink"
)

// The clients a request is attributed to (requestClient).
const (
	clientController     = "controller"
	clientSimulatedFlink = "simulatedFlink"
	clientControlPlane   = "controlPlane"
	clientBench          = "bench"
)

// auditPolicy logs every request at the Metadata level (who, what, no bodies) once: a
// request when its response is complete, a watch when it starts.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
`

// auditFlags are the API server flags that write its audit log to path, with the policy
// written beside it. The log is never rotated: a phase is read between two offsets of one
// file (the default rotates at 100 MB, a thousand clusters' create phase).
func auditFlags(path string) (map[string]string, error) {
	policy := filepath.Join(filepath.Dir(path), "audit-policy.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	return map[string]string{
		"audit-policy-file":  policy,
		"audit-log-path":     path,
		"audit-log-maxsize":  "1000000",
		"audit-log-format":   "json",
		"audit-log-mode":     "blocking",
		"audit-log-compress": "false",
	}, nil
}

// auditEvent is the part of an audit.k8s.io/v1 Event the attribution reads.
type auditEvent struct {
	Stage     string `json:"stage"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
}

// auditVerbs name the audit log's verbs as apiserver_request_total does, so that the kinds
// of the attribution and of PlaneUsage read alike.
var auditVerbs = map[string]string{
	"get": "GET", "list": "LIST", "watch": "WATCH", "create": "POST", "update": "PUT",
	"patch": "PATCH", "delete": "DELETE", "deletecollection": "DELETE",
}

// requestClient says whose a request is: the controller's and the simulated Flink's by
// their users; the control plane's by its own users or its programs' user agents (they share
// the admin user with the bench); the rest is the bench's (its creates, deletes and watch).
func requestClient(username, userAgent string) string {
	switch {
	case username == controllerUser:
		return clientController
	case username == simulatedFlinkUser:
		return clientSimulatedFlink
	case strings.HasPrefix(username, "system:"),
		strings.HasPrefix(userAgent, "kube-controller-manager/"),
		strings.HasPrefix(userAgent, "kube-scheduler/"),
		strings.HasPrefix(userAgent, "kwok/"), strings.HasPrefix(userAgent, "kwok-controller/"),
		strings.HasPrefix(userAgent, "kube-apiserver/"):
		return clientControlPlane
	default:
		return clientBench
	}
}

// auditRequests are the requests of an audit log's span, counted by client and by kind
// ("VERB resource[/subresource]").
type auditRequests map[string]map[string]float64

// parseAuditLog counts the requests of an audit log (one JSON event per line): each once, a
// watch when it starts, any other when its response is complete.
func parseAuditLog(r io.Reader) (auditRequests, error) {
	out := auditRequests{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e auditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("an audit event: %w", err)
		}
		if want := "ResponseComplete"; e.Verb == "watch" {
			if e.Stage != "ResponseStarted" {
				continue
			}
		} else if e.Stage != want {
			continue
		}
		verb := auditVerbs[e.Verb]
		if verb == "" {
			verb = strings.ToUpper(e.Verb)
		}
		kind := verb
		if ref := e.ObjectRef; ref != nil && ref.Resource != "" {
			kind += " " + ref.Resource
			if ref.Subresource != "" {
				kind += "/" + ref.Subresource
			}
		} else {
			kind += " (non-resource)"
		}
		c := requestClient(e.User.Username, e.UserAgent)
		if out[c] == nil {
			out[c] = map[string]float64{}
		}
		out[c][kind]++
	}
	return out, sc.Err()
}

// auditLog reads the API server's audit log between offsets: a phase's requests are those
// written between its two snapshots.
type auditLog struct{ path string }

// offset is the end of the last complete line of the log: where the next span starts.
func (a auditLog) offset() (int64, error) {
	f, err := os.Open(a.path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	// The API server writes an event and its newline together; a snapshot may still fall
	// in the middle of one, which then belongs to the next span.
	end := st.Size()
	for end > 0 {
		start := max(0, end-64<<10)
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// between counts the requests logged from offset from to offset to.
func (a auditLog) between(from, to int64) (auditRequests, error) {
	if to <= from {
		return auditRequests{}, nil
	}
	f, err := os.Open(a.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseAuditLog(io.NewSectionReader(f, from, to-from))
}

// RequestAttribution is whose API requests a phase (or the floor) made, from the API
// server's audit log: the controller's own apart from the control plane's, the simulated
// Flink's and the bench's.
type RequestAttribution struct {
	// ControllerRequestsPerCluster is the requests of the controller's identity (every
	// replica), per cluster; ControllerRequestsByKind splits them by "VERB
	// resource[/subresource]", the kinds of at least minRequestsPerCluster each.
	ControllerRequestsPerCluster float64            `json:"controllerRequestsPerCluster"`
	ControllerRequestsByKind     map[string]float64 `json:"controllerRequestsByKind"`
	// RequestsPerClusterByClient is every client's requests per cluster: controller,
	// simulatedFlink, controlPlane (kube-controller-manager, kube-scheduler, the KWOK nodes,
	// the API server's own) and bench (the bench's creates, deletes and watch).
	RequestsPerClusterByClient map[string]float64 `json:"requestsPerClusterByClient"`
}

// attribute divides the requests by clusters; ControllerRequestsByKind keeps the kinds of at
// least threshold per cluster.
func (r auditRequests) attribute(clusters int, threshold float64) RequestAttribution {
	a := RequestAttribution{ControllerRequestsByKind: map[string]float64{}, RequestsPerClusterByClient: map[string]float64{}}
	if clusters <= 0 {
		return a
	}
	for c, kinds := range r {
		for kind, n := range kinds {
			per := n / float64(clusters)
			a.RequestsPerClusterByClient[c] += per
			if c != clientController {
				continue
			}
			a.ControllerRequestsPerCluster += per
			if per >= threshold {
				a.ControllerRequestsByKind[kind] = per
			}
		}
	}
	return a
}

// topControllerKinds are the n kinds of the controller's requests most made per cluster.
func (a RequestAttribution) topControllerKinds(n int) []string {
	return PlaneUsage{APIRequestsByKind: a.ControllerRequestsByKind}.topKinds(n)
}
