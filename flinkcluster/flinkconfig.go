package flinkcluster

import (
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/go-version"
)

// Flink configuration keys and values of high availability.
const (
	// PropertyHAType selects Flink high availability (none, kubernetes, zookeeper or a class).
	PropertyHAType = "high-availability.type"
	// PropertyHALegacy is the pre-1.17 name of PropertyHAType; it is read when the new key is unset.
	PropertyHALegacy = "high-availability"
	// PropertyHAStorageDir is where Flink HA keeps its metadata.
	PropertyHAStorageDir = "high-availability.storageDir"
	// HATypeNone is the effective HA type when none is configured.
	HATypeNone = "none"
	// HATypeKubernetes is Flink's Kubernetes HA (HighAvailabilityMode.KUBERNETES).
	HATypeKubernetes = "kubernetes"
	// KubernetesHAFactory is the factory class that HATypeKubernetes stands for
	// (org.apache.flink.kubernetes.highavailability.KubernetesHaServicesFactory): naming it
	// in high-availability.type is the same Kubernetes HA.
	KubernetesHAFactory = "org.apache.flink.kubernetes.highavailability.KubernetesHaServicesFactory"
)

// MemoryProcessRatioMinVersion is the first Flink version with the unified memory model:
// from it on memoryProcessRatio applies and the off-heap settings are rejected, before it
// the reverse. The flink-on-k8s-operator compares with "1.10" (its messages say 1.11).
const MemoryProcessRatioMinVersion = "1.10"

// HAType returns the effective Flink high-availability type of a flinkProperties map:
// high-availability.type when set and non-empty, else the legacy high-availability key when
// set and non-empty, else "none". It is the expression the CRD's CEL rules use.
func HAType(props map[string]string) string {
	if v := props[PropertyHAType]; v != "" {
		return v
	}
	if v := props[PropertyHALegacy]; v != "" {
		return v
	}
	return HATypeNone
}

// HAEnabled reports whether flinkProperties turn on Flink high availability: the effective
// HA type is not "none", compared ignoring ASCII case as CEL's lowerAscii does.
func HAEnabled(props map[string]string) bool {
	return LowerASCII(HAType(props)) != HATypeNone
}

// KubernetesHA reports whether flinkProperties select Flink's Kubernetes HA services, whose
// metadata (leader election, job graphs, checkpoint pointers) live in ConfigMaps that the
// controller can read and delete: the effective HA type is kubernetes or the Kubernetes
// factory class, compared ignoring ASCII case as the CRD's rule does. ZooKeeper and any other
// factory class keep it where the controller cannot look.
func KubernetesHA(props map[string]string) bool {
	t := LowerASCII(HAType(props))
	return t == HATypeKubernetes || t == LowerASCII(KubernetesHAFactory)
}

// LowerASCII lowers ASCII letters only, like CEL's lowerAscii: strings.ToLower would also
// fold non-ASCII letters and could disagree with the CRD's rules.
func LowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// processRatioMinVersion is MemoryProcessRatioMinVersion, parsed once.
var processRatioMinVersion = version.Must(version.NewVersion(MemoryProcessRatioMinVersion))

// ParseVersion parses spec.flinkVersion with the same parser as the
// flink-on-k8s-operator, so that both accept the same strings ("1.14", "1.10.1", "2.2.1").
//
// The last string parsed is remembered: the parser runs a regular expression, a fair part
// of defaulting a typical object, and the reviews of one cluster mostly carry one version.
// One entry stays bounded whatever the input. The result is shared: read it, never change it.
func ParseVersion(s string) (*version.Version, error) {
	if s == "" {
		return nil, fmt.Errorf("flinkVersion is empty")
	}
	if last := lastVersion.Load(); last != nil && last.s == s {
		return last.v, last.err
	}
	v, err := version.NewVersion(s)
	lastVersion.Store(&parsedVersion{s: s, v: v, err: err})
	return v, err
}

// parsedVersion is one result of ParseVersion.
type parsedVersion struct {
	s   string
	v   *version.Version
	err error
}

// lastVersion is the last result of ParseVersion.
var lastVersion atomic.Pointer[parsedVersion]

// allowNonRestoredStateMinVersion is the first Flink whose standalone application
// entrypoint keeps execution.savepoint.ignore-unclaimed-state from the configuration.
var allowNonRestoredStateMinVersion = version.Must(version.NewVersion("2.3"))

// IgnoresAllowNonRestoredState reports whether Flink s drops the configuration's
// execution.savepoint.ignore-unclaimed-state (FLINK-36973). An unparsable version gets
// false: it is refused by its own rule.
func IgnoresAllowNonRestoredState(s string) bool {
	v, err := ParseVersion(s)
	return err == nil && v.LessThan(allowNonRestoredStateMinVersion)
}

// UsesProcessRatio reports whether Flink v uses the unified memory model (memoryProcessRatio).
func UsesProcessRatio(v *version.Version) bool {
	return !v.LessThan(processRatioMinVersion)
}
