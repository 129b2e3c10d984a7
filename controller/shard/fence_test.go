package shard_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/flink-admission/flink-admission/controller/shard"
)

var (
	timing = shard.Timing{LeaseDuration: 15 * time.Second, RenewPeriod: 3 * time.Second, Margin: 3 * time.Second}
	t0     = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// step is one input of a member's State: a renewal or a list, at seconds after t0.
type step struct {
	renew    bool
	sent     float64
	answered float64
	records  []shard.Record
}

func renewal(sent, answered float64) step { return step{renew: true, sent: sent, answered: answered} }
func listed(sent, answered float64, recs ...shard.Record) step {
	return step{sent: sent, answered: answered, records: recs}
}
func rec(name, version string) shard.Record { return shard.Record{Name: name, Version: version} }

// round is a renewal of self ("a", version v) answered quickly, then a list of recs.
func round(s float64, v string, recs ...shard.Record) []step {
	return []step{renewal(s, s+0.1), listed(s+0.1, s+0.2, append([]shard.Record{rec("a", v)}, recs...)...)}
}

func rounds(parts ...[]step) []step {
	var all []step
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}

func feed(st *shard.State, steps []step) {
	for _, s := range steps {
		if s.renew {
			st.Renewed(at(s.sent), at(s.answered))
		} else {
			st.Listed(at(s.sent), at(s.answered), s.records)
		}
	}
}

func TestFenceRules(t *testing.T) {
	tests := []struct {
		name    string
		steps   []step
		now     float64
		acting  bool
		members []string
	}{
		{name: "a member that joined waits a lease duration before it acts",
			steps: round(0, "1"), now: 15.0, acting: false, members: []string{"a"}},
		{name: "a member acts once a lease duration passed since its join's answer",
			steps: rounds(round(0, "1"), round(3, "2"), round(6, "3"), round(9, "4"), round(12, "5")), now: 15.1, acting: true, members: []string{"a"}},
		{name: "a member stops acting D - 2m after it sent its last renewal",
			steps: rounds(round(0, "1"), round(3, "2"), round(6, "3"), round(9, "4"), round(12, "5")), now: 21.0, acting: false, members: []string{"a"}},
		{name: "a member acts until D - 2m after it sent its last renewal",
			steps: rounds(round(0, "1"), round(3, "2"), round(6, "3"), round(9, "4"), round(12, "5"), round(15, "6")), now: 23.9, acting: true, members: []string{"a"}},
		{name: "a renewal answered later than the margin grants nothing",
			steps: rounds(round(0, "1"), round(3, "2"), round(6, "3"), round(9, "4"), round(12, "5"),
				[]step{renewal(15, 18.5), listed(18.5, 18.6, rec("a", "6"))}), now: 21.0, acting: false, members: []string{"a"}},
		{name: "a renewal not followed by a list extends nothing: a validity goes with a view listed after it",
			steps: rounds(round(0, "1"), round(3, "2"), round(6, "3"), round(9, "4"), round(12, "5"),
				[]step{renewal(15, 15.1)}), now: 21.0, acting: false, members: []string{"a"}},
		{name: "a renewal sent after the validity ran out is a join: the member waits again",
			steps: rounds(round(0, "1"), round(3, "2"), round(6, "3"), round(9, "4"), round(12, "5"), round(30, "6")), now: 44.0, acting: false, members: []string{"a"}},
		{name: "after a pause, a rejoined member acts again a lease duration after its renewal",
			steps: rounds(round(0, "1"), round(3, "2"), round(6, "3"), round(9, "4"), round(12, "5"), round(30, "6"), round(33, "7"),
				round(36, "8"), round(39, "9"), round(42, "10")), now: 45.2, acting: true, members: []string{"a"}},
		{name: "a peer whose record stays unchanged stays a member for D + m from when it was first seen",
			steps: rounds(round(0, "1", rec("b", "7")), round(3, "2", rec("b", "7")), round(6, "3", rec("b", "7")), round(9, "4", rec("b", "7")),
				round(12, "5", rec("b", "7")), round(15, "6", rec("b", "7")), round(18, "7", rec("b", "7"))), now: 18.3, acting: true, members: []string{"a", "b"}},
		{name: "a peer whose record stayed unchanged longer than D + m before the list was sent is gone",
			steps: rounds(round(0, "1", rec("b", "7")), round(3, "2", rec("b", "7")), round(6, "3", rec("b", "7")), round(9, "4", rec("b", "7")),
				round(12, "5", rec("b", "7")), round(15, "6", rec("b", "7")), round(18, "7", rec("b", "7")), round(21, "8", rec("b", "7"))), now: 21.3, acting: true, members: []string{"a"}},
		{name: "a peer that renews stays a member",
			steps: rounds(round(0, "1", rec("b", "1")), round(9, "2", rec("b", "2")), round(18, "3", rec("b", "3")), round(21, "4", rec("b", "3"))), now: 21.3, acting: false, members: []string{"a", "b"}},
		{name: "a peer whose Lease is not listed is not a member",
			steps: rounds(round(0, "1", rec("b", "1")), round(3, "2")), now: 3.3, acting: false, members: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := shard.NewState("a", timing)
			feed(st, tt.steps)
			v := st.View(at(tt.now))
			assert.Equal(t, tt.acting, v.Acting, "acting")
			assert.Equal(t, tt.members, v.Members, "members")
		})
	}
}

