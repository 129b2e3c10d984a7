package shard

import (
	"fmt"
	"slices"
	"time"
)

// Timing sets how long a membership lasts and the margin that guards it (see the package doc).
type Timing struct {
	// LeaseDuration (D) bounds a peer's unchanged Lease (with Margin) and a join's wait.
	LeaseDuration time.Duration
	// RenewPeriod is how often a member renews its Lease and lists the others'.
	RenewPeriod time.Duration
	// Margin (m) bounds a counted renewal's round trip, any request's delay and the clocks' drift.
	Margin time.Duration
}

// DefaultTiming moves a lost replica's clusters after 15 to 21 s; one unable to renew stops at 9 s.
var DefaultTiming = Timing{LeaseDuration: 15 * time.Second, RenewPeriod: 3 * time.Second, Margin: 3 * time.Second}

// Validate rejects timings where the renewal after a failed one comes past the validity D - 2m.
func (t Timing) Validate() error {
	if t.LeaseDuration <= 0 || t.RenewPeriod <= 0 || t.Margin <= 0 {
		return fmt.Errorf("shard lease duration, renew period and margin must be positive")
	}
	if 2*t.RenewPeriod+2*t.Margin >= t.LeaseDuration {
		return fmt.Errorf("shard lease duration %s must exceed twice the renew period %s plus twice the margin %s", t.LeaseDuration, t.RenewPeriod, t.Margin)
	}
	return nil
}

func (t Timing) validity() time.Duration { return t.LeaseDuration - 2*t.Margin }

func (t Timing) gone() time.Duration { return t.LeaseDuration + t.Margin }

func (t Timing) staleAfter() time.Duration { return 10 * t.gone() }

// Record is one member's Lease as listed: its name and resourceVersion.
type Record struct {
	Name, Version string
}

// View is what a member knows when it decides.
type View struct {
	// Self is this member.
	Self string
	// Members are the live members, sorted.
	Members []string
	// Acting is whether Self's right to act is valid and past its join's wait.
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

// State is one member's fencing state: fed by Renewed and Listed, it decides purely whether it acts.
type State struct {
	timing Timing
	self   string

	// renewed is the send time of the last counted renewal that no list followed yet.
	renewed time.Time

	validUntil time.Time

	actingFrom time.Time

	seen    map[string]seenRecord
	members []string
}

type seenRecord struct {
	version string
	since   time.Time
}

// NewState is the state of member self before its first renewal.
func NewState(self string, t Timing) *State {
	return &State{timing: t, self: self, seen: map[string]seenRecord{}}
}

// Renewed records a successful renewal and reports whether it was a join; one answered after
// Margin counts for nothing, as it may have landed anytime.
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

// Listed records a list of the Leases and returns those of members gone for long, to delete with
// their version as a precondition. A record first seen counts as changed at answered.
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

// Lost ends the member's right to act, whatever its validity.
func (s *State) Lost() {
	s.validUntil, s.renewed = time.Time{}, time.Time{}
}

// Until is when the member's right to act ends: the deadline of every action started now.
func (s *State) Until() time.Time { return s.validUntil }

// View is the member's view at now.
func (s *State) View(now time.Time) View {
	acting := now.Before(s.validUntil) && !now.Before(s.actingFrom)
	return View{Self: s.self, Members: slices.Clone(s.members), Acting: acting}
}
