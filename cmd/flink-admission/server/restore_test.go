package server

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/flink-admission/flink-admission/controller"
	"github.com/flink-admission/flink-admission/flinkcluster"
)

// TestRestoreAnnotationOneName: the controller acts on the restore annotation by the name the
// admission policy's upgrade plan reads (flinkcluster's), so a dry run and the controller
// agree on what the user answered.
func TestRestoreAnnotationOneName(t *testing.T) {
	assert.Equal(t, flinkcluster.RestoreAnnotation, controller.RestoreAnnotation)
	assert.Equal(t, flinkcluster.RestoreEmptyState, controller.RestoreEmptyState)
}
