package bench

import (
	"bytes"
	"fmt"
	"net/url"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// WebhookCalls says where the time the webhooks add to a write goes, from the metrics of
// both servers after scenario (c): the API server's measure of each call, its HTTP client's
// round trip, and the webhook server's handler. What the API server measures beyond the
// round trip is its own work (encoding the review, decoding the answer, applying the
// patch); what the round trip measures beyond the handler is the transport (TLS, loopback,
// waking both processes up).
type WebhookCalls struct {
	// Calls is the number of calls of both webhooks.
	Calls uint64 `json:"calls"`
	// AdmissionMeanMs is, per webhook name, the API server's mean time per call
	// (apiserver_admission_webhook_admission_duration_seconds).
	AdmissionMeanMs map[string]float64 `json:"admissionMeanMs"`
	// RoundTripMeanMs is the mean time of the API server's HTTP client from sending a
	// review to reading its answer (rest_client_request_duration_seconds of the webhook's
	// host), both webhooks together.
	RoundTripMeanMs float64 `json:"roundTripMeanMs"`
	// RequestBytesMean is the mean size of a review the API server sent.
	RequestBytesMean float64 `json:"requestBytesMean"`
	// HandlerMeanMs is, per webhook (mutate, validate), the webhook server's mean time from
	// the request to the encoded answer (flink_admission_webhook_request_duration_seconds).
	HandlerMeanMs map[string]float64 `json:"handlerMeanMs"`
}

// ReadWebhookCalls reads WebhookCalls from the API server's /metrics page and the webhook
// server's, read before (serveBefore, nil for none) and after the writes of (c): the
// webhook server may have served other requests before (the HTTPS runs), whose time must
// not count. webhookURL is the base URL the API server calls.
func ReadWebhookCalls(apiserverMetrics, serveBefore, serveMetrics []byte, webhookURL string) (*WebhookCalls, error) {
	u, err := url.Parse(webhookURL)
	if err != nil {
		return nil, err
	}
	api, err := parseMetrics(apiserverMetrics)
	if err != nil {
		return nil, fmt.Errorf("the API server's metrics: %w", err)
	}
	srv, err := parseMetrics(serveMetrics)
	if err != nil {
		return nil, fmt.Errorf("the webhook server's metrics: %w", err)
	}
	before, err := parseMetrics(serveBefore)
	if err != nil {
		return nil, fmt.Errorf("the webhook server's metrics: %w", err)
	}
	const handler = "flink_admission_webhook_request_duration_seconds"
	w := &WebhookCalls{
		AdmissionMeanMs: meansBy(api["apiserver_admission_webhook_admission_duration_seconds"], nil, "name", nil),
		HandlerMeanMs:   meansBy(srv[handler], before[handler], "webhook", nil),
	}
	hostPOST := map[string]string{"host": u.Host, "verb": "POST"}
	if rt := meansBy(api["rest_client_request_duration_seconds"], nil, "host", hostPOST); len(rt) > 0 {
		w.RoundTripMeanMs = rt[u.Host]
	}
	for _, m := range api["rest_client_request_size_bytes"].GetMetric() {
		if hasLabels(m, hostPOST) && m.GetHistogram().GetSampleCount() > 0 {
			w.Calls = m.GetHistogram().GetSampleCount()
			w.RequestBytesMean = m.GetHistogram().GetSampleSum() / float64(w.Calls)
		}
	}
	if w.Calls == 0 || len(w.AdmissionMeanMs) == 0 || len(w.HandlerMeanMs) == 0 {
		return nil, fmt.Errorf("no webhook call of the API server to %s in the metrics", u.Host)
	}
	return w, nil
}

func parseMetrics(raw []byte) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(bytes.NewReader(raw))
}

// meansBy returns the mean of the histogram f's samples in milliseconds, by the value of
// label, over the series carrying every pair of filter, without the samples already in
// before (the same histogram read earlier, or nil).
func meansBy(f, before *dto.MetricFamily, label string, filter map[string]string) map[string]float64 {
	sums, counts := map[string]float64{}, map[string]int64{}
	add := func(f *dto.MetricFamily, sign int64) {
		for _, m := range f.GetMetric() {
			if !hasLabels(m, filter) {
				continue
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					sums[l.GetValue()] += float64(sign) * m.GetHistogram().GetSampleSum()
					counts[l.GetValue()] += sign * int64(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	add(f, 1)
	add(before, -1)
	out := map[string]float64{}
	for k, n := range counts {
		if n > 0 {
			out[k] = sums[k] / float64(n) * 1000
		}
	}
	return out
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
