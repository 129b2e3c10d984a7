package flinkcluster

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

// Every upgrade mode says whether it keeps state; a new one is not counted as keeping state,
// or as stateless, by accident.
func TestEveryUpgradeModeSaysWhetherItKeepsState(t *testing.T) {
	for _, m := range v1beta1.UpgradeModes {
		_, ok := modeKeepsState[m]
		assert.True(t, ok, "upgrade mode %q is missing from modeKeepsState", m)
	}
	assert.Len(t, modeKeepsState, len(v1beta1.UpgradeModes), "modeKeepsState names only the CRD's modes")
	unknown := v1beta1.UpgradeMode("some-new-mode")
	assert.True(t, KeepsState(&v1beta1.JobSpec{UpgradeMode: &unknown}), "an unknown mode throws nothing away")
}
