package policy_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/flink-admission/flink-admission/policy"
)

// TestFixtures is cluster-api's defaulting/validation agreement check, over every builder
// fixture and every YAML fixture: each is valid as written (validation reads unset fields as
// their defaults), stays valid once defaulted, defaulting it twice changes nothing, and the
// defaulted object passes an update to itself, an update with a changed Flink property, and
// an update from the object as written (the stored object of a cluster created while the
// mutating webhook was off).
func TestFixtures(t *testing.T) {
	for _, f := range allFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			if errs, warnings := policy.ValidateCreate(f.obj); len(errs) != 0 || len(warnings) != 0 {
				t.Fatalf("fixture as written: errors %v, warnings %q", errs, warnings)
			}

			d := defaulted(f.obj)
			if diff := cmp.Diff(d, defaulted(d), quantityOpts); diff != "" {
				t.Errorf("Default is not idempotent (-once +twice):\n%s", diff)
			}
			if errs, warnings := policy.ValidateCreate(d); len(errs) != 0 || len(warnings) != 0 {
				t.Errorf("defaulted, create: errors %v, warnings %q", errs, warnings)
			}
			if errs, warnings := policy.ValidateUpdate(d, d.DeepCopy()); len(errs) != 0 || len(warnings) != 0 {
				t.Errorf("defaulted, update to itself: errors %v, warnings %q", errs, warnings)
			}

			changed := d.DeepCopy()
			if changed.Spec.FlinkProperties == nil {
				changed.Spec.FlinkProperties = map[string]string{}
			}
			changed.Spec.FlinkProperties["parallelism.default"] = "7"
			if errs, warnings := policy.ValidateUpdate(d, changed); len(errs) != 0 || len(warnings) != 0 {
				t.Errorf("defaulted, update of a property: errors %v, warnings %q", errs, warnings)
			}
			changed = defaulted(f.obj)
			if changed.Spec.FlinkProperties == nil {
				changed.Spec.FlinkProperties = map[string]string{}
			}
			changed.Spec.FlinkProperties["parallelism.default"] = "7"
			if errs, warnings := policy.ValidateUpdate(f.obj, changed); len(errs) != 0 || len(warnings) != 0 {
				t.Errorf("update from the object as written: errors %v, warnings %q", errs, warnings)
			}
		})
	}
}
