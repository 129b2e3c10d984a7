package flinksim

import (
	"sync"

	"github.com/flink-admission/flink-admission/internal/test/fakeflink"
)

// maxTicks bounds the clusters whose timers run at once.
const maxTicks = 16

// timers runs the timers of the driven fake clusters (fakeflink.Options.Driven) the
// Simulator attached to pods, as Flink's own threads run them: each round, every cluster
// whose NextTick is due ticks, off the loop (a tick reads and writes HA ConfigMaps), at most
// maxTicks at once and one at a time per cluster. So a leader renews its lease once a retry
// period and a checkpoint lands in the HA store when it completes, whether or not anything
// calls the REST API, and a REST answer reads no HA ConfigMap.
type timers struct {
	sem  chan struct{}
	mu   sync.Mutex
	seen map[*fakeflink.Cluster]bool
	busy map[*fakeflink.Cluster]bool
}

func newTimers() *timers {
	return &timers{sem: make(chan struct{}, maxTicks), seen: map[*fakeflink.Cluster]bool{}, busy: map[*fakeflink.Cluster]bool{}}
}

// add makes the Simulator drive c's timers from now on, if c is driven. A cluster stays
// driven after its pods are gone: the process of a force-deleted pod runs on.
func (t *timers) add(c *fakeflink.Cluster) {
	if c == nil || !c.Driven() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen[c] = true
}

// fire ticks every cluster whose next timer is due on its own clock.
func (t *timers) fire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.seen {
		if t.busy[c] {
			continue
		}
		next := c.NextTick()
		if next.IsZero() || c.Clock().Now().Before(next) {
			continue
		}
		t.busy[c] = true
		go func() {
			t.sem <- struct{}{}
			c.Tick()
			<-t.sem
			t.mu.Lock()
			delete(t.busy, c)
			t.mu.Unlock()
		}()
	}
}
