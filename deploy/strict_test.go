package deploy_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/flink-admission/flink-admission/internal/test/strictyaml"
)

// TestManifestsLoadStrictly: every YAML and JSON file of deploy/ (kustomizations, manifests,
// samples, the dashboard, the golden files) loads with a strict parser. kustomize keeps the
// last of two equal keys silently, so a repeated key hides half of what a file says.
func TestManifestsLoadStrictly(t *testing.T) {
	var checked int
	require.NoError(t, filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		content, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		assert.NoError(t, strictyaml.Check(content), "deploy/%s", p)
		checked++
		return nil
	}))
	assert.Greater(t, checked, 20, "the walk found deploy/'s manifests")
}
