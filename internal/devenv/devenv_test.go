package devenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShortenHome(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	assert.Equal(t, "~/.cache/flink-admission", displayPath("/home/u/.cache/flink-admission"))
	assert.Equal(t, "/home/other", displayPath("/home/other"))
	assert.Equal(t, "/home/u", displayPath("/home/u"))
	assert.True(t, strings.HasPrefix(displayPath("/home/u/..x/a"), "~/"), "a name starting with two dots is inside")
}

// TestEnvtestBinariesCached decides whether dev announces a cold build of kube-apiserver.
func TestEnvtestBinariesCached(t *testing.T) {
	root := t.TempDir()
	t.Setenv("FLINK_ADMISSION_CACHE", root)
	assert.False(t, envtestBinariesCached(), "an empty cache")

	dir := filepath.Join(root, "envtest", "k8s-1.37.2-etcd-3.6.16-r2")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "etcd"), nil, 0o755))
	assert.False(t, envtestBinariesCached(), "etcd without kube-apiserver")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kube-apiserver"), nil, 0o644))
	assert.False(t, envtestBinariesCached(), "a kube-apiserver that is not executable (a build in progress)")
	require.NoError(t, os.Chmod(filepath.Join(dir, "kube-apiserver"), 0o755))
	assert.True(t, envtestBinariesCached())
}
