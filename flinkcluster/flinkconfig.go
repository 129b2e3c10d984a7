package flinkcluster

import (
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/go-version"
)

// Flink configuration keys and values of high availability.
const (
	// PropertyHAType selects Flink high availability.
	PropertyHAType = "high-availability.type"
	// PropertyHALegacy is the pre-1.17 name of PropertyHAType, read when the new key is unset.
	PropertyHALegacy = "high-availability"
	// PropertyHAStorageDir is where Flink HA keeps its metadata.
	PropertyHAStorageDir = "high-availability.storageDir"
	// HATypeNone is the effective HA type when none is configured.
	HATypeNone = "none"
	// HATypeKubernetes is Flink's Kubernetes HA.
	HATypeKubernetes = "kubernetes"
	// KubernetesHAFactory is the factory class HATypeKubernetes stands for.
	KubernetesHAFactory = "org.apache.flink.kubernetes.highavailability.KubernetesHaServicesFactory"
)

// MemoryProcessRatioMinVersion is the first Flink version with the unified memory model.
const MemoryProcessRatioMinVersion = "1.10"

// HAType returns the effective HA type of flinkProperties, as the CRD's CEL rules compute it.
func HAType(props map[string]string) string {
	if v := props[PropertyHAType]; v != "" {
		return v
	}
	if v := props[PropertyHALegacy]; v != "" {
		return v
	}
	return HATypeNone
}

// HAEnabled reports whether flinkProperties turn on Flink high availability.
func HAEnabled(props map[string]string) bool {
	return LowerASCII(HAType(props)) != HATypeNone
}

// KubernetesHA reports whether flinkProperties select Flink's Kubernetes HA, whose metadata
// lives in ConfigMaps the controller can read and delete (ZooKeeper's it cannot).
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

var processRatioMinVersion = version.Must(version.NewVersion(MemoryProcessRatioMinVersion))

// ParseVersion parses spec.flinkVersion with the flink-on-k8s-operator's parser. The last
// result is cached (the regexp costs a fair part of defaulting); it is shared: never change it.
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

type parsedVersion struct {
	s   string
	v   *version.Version
	err error
}

var lastVersion atomic.Pointer[parsedVersion]

// allowNonRestoredStateMinVersion is the first Flink that honours ignore-unclaimed-state.
var allowNonRestoredStateMinVersion = version.Must(version.NewVersion("2.3"))

// IgnoresAllowNonRestoredState reports whether Flink s ignores the configured
// execution.savepoint.ignore-unclaimed-state (FLINK-36973); false when s does not parse.
func IgnoresAllowNonRestoredState(s string) bool {
	v, err := ParseVersion(s)
	return err == nil && v.LessThan(allowNonRestoredStateMinVersion)
}

// UsesProcessRatio reports whether Flink v uses the unified memory model (memoryProcessRatio).
func UsesProcessRatio(v *version.Version) bool {
	return !v.LessThan(processRatioMinVersion)
}
