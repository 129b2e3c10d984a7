package shard_test

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller/shard"
)

// TestNoTwoMembersActOnOneKey checks the package's theorem on simulated runs: members with
// clocks drifting at the bound the proof allows (2εD = m), partitions, pauses of any length,
// crashes that leave the Lease behind, slow requests and a member that joins late. Each
// member runs the rules through State on its own clock; a Begin on a key at real time t
// lets the member send requests until its deadline, which land up to m later (A2). No two
// members' such windows may overlap on one key.
func TestNoTwoMembersActOnOneKey(t *testing.T) {
	for _, timing := range []shard.Timing{
		shard.DefaultTiming,
		// A lease long beside the margin: a renewal's round trip must be bounded.
		{LeaseDuration: 24 * time.Second, RenewPeriod: 3 * time.Second, Margin: 3 * time.Second},
	} {
		t.Run(fmt.Sprintf("D=%s m=%s", timing.LeaseDuration, timing.Margin), func(t *testing.T) { checkFence(t, timing) })
	}
}

func checkFence(t *testing.T, timing shard.Timing) {
	const (
		seeds = 60
		tick  = 50 * time.Millisecond
		span  = 90 * time.Second
	)
	eps := float64(timing.Margin) / float64(2*timing.LeaseDuration)
	ks := keys(16)
	handovers := 0
	for seed := range seeds {
		w := newWorld(uint64(seed), eps, timing)
		owner := map[string]string{}
		until := map[string]map[string]time.Duration{} // key → member → real end of its window
		for now := time.Duration(0); now < span; now += tick {
			w.advance(now)
			for _, m := range w.members {
				if !m.running(now) {
					continue
				}
				v := m.st.View(m.local(now))
				for _, k := range ks {
					if !v.Owns(k) {
						continue
					}
					for other, end := range until[k] {
						require.Falsef(t, other != m.name && end >= now,
							"seed %d: %s acts on %s at %s while %s may until %s", seed, m.name, k, now, other, end)
					}
					if until[k] == nil {
						until[k] = map[string]time.Duration{}
					}
					until[k][m.name] = m.real(m.st.Until()) + timing.Margin
					if owner[k] != "" && owner[k] != m.name {
						handovers++
					}
					owner[k] = m.name
				}
			}
		}
	}
	require.Greater(t, handovers, seeds, "the runs hand clusters over")
}

// world is the API server's Leases and the members, on real time.
type world struct {
	timing  shard.Timing
	rnd     *rand.Rand
	version int
	leases  map[string]string
	members []*member
	events  []event
}

type event struct {
	at time.Duration
	do func(now time.Duration)
}

// member is one replica: its clock, its faults and its State.
type member struct {
	name               string
	rate               float64
	start, crash       time.Duration
	pauses, partitions [][2]time.Duration
	st                 *shard.State
	nextRound          time.Duration
	busy               bool
}

func (m *member) local(real time.Duration) time.Time {
	return t0.Add(time.Duration(float64(real) * m.rate))
}

func (m *member) real(local time.Time) time.Duration {
	return time.Duration(float64(local.Sub(t0)) / m.rate)
}

func in(spans [][2]time.Duration, t time.Duration) (time.Duration, bool) {
	for _, s := range spans {
		if t >= s[0] && t < s[1] {
			return s[1], true
		}
	}
	return 0, false
}

// running reports whether the member's process runs at real time t (started, not crashed,
// not paused).
func (m *member) running(t time.Duration) bool {
	_, paused := in(m.pauses, t)
	return t >= m.start && (m.crash == 0 || t < m.crash) && !paused
}

