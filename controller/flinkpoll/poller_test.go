package flinkpoll

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

var (
	key   = types.NamespacedName{Namespace: "ns", Name: "wc"}
	start = time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	errNo = errors.New("connection refused")
)

func newPoller(t *testing.T, workers int) (*Poller[string], *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(start)
	p := New(Options{Workers: workers, Timeout: time.Minute, Clock: clk}, func(a, b string) bool { return a == b })
	t.Cleanup(p.queue.ShutDown)
	return p, clk
}

// answers is a Read that returns its answers in turn, the last one for ever.
func answers(vs ...any) Read[string] {
	var n atomic.Int32
	return func(context.Context) (string, error) {
		i := min(int(n.Add(1))-1, len(vs)-1)
		if err, ok := vs[i].(error); ok {
			return "", err
		}
		return vs[i].(string), nil
	}
}

// TestPollReportsOnlyAChangedReading guards what hands a cluster back to the controller: a
// first reading, a different answer, an answer after a failure and a failure after an
// answer; never the same answer again or a second failure.
func TestPollReportsOnlyAChangedReading(t *testing.T) {
	for name, tc := range map[string]struct {
		reads []any
		want  []bool
	}{
		"the first reading":                  {[]any{"RUNNING"}, []bool{true}},
		"the same answer again":              {[]any{"RUNNING", "RUNNING", "RUNNING"}, []bool{true, false, false}},
		"a different answer":                 {[]any{"RUNNING", "FAILING"}, []bool{true, true}},
		"a failure after an answer":          {[]any{"RUNNING", errNo}, []bool{true, true}},
		"an answer after a failure":          {[]any{errNo, "RUNNING"}, []bool{true, true}},
		"a second failure":                   {[]any{errNo, errNo, errors.New("timeout")}, []bool{true, false, false}},
		"the answer before a failure, again": {[]any{"RUNNING", errNo, "RUNNING"}, []bool{true, true, true}},
	} {
		t.Run(name, func(t *testing.T) {
			p, _ := newPoller(t, 1)
			p.Track(key, "job@pod", time.Second, answers(tc.reads...))
			var got []bool
			for range tc.reads {
				got = append(got, p.poll(t.Context(), key))
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestRecordedReadingIsNoChange guards the reconcile's own read, which comes before the
// cluster is tracked: the poll after it reports nothing new when Flink still says the same,
// and a reading of another JobManager replaces what was tracked.
func TestRecordedReadingIsNoChange(t *testing.T) {
	p, _ := newPoller(t, 1)
	p.Record(key, "job@pod", "RUNNING", true)
	assert.False(t, p.poll(t.Context(), key), "recorded, not tracked: nothing to poll")
	p.Track(key, "job@pod", time.Second, answers("RUNNING", "FINISHED"))
	assert.False(t, p.poll(t.Context(), key), "the reconcile saw RUNNING already")
	assert.True(t, p.poll(t.Context(), key), "FINISHED is new")

	p.Record(key, "job@newpod", "RUNNING", true)
	_, ok := p.Latest(key, "job@pod")
	assert.False(t, ok, "the old JobManager's reading is gone")
	assert.False(t, p.poll(t.Context(), key), "the new JobManager is polled once tracked")
}

// TestLatestServesOnlyAFreshAnswerOfTheSameTarget guards what a reconcile may take instead
// of asking Flink: an answer, not a failure; of the JobManager and job it asks about; no
// older than the cluster's poll interval.
func TestLatestServesOnlyAFreshAnswerOfTheSameTarget(t *testing.T) {
	p, clk := newPoller(t, 1)
	_, ok := p.Latest(key, "job@pod")
	assert.False(t, ok, "not tracked")

	p.Track(key, "job@pod", 10*time.Second, answers("RUNNING", errNo))
	_, ok = p.Latest(key, "job@pod")
	assert.False(t, ok, "tracked, not read yet")

	p.poll(t.Context(), key)
	v, ok := p.Latest(key, "job@pod")
	assert.True(t, ok)
	assert.Equal(t, "RUNNING", v)
	_, ok = p.Latest(key, "job@newpod")
	assert.False(t, ok, "another JobManager's reading")

	clk.Step(10 * time.Second)
	_, ok = p.Latest(key, "job@pod")
	assert.True(t, ok, "one interval old")
	clk.Step(time.Millisecond)
	_, ok = p.Latest(key, "job@pod")
	assert.False(t, ok, "older than the interval")

	p.poll(t.Context(), key)
	_, ok = p.Latest(key, "job@pod")
	assert.False(t, ok, "a failed read")
}

// TestForgottenOrRetargetedClusterIsNotPolled guards the end of tracking: a forgotten
// cluster is not read again, a cluster retargeted while it is read drops that reading, and
// Retain forgets the clusters it does not keep.
func TestForgottenOrRetargetedClusterIsNotPolled(t *testing.T) {
	p, _ := newPoller(t, 1)
	var reads atomic.Int32
	count := func(context.Context) (string, error) { reads.Add(1); return "RUNNING", nil }

	p.Track(key, "job@pod", time.Second, count)
	p.Forget(key)
	assert.False(t, p.poll(t.Context(), key))
	assert.Zero(t, reads.Load(), "a forgotten cluster is not read")

	retarget := func(context.Context) (string, error) {
		p.Track(key, "job@newpod", time.Second, count)
		return "RUNNING", nil
	}
	p.Track(key, "job@pod", time.Second, retarget)
	assert.False(t, p.poll(t.Context(), key), "the reading of the old target is dropped")
	_, ok := p.Latest(key, "job@newpod")
	assert.False(t, ok)

	other := types.NamespacedName{Namespace: "ns", Name: "other"}
	p.Track(other, "job@pod", time.Second, count)
	p.Retain(func(k types.NamespacedName) bool { return k == other })
	assert.Equal(t, 1, p.Tracked())
	assert.False(t, p.poll(t.Context(), key))
}

// TestReadIsBoundedByTheTimeout guards a JobManager that accepts the connection and never
// answers: the read is cut at the timeout and counts as a failure.
func TestReadIsBoundedByTheTimeout(t *testing.T) {
	p := New(Options{Workers: 1, Timeout: 10 * time.Millisecond}, func(a, b string) bool { return a == b })
	t.Cleanup(p.queue.ShutDown)
	hang := func(ctx context.Context) (string, error) { <-ctx.Done(); return "", ctx.Err() }
	p.Track(key, "job@pod", time.Minute, answers("RUNNING"))
	p.poll(t.Context(), key)
	p.Track(key, "job@pod", time.Minute, hang)
	assert.True(t, p.poll(t.Context(), key), "the cut read is a failure after an answer")
	_, ok := p.Latest(key, "job@pod")
	assert.False(t, ok)
}

// TestRunPollsAtTheCadenceWithBoundedWorkers runs the pool: every tracked cluster is read
// once per interval as the clock passes it, never more reads at once than workers, and each
// change is handed back.
func TestRunPollsAtTheCadenceWithBoundedWorkers(t *testing.T) {
	const workers, clusters = 2, 6
	p, clk := newPoller(t, workers)
	var (
		mu              sync.Mutex
		inFlight, most  int
		changed         = make(chan types.NamespacedName, clusters)
		release         = make(chan struct{})
		keys            []types.NamespacedName
		readsPerCluster sync.Map
	)
	read := func(k types.NamespacedName) Read[string] {
		return func(ctx context.Context) (string, error) {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			mu.Unlock()
			<-release
			mu.Lock()
			inFlight--
			mu.Unlock()
			n, _ := readsPerCluster.LoadOrStore(k, new(atomic.Int32))
			return string(rune('0' + n.(*atomic.Int32).Add(1))), nil
		}
	}
	for i := range clusters {
		k := types.NamespacedName{Namespace: "ns", Name: string(rune('a' + i))}
		keys = append(keys, k)
		p.Track(k, "job@pod", 10*time.Second, read(k))
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { p.Run(ctx, func(k types.NamespacedName) { changed <- k }); close(done) }()

	for round := range 2 {
		require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond, "the queue waits for the next poll")
		clk.Step(10 * time.Second)
		got := map[types.NamespacedName]bool{}
		for range clusters {
			release <- struct{}{}
			got[<-changed] = true
		}
		assert.Len(t, got, clusters, "round %d: every cluster read once, its new reading handed back", round)
	}
	cancel()
	close(release)
	<-done
	assert.LessOrEqual(t, most, workers, "never more reads at once than workers")
	for _, k := range keys {
		n, _ := readsPerCluster.Load(k)
		assert.Equal(t, int32(2), n.(*atomic.Int32).Load(), "%s: one read per interval", k)
	}
}
