package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/flink-admission/flink-admission/controller/flinkha"
	"github.com/flink-admission/flink-admission/controller/state"
	"github.com/flink-admission/flink-admission/internal/test/builder"
)

// The grace a JobManager pod being deleted keeps on the HA lease follows the cluster's
// configured lease duration (issue 17, hole 9), not a fixed minute.
func TestLeaseGraceFollowsTheConfiguredLeaseDuration(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lease string
		want  time.Duration
	}{
		{"Flink's default lease (15 s)", "", state.LeaseGrace},
		{"a short lease keeps the minimum", "5 s", state.LeaseGrace},
		{"a lease of 2 min: four leases", "2 min", 8 * time.Minute},
		{"milliseconds without a unit", "60000", 4 * time.Minute},
		{"a value Flink cannot read: the default grace", "two minutes", state.LeaseGrace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := builder.MakeAppCluster("wc").Deployment()
			if tc.lease != "" {
				w.FlinkProperty(flinkha.LeaseDurationKey, tc.lease)
			}
			assert.Equal(t, tc.want, leaseGrace(w.Obj()))
		})
	}
}
