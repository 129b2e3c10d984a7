package bench

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/json"

	"github.com/flink-admission/flink-admission/hack/bench/loadgen"
	"github.com/flink-admission/flink-admission/internal/test/benchdata"
	"github.com/flink-admission/flink-admission/webhook"
)

// Review is an admission review body and the webhook path it is sent to.
type Review struct {
	// Name is the body's name (typical-validate-update).
	Name string
	// Path is the webhook's URL path.
	Path string
	// Body is the AdmissionReview JSON.
	Body []byte
}

// HTTPSReviews returns the reviews the HTTPS runs send: the typical validate UPDATE (the
// write path of every change) and the typical mutate CREATE, from package benchdata (the
// bodies the in-process benchmarks measure).
func HTTPSReviews() ([]Review, error) {
	var out []Review
	for _, name := range []string{"typical-validate-update", "typical-mutate-create"} {
		r, err := benchdata.Find(name)
		if err != nil {
			return nil, err
		}
		path := webhook.ValidatePath
		if r.Mutate {
			path = webhook.MutatePath
		}
		out = append(out, Review{Name: name, Path: path, Body: r.Body})
	}
	return out, nil
}

// CheckAllowed accepts an AdmissionReview answer that allows the request: a benchmark of
// denials would measure another path than the one the API server takes on a valid write.
func CheckAllowed(body []byte) error {
	var review admissionv1.AdmissionReview
	if err := json.UnmarshalCaseSensitivePreserveInts(body, &review); err != nil {
		return fmt.Errorf("the answer is not an AdmissionReview: %w", err)
	}
	switch {
	case review.Response == nil:
		return errors.New("the AdmissionReview has no response")
	case !review.Response.Allowed:
		msg := ""
		if review.Response.Result != nil {
			msg = review.Response.Result.Message
		}
		return fmt.Errorf("the review was denied: %s", msg)
	}
	return nil
}

// HTTPSOptions configure RunHTTPS.
type HTTPSOptions struct {
	// BaseURL is the server (https://127.0.0.1:<port>); TLS trusts its certificate.
	BaseURL string
	TLS     *tls.Config
	// Reviews are sent one after the other; each at every level of Concurrency.
	Reviews     []Review
	Concurrency []int
	// Requests maps a concurrency to the number of requests measured at it; Warmup requests
	// are sent first at each level and not measured (new connections, TLS handshakes).
	Requests map[int]int
	Warmup   int
	// MaxDuration bounds each measured run (0: none).
	MaxDuration time.Duration
	// Progress receives one line per run.
	Progress io.Writer
}

// RunHTTPS measures every review at every concurrency over TLS with keep-alive.
func RunHTTPS(ctx context.Context, o HTTPSOptions) ([]HTTPSRun, error) {
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	var out []HTTPSRun
	for _, r := range o.Reviews {
		for _, c := range o.Concurrency {
			base := loadgen.Options{
				URL: o.BaseURL + r.Path, TLS: o.TLS, Body: r.Body, Concurrency: c, Check: CheckAllowed,
			}
			if o.Warmup > 0 {
				warm := base
				warm.Requests = max(o.Warmup, c)
				if _, err := loadgen.Run(ctx, warm); err != nil {
					return out, err
				}
			}
			run := base
			run.Requests, run.MaxDuration = o.Requests[c], o.MaxDuration
			if run.Requests == 0 {
				run.Requests = 100 * c
			}
			res, err := loadgen.Run(ctx, run)
			if err != nil {
				return out, err
			}
			fmt.Fprintf(progress, "https %s c=%d: %s\n", r.Name, c, res)
			out = append(out, httpsRun(r, c, res))
		}
	}
	return out, nil
}

func httpsRun(r Review, c int, res loadgen.Result) HTTPSRun {
	run := HTTPSRun{
		Review: r.Name, Path: r.Path, Concurrency: c, Requests: res.Requests, Incomplete: res.Incomplete,
		ReqPerSec: res.RequestsPerSecond,
		P50Ms:     ms(res.P50), P99Ms: ms(res.P99), P999Ms: ms(res.P999), MaxMs: ms(res.Max),
		Errors: map[string]int{}, Status: res.Status,
		Reference: referenceHTTPSFor(r.Name, c),
	}
	for k, n := range res.Errors {
		run.Errors[string(k)] = n
	}
	if len(res.ErrorSamples) > 0 {
		run.ErrorSamples = map[string]string{}
		for k, s := range res.ErrorSamples {
			run.ErrorSamples[string(k)] = s
		}
	}
	return run
}

// ms converts a duration to float milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
