package policy_test

import (
	"strings"
	"testing"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/policy"
)

// typicalUpdate returns the shared typical object (a production-like cluster, ~13 KB of
// JSON) and the same object with one flinkProperties value changed, as in the shared
// validate UPDATE review.
func typicalUpdate(b *testing.B) (old, fc *v1beta1.FlinkCluster) {
	old = readFixture(b, benchTypical)
	fc = old.DeepCopy()
	fc.Spec.FlinkProperties["execution.checkpointing.interval"] = "120s"
	if errs, _ := policy.ValidateUpdate(old, fc); len(errs) != 0 {
		b.Fatalf("the benchmark update is not valid: %v", errs)
	}
	return old, fc
}

// BenchmarkValidateUpdate measures the validating webhook's work on a typical update.
func BenchmarkValidateUpdate(b *testing.B) {
	old, fc := typicalUpdate(b)
	b.ReportAllocs()
	for b.Loop() {
		policy.ValidateUpdate(old, fc)
	}
}

// BenchmarkValidateUpdateJobRunning is BenchmarkValidateUpdate on a cluster whose stored
// status records the job running: the update then carries the upgrade plan (with the
// shared update's savepoint mode, a stop with a savepoint).
func BenchmarkValidateUpdateJobRunning(b *testing.B) {
	old, fc := typicalUpdate(b)
	for _, o := range []*v1beta1.FlinkCluster{old, fc} {
		o.Status.Components.Job = &v1beta1.JobStatus{ID: "4f3c0d5e9a8b7c6d5e4f3a2b1c0d9e8f", State: v1beta1.JobStateRunning, FlinkVersion: o.Spec.FlinkVersion}
	}
	if _, warnings := policy.ValidateUpdate(old, fc); len(warnings) == 0 || !strings.HasPrefix(warnings[len(warnings)-1], policy.WarningPlanPrefix) {
		b.Fatalf("the benchmark update has no upgrade plan: %q", warnings)
	}
	b.ReportAllocs()
	for b.Loop() {
		policy.ValidateUpdate(old, fc)
	}
}

// BenchmarkValidateUpdateDefaulted is BenchmarkValidateUpdate on defaulted objects, as
// stored when the mutating webhook is on.
func BenchmarkValidateUpdateDefaulted(b *testing.B) {
	old, fc := typicalUpdate(b)
	policy.Default(old)
	policy.Default(fc)
	b.ReportAllocs()
	for b.Loop() {
		policy.ValidateUpdate(old, fc)
	}
}

// BenchmarkValidateUpdateMetadataOnly measures the most frequent update: the spec is
// unchanged (a label, a finalizer or an annotation changed).
func BenchmarkValidateUpdateMetadataOnly(b *testing.B) {
	old, _ := typicalUpdate(b)
	fc := old.DeepCopy()
	fc.Labels["release"] = "canary"
	b.ReportAllocs()
	for b.Loop() {
		policy.ValidateUpdate(old, fc)
	}
}

// BenchmarkValidateCreate measures the validating webhook's work on a typical create.
func BenchmarkValidateCreate(b *testing.B) {
	fc := readFixture(b, benchTypical)
	b.ReportAllocs()
	for b.Loop() {
		policy.ValidateCreate(fc)
	}
}

// BenchmarkDefault measures the mutating webhook's work on a typical object (with the copy
// a webhook makes of the decoded object).
func BenchmarkDefault(b *testing.B) {
	fc := readFixture(b, benchTypical)
	b.ReportAllocs()
	for b.Loop() {
		policy.Default(fc.DeepCopy())
	}
}
