package servetest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScopedOverlayArgs: the scoped overlay's scope flags parse with serve's flag set into
// the scope the controller and its cache get.
func TestScopedOverlayArgs(t *testing.T) {
	o := overlayOptions(t, "scoped")
	require.NoError(t, o.Validate())
	assert.True(t, o.EnableController)
	assert.Equal(t, []string{"team-b", "team-c"}, o.Controller.Scope.Namespaces)
	require.NotNil(t, o.Controller.Scope.Selector)
	assert.Equal(t, "flink.example.com/controller=flink-admission", o.Controller.Scope.Selector.String())
}
