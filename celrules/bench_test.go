package celrules

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/deploy"
)

// statusWrite returns deploy/samples/deployment-mode.yaml as the API server stores it
// (defaulted) with its job running, and the same with the controller's next status: the
// pair a status write of a running cluster hands the CRD's rules.
func statusWrite(b *testing.B, v *Validator) (obj, old map[string]any) {
	raw, err := deploy.Sample("deployment-mode.yaml")
	if err != nil {
		b.Fatal(err)
	}
	fc := &v1beta1.FlinkCluster{}
	if err := yaml.UnmarshalStrict(raw, fc); err != nil {
		b.Fatal(err)
	}
	fc.Status.State = v1beta1.ClusterStateRunning
	fc.Status.Components.Job = &v1beta1.JobStatus{ID: "4f3c0d5e9a8b7c6d5e4f3a2b1c0d9e8f", State: v1beta1.JobStateDeploying}
	next := fc.DeepCopy()
	next.Status.Components.Job.State = v1beta1.JobStateRunning
	for _, o := range []struct {
		fc  *v1beta1.FlinkCluster
		out *map[string]any
	}{{fc, &old}, {next, &obj}} {
		if *o.out, err = runtime.DefaultUnstructuredConverter.ToUnstructured(o.fc); err != nil {
			b.Fatal(err)
		}
		v.Default(*o.out)
	}
	if errs := v.Validate(context.Background(), obj, old); len(errs) != 0 {
		b.Fatalf("the status write is denied: %v", errs)
	}
	return obj, old
}

// BenchmarkStatusWrite measures what the CRD's CEL rules cost the API server on each status
// write of a running Deployment-mode cluster (the controller's most frequent write): every
// rule of the object runs on it, the spec's included, though the spec did not change.
func BenchmarkStatusWrite(b *testing.B) {
	v, err := New()
	if err != nil {
		b.Fatal(err)
	}
	obj, old := statusWrite(b, v)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		v.Validate(ctx, obj, old)
	}
}
