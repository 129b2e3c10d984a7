package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

func init() {
	// Without a logger controller-runtime complains after 30 s, in the middle of benchmark
	// output; the refusals the tests provoke are logged, and need not be shown.
	logf.SetLogger(logr.Discard())
}

// testMetrics are the metrics testHandlers record, on a registry of their own.
var testMetrics = func() *Metrics {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		panic(err)
	}
	return m
}()

// testHandlers are the handlers the tests post to.
var testHandlers = func() *Handlers {
	h, err := NewHandlers(Options{Metrics: testMetrics})
	if err != nil {
		panic(err)
	}
	return h
}()

// obj is a FlinkCluster as JSON-shaped maps, so that tests can also build objects the Go
// types cannot express (wrong types, unknown fields).
type obj = map[string]any

// jobCluster returns a valid job cluster (the reference operator's sample, plus a
// savepointsDir so that updates of the job are allowed).
func jobCluster() obj {
	return obj{
		"apiVersion": "flinkoperator.k8s.io/v1beta1",
		"kind":       "FlinkCluster",
		"metadata":   obj{"name": "wordcount", "namespace": "default"},
		"spec": obj{
			"flinkVersion":    "1.14",
			"image":           obj{"name": "flink:1.14.2"},
			"flinkProperties": obj{"taskmanager.numberOfTaskSlots": "1"},
			"job": obj{
				"args":          []any{"--input", "./README.txt"},
				"className":     "org.apache.flink.streaming.examples.wordcount.WordCount",
				"jarFile":       "./examples/streaming/WordCount.jar",
				"parallelism":   int64(2),
				"restartPolicy": "Never",
				"savepointsDir": "/savepoints/wordcount",
			},
			"jobManager": obj{
				"accessScope":      "Cluster",
				"memoryOffHeapMin": "0",
				"ports":            obj{"ui": int64(8081)},
				"resources":        obj{"limits": obj{"cpu": "500m", "memory": "2Gi"}},
			},
			"taskManager": obj{
				"memoryOffHeapMin": "0",
				"replicas":         int64(2),
				"resources":        obj{"limits": obj{"cpu": "500m", "memory": "2Gi"}},
			},
		},
	}
}

// deploymentCluster returns a valid application cluster with a Deployment JobManager:
// application mode and Flink high availability, as the Deployment rules require.
func deploymentCluster() obj {
	o := jobCluster()
	set(o, "spec.jobManager.deploymentType", "Deployment")
	set(o, "spec.job.mode", "Application")
	set(o, "spec.flinkProperties.high-availability\\.type", "kubernetes")
	set(o, "spec.flinkProperties.high-availability\\.storageDir", "s3://bucket/ha")
	return o
}

// set sets a dotted path of o ("\\." escapes a dot inside a key), creating maps on the way.
func set(o obj, path string, v any) obj {
	keys := splitPath(path)
	m := o
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(obj)
		if !ok {
			next = obj{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
	return o
}

// del deletes a dotted path of o.
func del(o obj, path string) obj {
	keys := splitPath(path)
	m := o
	for _, k := range keys[:len(keys)-1] {
		m = m[k].(obj)
	}
	delete(m, keys[len(keys)-1])
	return o
}

func splitPath(path string) []string {
	parts := strings.Split(strings.ReplaceAll(path, "\\.", "\x00"), ".")
	for i := range parts {
		parts[i] = strings.ReplaceAll(parts[i], "\x00", ".")
	}
	return parts
}

// request returns an admission request for a FlinkCluster as the API server sends it.
func request(op admissionv1.Operation, object, old obj) *admissionv1.AdmissionRequest {
	gvk := metav1.GroupVersionKind{Group: "flinkoperator.k8s.io", Version: "v1beta1", Kind: "FlinkCluster"}
	gvr := metav1.GroupVersionResource{Group: "flinkoperator.k8s.io", Version: "v1beta1", Resource: "flinkclusters"}
	req := &admissionv1.AdmissionRequest{
		UID:             types.UID("0d7a5d2e-0c52-4b8e-9a1a-" + strings.ToLower(string(op)) + "00000000"),
		Kind:            gvk,
		Resource:        gvr,
		RequestKind:     &gvk,
		RequestResource: &gvr,
		Name:            "wordcount",
		Namespace:       "default",
		Operation:       op,
		DryRun:          new(bool),
	}
	if object != nil {
		req.Object.Raw = mustJSON(object)
	}
	if old != nil {
		req.OldObject.Raw = mustJSON(old)
	}
	return req
}

// reviewBody encodes req as an AdmissionReview v1 request body.
func reviewBody(req *admissionv1.AdmissionRequest) []byte {
	return mustJSON(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// answer is one HTTP answer of a webhook.
type answer struct {
	code        int
	contentType string
	header      http.Header
	body        []byte
	// review is the decoded body; nil when the body is not an AdmissionReview.
	review *admissionv1.AdmissionReview
}

// response returns the review's response, failing the test when there is none.
func (a *answer) response(t *testing.T) *admissionv1.AdmissionResponse {
	t.Helper()
	if a.review == nil || a.review.Response == nil {
		t.Fatalf("answer %d is not an AdmissionReview with a response: %s", a.code, a.body)
	}
	return a.review.Response
}

// post sends body to h through an in-process HTTP server, the way the API server does.
func post(t testing.TB, h http.Handler, body []byte) *answer {
	t.Helper()
	return do(t, h, http.MethodPost, "application/json", body)
}

func do(t testing.TB, h http.Handler, method, contentType string, body []byte) *answer {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequest(method, srv.URL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return roundTrip(t, srv.Client(), req)
}

func roundTrip(t testing.TB, c *http.Client, req *http.Request) *answer {
	t.Helper()
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(res.Body); err != nil {
		t.Fatal(err)
	}
	a := &answer{code: res.StatusCode, contentType: res.Header.Get("Content-Type"), header: res.Header, body: buf.Bytes()}
	review := &admissionv1.AdmissionReview{}
	if json.Unmarshal(a.body, review) == nil {
		a.review = review
	}
	return a
}

// causes returns the "field: type" pairs of a denial's status causes, sorted.
func causes(resp *admissionv1.AdmissionResponse) []string {
	if resp.Result == nil || resp.Result.Details == nil {
		return nil
	}
	var out []string
	for _, c := range resp.Result.Details.Causes {
		out = append(out, c.Field+": "+string(c.Type))
	}
	sort.Strings(out)
	return out
}

// errorList builds field errors from "field type detail" strings (type: Invalid, Required,
// Forbidden).
func errorList(specs []string) field.ErrorList {
	var errs field.ErrorList
	for _, s := range specs {
		parts := strings.SplitN(s, " ", 3)
		e := &field.Error{Field: parts[0], Detail: parts[2]}
		switch parts[1] {
		case "Invalid":
			e.Type = field.ErrorTypeInvalid
		case "Required":
			e.Type = field.ErrorTypeRequired
		case "Forbidden":
			e.Type = field.ErrorTypeForbidden
		default:
			panic("unknown error type " + parts[1])
		}
		errs = append(errs, e)
	}
	return errs
}

// typeName is the inverse of errorList's type names.
func typeName(t field.ErrorType) string {
	return strings.TrimPrefix(strings.TrimPrefix(string(t), "FieldValue"), "")
}
