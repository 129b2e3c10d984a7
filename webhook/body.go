package webhook

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
)

// MaxRequestBytes is the admission request limit controller-runtime's admission.Webhook
// uses: two objects of at most 3 MiB each plus the review around them.
const MaxRequestBytes = 7 << 20

// DefaultBodyBytesInFlight is the default of Options.BodyBytesInFlight: room for nine
// requests of the largest size at once, or thousands of ordinary ones (a few KiB each),
// and a small part of the container's memory limit.
const DefaultBodyBytesInFlight = 64 << 20

// firstBodyBuffer is the buffer a body is first read into, the size of the connection's
// own read buffer, so that a connection that sends no body holds little. Each further
// buffer doubles, up to MaxRequestBytes, and only once the previous one is full: a client
// holds memory only for what it has sent. A typical review (10 to 20 KiB) takes three or
// four buffers; copying them costs a few microseconds, a small part of decoding the review.
const firstBodyBuffer = 4 << 10

// bodyBudgetWait is how long a request waits for budget before it is refused. Requests
// are answered in milliseconds, so a burst frees budget quickly; clients that hold it by
// sending slowly are cut off only by the server's read timeout (the API server's webhook
// timeout), which is far too long to make the API server's own request wait.
const bodyBudgetWait = time.Second

// errNoBudget is returned by readBody when the body budget has no room in time.
var errNoBudget = errors.New("no body budget")

// bodyBudget bounds the memory that request bodies hold across every connection and both
// webhooks: a request acquires budget for its read buffer before allocating it, and gives
// it back when it has been answered. A client that announces a large body and sends it
// slowly, or never, holds only what it has sent, and all such clients together at most the
// budget: further requests are refused instead of the process running out of memory.
type bodyBudget struct {
	sem  *semaphore.Weighted
	size int64
	wait time.Duration
	// inFlight is the process's gauge of bytes held (shared by every budget that records
	// into the same Metrics).
	inFlight prometheus.Gauge
}

func newBodyBudget(size int64, inFlight prometheus.Gauge) *bodyBudget {
	return &bodyBudget{sem: semaphore.NewWeighted(size), size: size, wait: bodyBudgetWait, inFlight: inFlight}
}

// acquire takes n bytes of budget, waiting at most b.wait (or until ctx ends).
func (b *bodyBudget) acquire(ctx context.Context, n int64) error {
	if !b.sem.TryAcquire(n) {
		ctx, cancel := context.WithTimeout(ctx, b.wait)
		defer cancel()
		if err := b.sem.Acquire(ctx, n); err != nil {
			return errNoBudget
		}
	}
	b.inFlight.Add(float64(n))
	return nil
}

// release gives back n bytes of budget.
func (b *bodyBudget) release(n int64) {
	if n == 0 {
		return
	}
	b.sem.Release(n)
	b.inFlight.Sub(float64(n))
}

// readBody reads a request body as it arrives, into buffers that grow only once full, each
// paid for from the budget before it is allocated. The announced Content-Length (negative
// when unknown) is trusted for one thing only: a body announced smaller than the first
// buffer is first read into a buffer one byte larger than announced, which sees the body's
// end without growing (a minimal review is half the first buffer); a longer body grows it
// as any other. It returns the body and the budget it holds, which the caller releases
// once the body is no longer used (also on error). body must enforce MaxRequestBytes
// (http.MaxBytesReader): the buffers stop growing there, and reading past it is left to
// body to refuse.
func readBody(ctx context.Context, body io.Reader, announced int64, budget *bodyBudget) ([]byte, int64, error) {
	var buf []byte
	var held int64
	var probe [1]byte
	for {
		if len(buf) == cap(buf) && cap(buf) < MaxRequestBytes {
			size := min(max(2*cap(buf), firstBodyBuffer), MaxRequestBytes)
			if buf == nil && announced >= 0 && announced < firstBodyBuffer {
				size = int(announced) + 1
			}
			if err := budget.acquire(ctx, int64(size-cap(buf))); err != nil {
				return nil, held, err
			}
			held = int64(size)
			grown := make([]byte, len(buf), size)
			copy(grown, buf)
			buf = grown
		}
		free := buf[len(buf):cap(buf)]
		if len(free) == 0 {
			// The buffer is at the limit: only the end of the body or body's refusal of
			// a longer one may follow.
			free = probe[:]
		}
		n, err := body.Read(free)
		if n > 0 && len(buf) == cap(buf) {
			return nil, held, errors.New("the body reader let more than the limit through")
		}
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, held, nil
		}
		if err != nil {
			return nil, held, err
		}
	}
}
