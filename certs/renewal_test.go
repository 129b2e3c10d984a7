package certs

import (
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	clocktesting "k8s.io/utils/clock/testing"
)

var issued = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// certValid returns a certificate valid from issued for lifetime: the rotation decisions read
// only NotBefore and NotAfter.
func certValid(lifetime time.Duration) *x509.Certificate {
	return &x509.Certificate{NotBefore: issued, NotAfter: issued.Add(lifetime)}
}

func TestRenewAt(t *testing.T) {
	tests := []struct {
		name string
		cert *x509.Certificate
		want time.Time
	}{
		{"90h certificate: renewed after 60h", certValid(90 * time.Hour), issued.Add(60 * time.Hour)},
		{"7-day certificate: renewed with 56h left", certValid(7 * 24 * time.Hour), issued.Add(7*24*time.Hour - 56*time.Hour)},
		{"1-year CA: renewed with a third of a year left", certValid(365 * 24 * time.Hour), issued.Add(365*24*time.Hour - 365*24*time.Hour/3)},
		{"zero lifetime: due at once", certValid(0), issued},
		{"NotAfter before NotBefore: due at once", certValid(-time.Hour), issued},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, RenewAt(tc.cert))
		})
	}
}

func TestNeedsRenewal(t *testing.T) {
	day90h := certValid(90 * time.Hour)
	tests := []struct {
		name string
		cert *x509.Certificate
		// at is when the decision is taken, as an offset from issued.
		at   time.Duration
		want bool
	}{
		{"keep: just issued", day90h, 0, false},
		{"keep: half way through", day90h, 45 * time.Hour, false},
		{"keep: one second before two thirds", day90h, 60*time.Hour - time.Second, false},
		{"renew: exactly at two thirds", day90h, 60 * time.Hour, true},
		{"renew: a third of the lifetime not quite left", day90h, 61 * time.Hour, true},
		{"renew: exactly at expiry", day90h, 90 * time.Hour, true},
		{"renew: expired", day90h, 91 * time.Hour, true},
		{"renew: woke up from a week of suspend", day90h, 7 * 24 * time.Hour, true},
		{"renew: not yet valid (issued by a clock ahead of ours)", day90h, -time.Second, true},
		{"renew: no certificate", nil, 0, true},
		{"renew: zero lifetime", certValid(0), 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(issued)
			clk.Step(tc.at)
			assert.Equal(t, tc.want, NeedsRenewal(tc.cert, clk.Now()))
		})
	}
}

// TestNeedsRenewalFollowsTheClock walks a fake clock across a certificate's life the way the
// resync loop does, one tick at a time, and checks that the first tick at or after RenewAt is
// the first to ask for renewal.
func TestNeedsRenewalFollowsTheClock(t *testing.T) {
	cert := certValid(7 * 24 * time.Hour)
	clk := clocktesting.NewFakeClock(issued)
	tick := time.Minute
	for !NeedsRenewal(cert, clk.Now()) {
		clk.Step(tick)
	}
	assert.False(t, clk.Now().Before(RenewAt(cert)), "renewal asked before RenewAt")
	assert.Less(t, clk.Now().Sub(RenewAt(cert)), tick, "renewal asked more than a tick after RenewAt")
}
