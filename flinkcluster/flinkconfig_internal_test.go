package flinkcluster

import (
	"sync"
	"testing"

	"github.com/hashicorp/go-version"
	"github.com/stretchr/testify/assert"
)

// TestParseVersionRemembersOnlyTheSame checks that remembering the last version parsed
// never gives one string the result of another, one after the other and concurrently.
func TestParseVersionRemembersOnlyTheSame(t *testing.T) {
	inputs := []string{"1.20", "1.20", "not-a-version", "not-a-version", "2.2.1", "1.20", "1.9", "2.2.1", ""}
	check := func(t *testing.T, s string) {
		got, err := ParseVersion(s)
		want, wantErr := version.NewVersion(s)
		if wantErr != nil {
			assert.Error(t, err, s)
			assert.Nil(t, got, s)
			return
		}
		if assert.NoError(t, err, s) {
			assert.Equal(t, want.Original(), got.Original(), s)
		}
	}
	for _, s := range inputs {
		check(t, s)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				check(t, inputs[(i+j)%len(inputs)])
			}
		})
	}
	wg.Wait()
}
