package webhook

import (
	"encoding/json"
	"os"
	"testing"

	sigsjson "sigs.k8s.io/json"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

func BenchmarkScratchDecode(b *testing.B) {
	var rev struct {
		Request struct {
			Object    json.RawMessage
			OldObject json.RawMessage
		}
	}
	bb, _ := os.ReadFile("testdata/bench/typical-validate-update.json")
	json.Unmarshal(bb, &rev)
	raw := []byte(rev.Request.Object)
	b.Run("strict-all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fc := &v1beta1.FlinkCluster{}
			sigsjson.UnmarshalStrict(raw, fc)
		}
	})
	b.Run("strict-unknown", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fc := &v1beta1.FlinkCluster{}
			sigsjson.UnmarshalStrict(raw, fc, sigsjson.DisallowUnknownFields)
		}
	})
	b.Run("casesensitive", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fc := &v1beta1.FlinkCluster{}
			sigsjson.UnmarshalCaseSensitivePreserveInts(raw, fc)
		}
	})
	b.Run("stdlib", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			fc := &v1beta1.FlinkCluster{}
			json.Unmarshal(raw, fc)
		}
	})
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			decodeUnstructured(raw)
		}
	})
	b.Run("map-stdlib", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]any
			json.Unmarshal(raw, &m)
		}
	})
}
