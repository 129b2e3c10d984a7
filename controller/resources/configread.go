package resources

import (
	corev1 "k8s.io/api/core/v1"
)

// ConfiguredValue reads one key of the Flink configuration a ConfigMap built by ConfigMap
// holds (config.yaml, else the legacy flink-conf.yaml); ok is false when the key is not set
// or no configuration file can be read.
func ConfiguredValue(cm *corev1.ConfigMap, key string) (value string, ok bool) {
	for _, f := range []struct {
		name     string
		standard bool
	}{{configFile, true}, {legacyConfigFile, false}} {
		text, found := cm.Data[f.name]
		if !found {
			continue
		}
		conf, err := parseConfig(text, f.standard)
		if err != nil {
			return "", false
		}
		value, ok = conf[key]
		return value, ok
	}
	return "", false
}
