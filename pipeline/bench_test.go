package pipeline

import (
	"encoding/json"

	"testing"

	"github.com/flink-admission/flink-admission/internal/test/benchdata"
	"github.com/flink-admission/flink-admission/policy"
)

// BenchmarkPolicy measures the policy alone on the objects of each benchmark review
// (BenchmarkPolicy/<size>-<webhook>-<operation>): Default on a deep copy for the
// mutating reviews, ValidateCreate or ValidateUpdate for the validating ones.
func BenchmarkPolicy(b *testing.B) {
	for _, r := range reviews(b) {
		b.Run(r.Name, func(b *testing.B) {
			b.ReportAllocs()
			switch {
			case r.Mutate:
				for b.Loop() {
					// A deep copy, as Admit.
					c := r.Object.DeepCopy()
					policy.Default(c)
				}
			case r.Old == nil:
				for b.Loop() {
					policy.ValidateCreate(r.Object)
				}
			default:
				for b.Loop() {
					policy.ValidateUpdate(r.Old, r.Object)
				}
			}
		})
	}
}

// BenchmarkAdmit measures the pipeline on the objects of each benchmark review
// (BenchmarkAdmit/<size>-<webhook>-<operation>): the step of the review's webhook, with the
// patch for the mutating reviews.
func BenchmarkAdmit(b *testing.B) {
	for _, r := range reviews(b) {
		steps := Validate
		if r.Mutate {
			steps = Default
		}
		b.Run(r.Name, func(b *testing.B) {
			if v := (Pipeline{}).Admit(r.Old, r.Object, steps); !v.Allowed() {
				b.Fatalf("the review is denied: %v", v.Errors)
			}
			b.ReportAllocs()
			for b.Loop() {
				Pipeline{}.Admit(r.Old, r.Object, steps)
			}
		})
	}
}

func reviews(b *testing.B) []benchdata.Review {
	b.Helper()
	rs, err := benchdata.Reviews()
	if err != nil {
		b.Fatal(err)
	}
	return rs
}

// BenchmarkDefaultingPatch measures the mutating webhook's patch alone on the objects of
// each mutating benchmark review (BenchmarkDefaultingPatch/<size>-mutate-create): from the
// object as sent to its defaulted copy.
func BenchmarkDefaultingPatch(b *testing.B) {
	for _, r := range reviews(b) {
		if !r.Mutate {
			continue
		}
		sent, err := json.Marshal(r.Object)
		if err != nil {
			b.Fatal(err)
		}
		defaulted := Pipeline{}.Admit(nil, r.Object, Default).Object
		b.Run(r.Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DefaultingPatch(sent, r.Object, defaulted); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