func TestLostMemberActsOnNothing(t *testing.T) {
	st := shard.NewState("a", timing)
	feed(st, rounds(round(0, "1"), round(3, "2"), round(6, "3"), round(9, "4"), round(12, "5"), round(15, "6")))
	assert.True(t, st.View(at(16)).Acting)
	st.Lost()
	assert.False(t, st.View(at(16)).Acting)
	assert.True(t, st.Until().IsZero())
}

func TestStaleLeasesAreReportedForDeletion(t *testing.T) {
	st := shard.NewState("a", timing)
	st.Listed(at(0), at(0.1), []shard.Record{rec("a", "1"), rec("b", "9")})
	assert.Empty(t, st.Listed(at(100), at(100.1), []shard.Record{rec("a", "1"), rec("b", "9")}), "gone, not yet for long")
	assert.Equal(t, []shard.Record{rec("b", "9")}, st.Listed(at(181), at(181.1), []shard.Record{rec("a", "2"), rec("b", "9")}),
		"gone for 10(D + m): its Lease may go, with its version as a precondition; never this member's own")
}

func TestTimingValidate(t *testing.T) {
	assert.NoError(t, shard.DefaultTiming.Validate())
	assert.Error(t, shard.Timing{LeaseDuration: 10 * time.Second, RenewPeriod: 3 * time.Second, Margin: 2 * time.Second}.Validate(),
		"a renewal after a failed one would come after the validity ran out")
	assert.Error(t, shard.Timing{LeaseDuration: 10 * time.Second, RenewPeriod: 0, Margin: time.Second}.Validate())
}

// Renewed says which renewals are joins: the first, and one sent after the right ran out;
// not one sent within it, even if the list that extends the right comes after it ran out.
func TestRenewedReportsJoins(t *testing.T) {
	st := shard.NewState("a", timing)
	assert.True(t, st.Renewed(at(0), at(0.1)), "the first renewal")
	st.Listed(at(0.1), at(0.2), []shard.Record{rec("a", "1")})
	// The right runs until 0 + D - 2m = 9 s.
	assert.False(t, st.Renewed(at(8.5), at(8.6)), "sent within the right")
	st.Listed(at(9.5), at(9.6), []shard.Record{rec("a", "2")})
	assert.False(t, st.Renewed(at(12), at(16)), "answered later than the margin: counts for nothing")
	assert.True(t, st.Renewed(at(30), at(30.1)), "sent after the right ran out")
}
