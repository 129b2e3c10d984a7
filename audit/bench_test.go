package audit_test

import (
	"testing"

	"github.com/flink-admission/flink-admission/audit"
	"github.com/flink-admission/flink-admission/internal/test/benchdata"
	"github.com/flink-admission/flink-admission/policy"
)

// BenchmarkJudge measures the audit of one stored cluster (BenchmarkJudge/<size>): the
// defaults on a copy and the create rules with their ratcheting, on the shared objects of the
// validating create reviews.
func BenchmarkJudge(b *testing.B) {
	reviews, err := benchdata.Reviews()
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range reviews {
		if r.Mutate || r.Old != nil {
			continue
		}
		b.Run(r.Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				audit.Judge(policy.Validator{}, r.Object)
			}
		})
	}
}
