package main

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
)

// TestSBOMOfARealBinary reads the build information of this test binary (a Go binary like
// the release's, linking CycloneDX) and checks the SBOM written from it.
func TestSBOMOfARealBinary(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	info, err := buildinfo.ReadFile(exe)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "sbom.cdx.json")
	require.NoError(t, writeSBOM(exe, "v0.1.0", time.Unix(1700000000, 0), out))

	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var bom cdx.BOM
	require.NoError(t, cdx.NewBOMDecoder(bytes.NewReader(raw), cdx.BOMFileFormatJSON).Decode(&bom))
	assert.Equal(t, cdx.SpecVersion1_6, bom.SpecVersion)
	require.NotNil(t, bom.Metadata)
	require.NotNil(t, bom.Metadata.Component)
	assert.Equal(t, "flink-admission", bom.Metadata.Component.Name)
	assert.Equal(t, "pkg:golang/github.com/flink-admission/flink-admission@v0.1.0", bom.Metadata.Component.PackageURL)
	assert.Equal(t, "2023-11-14T22:13:20Z", bom.Metadata.Timestamp)

	require.NotNil(t, bom.Components)
	byName := map[string]cdx.Component{}
	for _, c := range *bom.Components {
		byName[c.Name] = c
	}
	require.Len(t, byName, len(info.Deps), "one component per linked module")
	for _, d := range info.Deps {
		m := *d
		if m.Replace != nil {
			m = *m.Replace
		}
		c, ok := byName[m.Path]
		if assert.True(t, ok, "module %s is in the SBOM", m.Path) {
			assert.Equal(t, m.Version, c.Version, m.Path)
			assert.Equal(t, "pkg:golang/"+m.Path+"@"+m.Version, c.PackageURL)
		}
	}
	assert.Contains(t, byName, "github.com/CycloneDX/cyclonedx-go", "the SBOM's own library is linked into this binary")
}

func TestComponentOfAReplacedModule(t *testing.T) {
	c := component(debug.Module{Path: "example.com/a", Version: "v1.0.0", Replace: &debug.Module{Path: "example.com/fork", Version: "v1.0.1", Sum: "h1:abc="}})
	assert.Equal(t, "example.com/fork", c.Name)
	assert.Equal(t, "pkg:golang/example.com/fork@v1.0.1", c.PackageURL)
	require.NotNil(t, c.Properties)
	assert.Equal(t, []cdx.Property{{Name: "go:sum", Value: "h1:abc="}, {Name: "go:replaces", Value: "example.com/a"}}, *c.Properties)
}

// TestChecksums writes the list for a small tree and has sha256sum check it, as a user would.
func TestChecksums(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"install.yaml": "a: 1\n", "bin/flink-admission-linux-amd64": "binary", "image/blobs/sha256/x": "blob"}
	for p, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644))
	}
	n, err := WriteChecksums(dir, filepath.Join(dir, ChecksumsFile))
	require.NoError(t, err)
	assert.Equal(t, len(files), n)
	raw, err := os.ReadFile(filepath.Join(dir, ChecksumsFile))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	require.Len(t, lines, len(files))
	assert.True(t, strings.HasSuffix(lines[0], "  bin/flink-admission-linux-amd64"), "sorted by path: %s", lines[0])
	sum := sha256.Sum256([]byte("a: 1\n"))
	assert.Contains(t, lines, hex.EncodeToString(sum[:])+"  install.yaml")

	if _, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command("sha256sum", "-c", ChecksumsFile)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		// A changed file fails the check.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "install.yaml"), []byte("a: 2\n"), 0o644))
		cmd = exec.Command("sha256sum", "-c", ChecksumsFile)
		cmd.Dir = dir
		assert.Error(t, cmd.Run(), "sha256sum -c accepts a changed file")
	}
}

func TestPackageChart(t *testing.T) {
	const repo = "registry.example.com/team/flink-admission"
	digest := "sha256:" + strings.Repeat("0f", 32)
	chartDir := filepath.Join("..", "..", "charts", "flink-admission")
	out := t.TempDir()
	archive, err := PackageChart(chartDir, "v1.2.3", repo+"@"+digest, out)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(out, "flink-admission-1.2.3.tgz"), archive)
	c, err := loader.Load(archive)
	require.NoError(t, err)
	assert.Equal(t, "1.2.3", c.Metadata.Version)
	assert.Equal(t, "v1.2.3", c.Metadata.AppVersion)
	assert.NotEmpty(t, c.CRDObjects(), "the archive carries the CRD")
	for _, f := range c.Raw {
		assert.False(t, strings.HasSuffix(f.Name, "_test.go"), "%s is packaged", f.Name)
		if f.Name == "values.yaml" {
			assert.Contains(t, string(f.Data), "# The server image", "values.yaml keeps its comments")
			assert.Contains(t, string(f.Data), `digest: "`+digest+`"`)
		}
	}

	// The archive installs the released image by digest, as the installers name it.
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName, install.Namespace = "flink-admission", "flink-admission-system"
	install.KubeVersion, err = common.ParseKubeVersion("v1.37.2")
	require.NoError(t, err)
	rel, err := install.Run(c, nil)
	require.NoError(t, err)
	r, ok := rel.(*releasev1.Release)
	require.True(t, ok, "a %T", rel)
	assert.Contains(t, r.Manifest, "image: "+repo+"@"+digest+"\n")
	assert.NotContains(t, r.Manifest, "ghcr.io")

	_, err = PackageChart(chartDir, "not-semver", repo+"@"+digest, out)
	assert.Error(t, err, "a version Helm cannot parse")
	for _, image := range []string{"", repo + ":v1.2.3", repo + "@sha256:short"} {
		_, err = PackageChart(chartDir, "v1.2.3", image, out)
		assert.Error(t, err, "the chart is pinned by digest: %q refused", image)
	}
}
