package shard

import (
	"fmt"
	"slices"
	"time"
)

// Timing sets how long a membership lasts and the margin that guards it (see the package
// documentation for what each bound proves).
type Timing struct {
	// LeaseDuration (D) is how long a member's Lease record may stay unchanged, by another
	// member's clock, before that member counts as gone (plus Margin); and how long a member
	// that joins waits before it acts.
	LeaseDuration time.Duration
	// RenewPeriod is how often a member renews its Lease and lists the others'.
	RenewPeriod time.Duration
	// Margin (m) bounds a renewal's round trip (a slower one grants nothing) and the delay
	// of any request from leaving the replica to taking effect, and covers the clocks' rate
	// drift: a member acts for at most D - 2m after it sent a renewal.
	Margin time.Duration
}

// DefaultTiming renews every 3 s a membership of 15 s: a lost replica's clusters move after
// 15 to 21 s, and a replica that cannot renew stops acting 9 s after its last renewal.
var DefaultTiming = Timing{LeaseDuration: 15 * time.Second, RenewPeriod: 3 * time.Second, Margin: 3 * time.Second}

// Validate rejects timings under which a member would lose its shard between two
// renewals: the one after a failed renewal must still be sent while the first one's
// validity (D - 2m) lasts.
func (t Timing) Validate() error {
	if t.LeaseDuration <= 0 || t.RenewPeriod <= 0 || t.Margin <= 0 {
		return fmt.Errorf("shard lease duration, renew period and margin must be positive")
	}
	if 2*t.RenewPeriod+2*t.Margin >= t.LeaseDuration {
		return fmt.Errorf("shard lease duration %s must exceed twice the renew period %s plus twice the margin %s", t.LeaseDuration, t.RenewPeriod, t.Margin)
	}
	return nil
}

// validity is how long a member acts after it sent a counted renewal.
func (t Timing) validity() time.Duration { return t.LeaseDuration - 2*t.Margin }

// gone is how long a record must stay unchanged, from when this member first saw it to when
// it sent a list, before its member counts as gone.
func (t Timing) gone() time.Duration { return t.LeaseDuration + t.Margin }

// staleAfter is how long a gone member's Lease stays before a live member deletes it.
func (t Timing) staleAfter() time.Duration { return 10 * t.gone() }

// Record is one member's Lease as a list returned it: its name and the resourceVersion of its
// last write.
type Record struct {
	Name, Version string
}

// View is what a member knows when it decides: who is live and whether it may act at all.
type View struct {
	// Self is this member.
	Self string
	// Members are the live members, sorted; Self among them once it has renewed.
	Members []string
	// Acting is whether Self may act now: its membership is valid and past its warm-up.
	Acting bool
}

// Owns reports whether Self owns key and may act on it.
func (v View) Owns(key string) bool {
	return v.Acting && Owner(key, v.Members) == v.Self
}

// Equal reports whether two views decide every key alike.
func (v View) Equal(o View) bool {
	return v.Self == o.Self && v.Acting == o.Acting && slices.Equal(v.Members, o.Members)
}

// State is one member's fencing state, fed with what its Lease requests returned and when
// (on its own monotonic clock): Renewed after each successful renewal, Listed after each
// list of the members' Leases. It decides, purely, whether the member may act (View, Until).
type State struct {
	timing Timing
	self   string

	// renewed is the send time of the last counted renewal that no list followed yet.
	renewed time.Time
	// validUntil is when the member stops acting: D - 2m after the renewal that preceded
	// the last list.
	validUntil time.Time
	// actingFrom is when a member that (re)joined may act: D after its renewal's answer.
	actingFrom time.Time
	// seen is when this member first saw each record, by name.
	seen    map[string]seenRecord
	members []string
}

type seenRecord struct {
	version string
	since   time.Time
}

// NewState is the state of member self before its first renewal: acting on nothing.
func NewState(self string, t Timing) *State {
	return &State{timing: t, self: self, seen: map[string]seenRecord{}}
}

// Renewed records a successful write of the member's own Lease, sent at sent and answered
// at answered. A renewal answered later than Margin after it was sent counts for nothing: its
// write may have taken effect anywhere in between. One sent after the validity ran out (or
// the first one) is a join: the member waits D from its answer before it acts, so that a
// member that left it out of its view has stopped by then. It reports whether it was one.
func (s *State) Renewed(sent, answered time.Time) (joined bool) {
	if answered.Sub(sent) > s.timing.Margin || answered.Before(sent) {
		return false
	}
	if !sent.Before(s.validUntil) {
		s.actingFrom = answered.Add(s.timing.LeaseDuration)
		joined = true
	}
	s.renewed = sent
	return joined
}

// Listed records a list of the members' Leases, sent at sent and answered at answered, and
// returns the records of members gone for long (staleAfter), whose Leases may be deleted
// (with their version as a precondition). The renewal before it, if any, extends the
// validity: a validity always goes with a view listed after its renewal, never with an
// older one. A member is live while its record changed within the last D + m before sent,
// as this member saw it; a record first seen in this list counts as changed at answered.
func (s *State) Listed(sent, answered time.Time, records []Record) (stale []Record) {
	if !s.renewed.IsZero() {
		s.validUntil = s.renewed.Add(s.timing.validity())
		s.renewed = time.Time{}
	}
	seen := make(map[string]seenRecord, len(records))
	s.members = s.members[:0]
	for _, rec := range records {
		prev, ok := s.seen[rec.Name]
		if !ok || prev.version != rec.Version {
			prev = seenRecord{version: rec.Version, since: answered}
		}
		seen[rec.Name] = prev
		unchanged := sent.Sub(prev.since)
		switch {
		case unchanged <= s.timing.gone():
			s.members = append(s.members, rec.Name)
		case unchanged > s.timing.staleAfter() && rec.Name != s.self:
			stale = append(stale, rec)
		}
	}
	s.seen = seen
	slices.Sort(s.members)
	s.members = slices.Compact(s.members)
	return stale
}

// Lost records that the member cannot renew any more (it stops): it acts on nothing from now
// on, whatever its validity.
func (s *State) Lost() {
	s.validUntil, s.renewed = time.Time{}, time.Time{}
}

// Until is when the member's right to act ends (zero if it has none): the deadline of every
// action it starts now.
func (s *State) Until() time.Time { return s.validUntil }

// View is the member's view at now.
func (s *State) View(now time.Time) View {
	acting := now.Before(s.validUntil) && !now.Before(s.actingFrom)
	return View{Self: s.self, Members: slices.Clone(s.members), Acting: acting}
}
