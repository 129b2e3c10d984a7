// Package flinkpoll reads each cluster's Flink REST API off the reconcile workers, at the
// cadence its last reconcile chose, and hands the cluster back when the reading changes. It only
// reads: every decision and every call that acts stays in the reconcile.
package flinkpoll

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// Read reads a cluster's Flink REST API once. It must return when ctx ends.
type Read[V any] func(ctx context.Context) (V, error)

// Options configure a Poller.
type Options struct {
	// Workers is how many reads run at once (at least 1).
	Workers int
	// Timeout bounds one read.
	Timeout time.Duration
	// Clock times the readings and the cadence; nil is the real clock.
	Clock clock.WithTicker
}

// Poller polls the clusters it tracks. Its methods are safe for concurrent use.
type Poller[V any] struct {
	opts  Options
	equal func(a, b V) bool
	queue workqueue.TypedDelayingInterface[types.NamespacedName]

	mu      sync.Mutex
	tracked map[types.NamespacedName]*entry[V]
}

// entry is one tracked cluster.
type entry[V any] struct {
	// target names what read reads (a JobManager and a job): a reading of another target
	// is never served or compared.
	target string
	read   Read[V]
	every  time.Duration
	last   *reading[V]
}

// reading is one answer, or the failure to get one.
type reading[V any] struct {
	value V
	ok    bool
	at    time.Time
}

// New returns a poller whose readings are compared with equal. Run starts it.
func New[V any](o Options, equal func(a, b V) bool) *Poller[V] {
	if o.Workers < 1 {
		o.Workers = 1
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Poller[V]{
		opts:  o,
		equal: equal,
		queue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[types.NamespacedName]{
			Name: "flink-poll", Clock: o.Clock,
		}),
		tracked: map[types.NamespacedName]*entry[V]{},
	}
}

// Track polls key's target with read every interval from now on, in place of what it polled
// before. A reading of the same target is kept, so that the next poll compares with it; a
// shorter interval takes effect at once, a longer one after the poll already due.
func (p *Poller[V]) Track(key types.NamespacedName, target string, every time.Duration, read Read[V]) {
	p.mu.Lock()
	e := p.tracked[key]
	if e == nil || e.target != target {
		e = &entry[V]{target: target}
		p.tracked[key] = e
	}
	e.read, e.every = read, every
	p.mu.Unlock()
	p.queue.AddAfter(key, every)
}

// Forget stops polling key and drops its reading.
func (p *Poller[V]) Forget(key types.NamespacedName) {
	p.mu.Lock()
	delete(p.tracked, key)
	p.mu.Unlock()
}

// Retain forgets the tracked clusters keep rejects (those another replica took over).
func (p *Poller[V]) Retain(keep func(types.NamespacedName) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key := range p.tracked {
		if !keep(key) {
			delete(p.tracked, key)
		}
	}
}

// Tracked is how many clusters the poller polls.
func (p *Poller[V]) Tracked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tracked)
}

// Every is the interval key is polled at; 0 when it is not tracked.
func (p *Poller[V]) Every(key types.NamespacedName) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.tracked[key]; e != nil {
		return e.every
	}
	return 0
}

// Latest is key's newest answer from target, when it is one (not a failed read) and no older
// than the interval key is polled at: as fresh as the cadence promises.
func (p *Poller[V]) Latest(key types.NamespacedName, target string) (V, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var zero V
	e := p.tracked[key]
	if e == nil || e.target != target || e.last == nil || !e.last.ok {
		return zero, false
	}
	if p.opts.Clock.Since(e.last.at) > e.every {
		return zero, false
	}
	return e.last.value, true
}

// Record keeps a reading the reconcile took itself (ok false for a failed read), so that the next
// poll does not report what it saw as a change. A reading of another target replaces the tracked
// one; the cluster is polled once Track says how.
func (p *Poller[V]) Record(key types.NamespacedName, target string, v V, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.tracked[key]
	if e == nil || e.target != target {
		e = &entry[V]{target: target}
		p.tracked[key] = e
	}
	e.last = &reading[V]{value: v, ok: ok, at: p.opts.Clock.Now()}
}

// Run polls until ctx ends, calling changed with each cluster whose reading differs from the one
// before; two failures in a row are no change (their wording may differ).
func (p *Poller[V]) Run(ctx context.Context, changed func(types.NamespacedName)) {
	var wg sync.WaitGroup
	for range p.opts.Workers {
		wg.Go(func() {
			for {
				key, shutdown := p.queue.Get()
				if shutdown {
					return
				}
				if p.poll(ctx, key) {
					changed(key)
				}
				p.queue.Done(key)
			}
		})
	}
	<-ctx.Done()
	p.queue.ShutDown()
	wg.Wait()
}

// poll reads key once if still tracked, keeps the reading, schedules the next poll and reports a
// change.
func (p *Poller[V]) poll(ctx context.Context, key types.NamespacedName) bool {
	p.mu.Lock()
	e := p.tracked[key]
	if e == nil || e.read == nil {
		p.mu.Unlock()
		return false
	}
	read := e.read
	p.mu.Unlock()

	rctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	v, err := read(rctx)
	cancel()
	if ctx.Err() != nil {
		return false
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tracked[key] != e {
		// Forgotten or retargeted while it was read: this reading is of nothing tracked.
		return false
	}
	prev := e.last
	e.last = &reading[V]{value: v, ok: err == nil, at: p.opts.Clock.Now()}
	p.queue.AddAfter(key, e.every)
	switch {
	case prev == nil:
		return true
	case prev.ok != e.last.ok:
		return true
	default:
		return e.last.ok && !p.equal(prev.value, v)
	}
}
