package installer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deployDir is deploy/ on disk: the installers render the same files the binary embeds.
var deployDir = os.DirFS(filepath.Join(".."))

func TestRenderSetsTheImage(t *testing.T) {
	for _, tc := range []struct {
		name, image, want string
	}{
		{"allow: a tag", "registry.example/team/flink-admission:v1.2.3", "image: registry.example/team/flink-admission:v1.2.3"},
		{"allow: a digest", "registry.example/flink-admission@sha256:" + strings.Repeat("ab", 32), "image: registry.example/flink-admission@sha256:" + strings.Repeat("ab", 32)},
		{"allow: a registry with a port", "localhost:5000/flink-admission:dev", "image: localhost:5000/flink-admission:dev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Render(deployDir, "overlays/self-signed", tc.image)
			require.NoError(t, err)
			assert.Contains(t, string(out), "\n        "+tc.want+"\n")
			assert.NotContains(t, string(out), "image: flink-admission:latest")
			assert.True(t, strings.HasPrefix(string(out), "# flink-admission installer: deploy/overlays/self-signed with the image "+tc.image))
		})
	}
}

func TestRenderRejects(t *testing.T) {
	_, err := Render(deployDir, "overlays/self-signed", "Not An Image")
	assert.ErrorContains(t, err, `image "Not An Image"`)
	_, err = Render(deployDir, "overlays/nothing-here", "flink-admission:v1")
	assert.ErrorContains(t, err, "rendering overlays/nothing-here")
}

func TestEveryInstallerRenders(t *testing.T) {
	for _, i := range Installers {
		out, err := Render(deployDir, i.Overlay, "flink-admission:v1")
		require.NoError(t, err, i.Overlay)
		assert.Contains(t, string(out), "kind: CustomResourceDefinition", "%s installs the CRD", i.File)
	}
}