func newWorld(seed uint64, eps float64, timing shard.Timing) *world {
	w := &world{timing: timing, rnd: rand.New(rand.NewPCG(seed, 7)), leases: map[string]string{}}
	sec := func(lo, hi float64) time.Duration {
		return time.Duration((lo + w.rnd.Float64()*(hi-lo)) * float64(time.Second))
	}
	faults := func() [][2]time.Duration {
		var spans [][2]time.Duration
		for range w.rnd.IntN(3) {
			from := sec(5, 80)
			spans = append(spans, [2]time.Duration{from, from + sec(0.5, 30)})
		}
		return spans
	}
	for i, name := range []string{"a", "b", "c", "d"} {
		m := &member{name: name, rate: 1 + eps*(2*w.rnd.Float64()-1), start: sec(0, 3),
			pauses: faults(), partitions: faults(), st: shard.NewState(name, w.timing)}
		switch {
		case i == 3:
			m.start = sec(10, 60) // joins late
		case w.rnd.IntN(3) == 0:
			m.crash = sec(10, 80) // killed: its Lease stays
		}
		m.nextRound = m.start
		w.members = append(w.members, m)
	}
	return w
}

// delay is a request's delay: mostly short, sometimes longer than the margin, rarely longer
// than a lease duration (a request stuck in a queue).
func (w *world) delay() time.Duration {
	switch w.rnd.IntN(50) {
	case 0:
		return time.Duration(w.rnd.Float64() * float64(2*w.timing.LeaseDuration))
	case 1, 2, 3, 4:
		return time.Duration(w.rnd.Float64() * float64(2*w.timing.Margin))
	}
	return time.Duration(w.rnd.Float64() * float64(200*time.Millisecond))
}

func (w *world) schedule(at time.Duration, do func(time.Duration)) {
	w.events = append(w.events, event{at: at, do: do})
	sort.SliceStable(w.events, func(i, j int) bool { return w.events[i].at < w.events[j].at })
}

// advance runs the rounds and the request steps due by now. A step due while its member is
// paused runs when the pause ends: the process reads its clock only then.
func (w *world) advance(now time.Duration) {
	for _, m := range w.members {
		if !m.busy && m.nextRound <= now && m.running(now) {
			m.busy = true
			m.nextRound = m.real(m.local(now).Add(w.timing.RenewPeriod))
			w.round(m, now)
		}
	}
	for len(w.events) > 0 && w.events[0].at <= now {
		e := w.events[0]
		w.events = w.events[1:]
		e.do(e.at)
	}
}

// after runs do at real time at, or when the member next runs, if it still lives then.
func (w *world) after(m *member, at time.Duration, do func(now time.Duration)) {
	w.schedule(at, func(now time.Duration) {
		if m.crash != 0 && now >= m.crash {
			return
		}
		if end, paused := in(m.pauses, now); paused {
			w.after(m, end, do)
			return
		}
		do(now)
	})
}

// round is a renewal, then a list; requests fail while the member is partitioned (at the
// request's sending) and are answered after a timeout of 2m.
func (w *world) round(m *member, sent time.Duration) {
	_, cut := in(m.partitions, sent)
	if cut {
		w.after(m, sent+2*w.timing.Margin, func(now time.Duration) { w.list(m, now) })
		return
	}
	commit := sent + w.delay()
	w.schedule(commit, func(time.Duration) {
		w.version++
		w.leases[m.name] = strconv.Itoa(w.version)
	})
	w.after(m, commit+w.delay(), func(now time.Duration) {
		m.st.Renewed(m.local(sent), m.local(now))
		w.list(m, now)
	})
}

func (w *world) list(m *member, sent time.Duration) {
	if _, cut := in(m.partitions, sent); cut {
		w.after(m, sent+2*w.timing.Margin, func(time.Duration) { m.busy = false })
		return
	}
	served := sent + w.delay()
	var recs []shard.Record
	w.schedule(served, func(time.Duration) {
		for name, v := range w.leases {
			recs = append(recs, shard.Record{Name: name, Version: v})
		}
	})
	w.after(m, served+w.delay(), func(now time.Duration) {
		m.st.Listed(m.local(sent), m.local(now), recs)
		m.busy = false
	})
}

func (w *world) String() string { return fmt.Sprint(w.leases) }
