package shard_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/controller/shard"
)

// keys are cluster keys as the controller names them: namespace/name.
func keys(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("team-%d/cluster-%d", i%37, i)
	}
	return ks
}

func owners(ks, members []string) map[string]string {
	o := make(map[string]string, len(ks))
	for _, k := range ks {
		o[k] = shard.Owner(k, members)
	}
	return o
}

func TestOwnerDoesNotDependOnTheMembersOrder(t *testing.T) {
	for _, k := range keys(200) {
		assert.Equal(t, shard.Owner(k, []string{"a", "b", "c"}), shard.Owner(k, []string{"c", "a", "b"}), k)
	}
	assert.Empty(t, shard.Owner("ns/x", nil), "no member owns nothing")
}

func TestOwnerBalancesTheClusters(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		t.Run(fmt.Sprintf("%d members", n), func(t *testing.T) {
			members := make([]string, n)
			for i := range members {
				members[i] = fmt.Sprintf("flink-admission-7d9f8c-%c", 'a'+i)
			}
			ks := keys(6000)
			share := map[string]int{}
			for _, o := range owners(ks, members) {
				share[o]++
			}
			fair := len(ks) / n
			for _, m := range members {
				assert.InDelta(t, fair, share[m], 0.1*float64(fair), "share of %s", m)
			}
		})
	}
}

func TestOwnershipMovesOnlyToAJoiningMember(t *testing.T) {
	ks := keys(6000)
	before := owners(ks, []string{"a", "b", "c"})
	after := owners(ks, []string{"a", "b", "c", "d"})
	moved := 0
	for _, k := range ks {
		if before[k] != after[k] {
			moved++
			require.Equal(t, "d", after[k], "a key that moves on a join moves to the new member: %s", k)
		}
	}
	assert.InDelta(t, len(ks)/4, moved, 0.1*float64(len(ks)/4), "the new member takes its fair share")
}

func TestOwnershipMovesOnlyFromALeavingMember(t *testing.T) {
	ks := keys(6000)
	before := owners(ks, []string{"a", "b", "c"})
	after := owners(ks, []string{"a", "c"})
	for _, k := range ks {
		if before[k] != "b" {
			require.Equal(t, before[k], after[k], "a key of a member that stays stays: %s", k)
		} else {
			require.Contains(t, []string{"a", "c"}, after[k])
		}
	}
}
