package freeport

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGetNReturnsDistinctBindablePortsBelowTheEphemeralRange(t *testing.T) {
	ports, err := GetN(20)
	require.NoError(t, err)
	require.Len(t, ports, 20)
	seen := map[int]bool{}
	for _, p := range ports {
		assert.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
		assert.GreaterOrEqual(t, p, lowest)
		assert.Less(t, p, ephemeralLow(), "port %d is in the range the kernel gives outgoing connections", p)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		require.NoError(t, err, "port %d can be bound", p)
		require.NoError(t, l.Close())
	}
}

func TestGetNeverReturnsAPortInUse(t *testing.T) {
	// Hold many ports of the range; none of them may come back.
	var held []net.Listener
	t.Cleanup(func() {
		for _, l := range held {
			_ = l.Close()
		}
	})
	busy := map[int]bool{}
	for p := lowest; p < lowest+200; p++ {
		if l, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(p))); err == nil {
			held = append(held, l)
			busy[p] = true
		}
	}
	for range 200 {
		p, err := Get()
		require.NoError(t, err)
		assert.False(t, busy[p], "port %d is held by a listener", p)
	}
}
