package policy

import (
	"maps"
	"reflect"
	"slices"

	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// specChanged reports whether an update changes what the spec means. A spec that differs
// from the old one only by defaults (the mutating webhook defaulting an object that was
// created while it was off) is no change: it must not trip the rules for changed specs,
// such as "a job cluster without savepointsDir cannot be updated".
//
// The checks go from cheap to expensive, because this runs on every update: most updates
// change only metadata (labels, finalizers, annotations), and most spec changes are found
// in a field that Default never writes, which spares defaulting two copies of the spec.
func specChanged(old, cur *v1beta1.FlinkClusterSpec) bool {
	switch {
	case specEqual(old, cur):
		return false
	case verbatimFieldsDiffer(old, cur):
		return true
	default:
		return !specEqual(effectiveSpec(old), effectiveSpec(cur))
	}
}

// specEqual reports whether two specs are the same. Like the reference webhook it uses
// reflect.DeepEqual, so "1" and "1000m" differ, as they do for the API server's own
// ratcheting, which compares stored JSON; quantities decoded from the same text are
// identical structs. It first compares the small fields that updates change most, so that
// a difference is usually found before the walk reaches the large pod templates; the
// final full comparison keeps it exact whatever fields the spec gains.
func specEqual(a, b *v1beta1.FlinkClusterSpec) bool {
	return a.FlinkVersion == b.FlinkVersion &&
		a.Image.Name == b.Image.Name &&
		maps.Equal(a.FlinkProperties, b.FlinkProperties) &&
		reflect.DeepEqual(a.Job, b.Job) &&
		reflect.DeepEqual(a, b)
}

// verbatimFieldsDiffer reports whether two specs differ in a field that Default copies
// into the effective spec unchanged: then the effective specs differ too. flinkProperties
// count without the keys Default adds for a Deployment JobManager (it never changes the
// others, and adds those only when absent).
func verbatimFieldsDiffer(a, b *v1beta1.FlinkClusterSpec) bool {
	if a.FlinkVersion != b.FlinkVersion || a.Image.Name != b.Image.Name ||
		!propertiesEqualBesidesDefaults(a.FlinkProperties, b.FlinkProperties) {
		return true
	}
	ja, jb := a.Job, b.Job
	if ja == nil || jb == nil {
		return ja != jb
	}
	return !ptr.Equal(ja.JarFile, jb.JarFile) || !ptr.Equal(ja.PyFile, jb.PyFile) ||
		!ptr.Equal(ja.PyModule, jb.PyModule) || !ptr.Equal(ja.ClassName, jb.ClassName) ||
		!ptr.Equal(ja.FromSavepoint, jb.FromSavepoint) || !ptr.Equal(ja.SavepointsDir, jb.SavepointsDir) ||
		!ptr.Equal(ja.Parallelism, jb.Parallelism) || !ptr.Equal(ja.CancelRequested, jb.CancelRequested) ||
		ja.SavepointGeneration != jb.SavepointGeneration || !slices.Equal(ja.Args, jb.Args)
}

// defaultedProperties are the flinkProperties keys Default may add.
var defaultedProperties = map[string]bool{
	PropertyShutdownOnApplicationFinish:       true,
	PropertySubmitFailedJobOnApplicationError: true,
}

func propertiesEqualBesidesDefaults(a, b map[string]string) bool {
	n := 0
	for k, va := range a {
		if defaultedProperties[k] {
			continue
		}
		if vb, ok := b[k]; !ok || va != vb {
			return false
		}
		n++
	}
	for k := range b {
		if !defaultedProperties[k] {
			n--
		}
	}
	return n == 0
}

// effectiveSpec returns a defaulted copy of s: what the spec means.
func effectiveSpec(s *v1beta1.FlinkClusterSpec) *v1beta1.FlinkClusterSpec {
	s = s.DeepCopy()
	defaultSpec(s)
	return s
}
