package policy_test

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/policy"
)

// fuzzSeeds returns the JSON of every fixture plus a few hand-made shapes that poke at nil
// and odd values.
func fuzzSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	for _, fx := range allFixtures(f) {
		seeds = append(seeds, mustJSON(f, fx.obj))
	}
	seeds = append(seeds,
		[]byte(`{}`),
		[]byte(`{"metadata":{"name":"x","namespace":"y"},"spec":{"jobManager":null,"taskManager":null,"job":null}}`),
		[]byte(`{"spec":{"jobManager":{"deploymentType":"Deployment","replicas":2},"job":{"cancelRequested":true}}}`),
		[]byte(`{"spec":{"flinkVersion":"1.9","jobManager":{"memoryOffHeapMin":"1Ei","resources":{"limits":{"memory":"1"}}}}}`),
		[]byte(`{"spec":{"jobManager":{"ports":{}},"taskManager":{"ports":{"rpc":0}},"flinkProperties":{"high-availability":"NONE"}}}`),
		// Every member Default changes inside, set but incomplete.
		[]byte(`{"spec":{"flinkProperties":{"a":"b"},"hadoopConfig":{"configMapName":"h"},"jobManager":{"deploymentType":"Deployment","ingress":{"hostFormat":"x"}},"job":{"jarFile":"j","cleanupPolicy":{"afterJobFails":"DeleteCluster"}}}}`),
		[]byte(`{"metadata":{"annotations":{"flinkclusters.flinkoperator.k8s.io/user-control":"savepoint"}},"status":{"components":{"job":{"state":"Running","savepointTime":"bad"}},"control":{"state":"InProgress"}}}`),
		// A running job, for the upgrade plan: last-state with an age bound, a restore answer.
		[]byte(`{"metadata":{"annotations":{"flinkclusters.flinkoperator.k8s.io/restore-from":"empty-state"}},"spec":{"flinkVersion":"2.2","jobManager":{"deploymentType":"Deployment"},"flinkProperties":{"high-availability.type":"kubernetes","kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age":"5 min"},"job":{"upgradeMode":"last-state","savepointsDir":"s3://sp","jarFile":"j"}},"status":{"components":{"job":{"id":"j1","state":"Running","flinkVersion":"1.20","startTime":"bad"}}}}`),
	)
	return seeds
}

// decode turns fuzz bytes into a FlinkCluster; bytes that are not a FlinkCluster are
// skipped (the webhook's decoder rejects them before the policy sees them).
func decode(data []byte) (*v1beta1.FlinkCluster, bool) {
	fc := &v1beta1.FlinkCluster{}
	if err := json.Unmarshal(data, fc); err != nil {
		return nil, false
	}
	return fc, true
}

// FuzzValidate checks that validation and defaulting never panic on any FlinkCluster, and
// two properties of the policy: Default is idempotent, and Default never turns a valid
// object into an invalid one.
func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fc, ok := decode(data)
		if !ok {
			return
		}
		errs, _ := policy.ValidateCreate(fc)
		policy.ValidateUpdate(fc, fc)

		d := fc.DeepCopy()
		policy.Default(d)
		twice := d.DeepCopy()
		policy.Default(twice)
		if !equality.Semantic.DeepEqual(d, twice) {
			t.Fatalf("Default is not idempotent:\n%s", cmp.Diff(d, twice, quantityOpts))
		}
		checkVerbatim(t, fc, d)
		if len(errs) == 0 {
			if after, _ := policy.ValidateCreate(d); len(after) != 0 {
				t.Fatalf("Default turned a valid object invalid: %v", after)
			}
		}
	})
}

// FuzzValidateUpdate checks that ValidateUpdate never panics on any pair of objects, and
// that an update that changes nothing is always allowed.
func FuzzValidateUpdate(f *testing.F) {
	seeds := fuzzSeeds(f)
	for i, s := range seeds {
		f.Add(s, seeds[(i+1)%len(seeds)])
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, oldData, newData []byte) {
		old, ok := decode(oldData)
		if !ok {
			return
		}
		fc, ok := decode(newData)
		if !ok {
			return
		}
		policy.ValidateUpdate(old, fc)
		policy.ValidateUpdate(fc, old)
		if errs, _ := policy.ValidateUpdate(old, old.DeepCopy()); len(errs) != 0 {
			t.Fatalf("a no-op update was denied: %v", errs)
		}
	})
}

// FuzzDefault checks that Default never panics, that it is idempotent through a JSON round trip (the webhook returns
// its result as a JSON patch), and that a defaulted object passes
// an update from the object as it was (what the mutating webhook produces on UPDATE), when
// the object was valid to begin with.
func FuzzDefault(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fc, ok := decode(data)
		if !ok {
			return
		}
		d := fc.DeepCopy()
		policy.Default(d)

		// The mutating webhook's result travels as JSON: defaulting what comes back
		// must change nothing either.
		once, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		back, ok := decode(once)
		if !ok {
			t.Fatalf("a defaulted object does not decode: %s", once)
		}
		policy.Default(back)
		if twice, _ := json.Marshal(back); string(once) != string(twice) {
			t.Fatalf("Default is not idempotent through JSON:\n%s\n%s", once, twice)
		}

		if errs, _ := policy.ValidateCreate(fc); len(errs) != 0 {
			return
		}
		if errs, _ := policy.ValidateUpdate(fc, d); len(errs) != 0 {
			t.Fatalf("defaulting a valid object on update was denied: %v", errs)
		}
	})
}

// checkVerbatim fails t when Default changed a field that the update check assumes it
// copies unchanged (see verbatimFieldsDiffer): a change there is always a real change.
func checkVerbatim(t *testing.T, in, out *v1beta1.FlinkCluster) {
	t.Helper()
	props := func(m map[string]string) map[string]string {
		c := maps.Clone(m)
		delete(c, policy.PropertyShutdownOnApplicationFinish)
		delete(c, policy.PropertySubmitFailedJobOnApplicationError)
		return c
	}
	type verbatim struct {
		FlinkVersion, Image                                                string
		Props                                                              map[string]string
		JarFile, PyFile, PyModule, ClassName, FromSavepoint, SavepointsDir *string
		Parallelism, SavepointGeneration                                   any
		CancelRequested                                                    *bool
		Args                                                               []string
	}
	pick := func(fc *v1beta1.FlinkCluster) verbatim {
		v := verbatim{FlinkVersion: fc.Spec.FlinkVersion, Image: fc.Spec.Image.Name, Props: props(fc.Spec.FlinkProperties)}
		if j := fc.Spec.Job; j != nil {
			v.JarFile, v.PyFile, v.PyModule, v.ClassName = j.JarFile, j.PyFile, j.PyModule, j.ClassName
			v.FromSavepoint, v.SavepointsDir, v.CancelRequested, v.Args = j.FromSavepoint, j.SavepointsDir, j.CancelRequested, j.Args
			v.Parallelism, v.SavepointGeneration = j.Parallelism, j.SavepointGeneration
		}
		return v
	}
	if diff := cmp.Diff(pick(in), pick(out), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("Default changed a field it must copy verbatim (-in +out):\n%s", diff)
	}
}
