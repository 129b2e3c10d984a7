package devenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/internal/test/realflink"
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

// TestRealSampleRunsTheTestJobOnFilesOfItsOwn guards the sample dev --flink=real writes: the
// release it has jars for, the test job, storage a local JVM can reach, and the rest of the
// sample (the Deployment JobManager, HA) kept.
func TestRealSampleRunsTheTestJobOnFilesOfItsOwn(t *testing.T) {
	dir, err := writeSamples(filepath.Join(t.TempDir(), "samples"))
	require.NoError(t, err)
	path := filepath.Join(dir, "deployment-mode.yaml")
	require.NoError(t, realSample(path, "/state"))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	fc := &v1beta1.FlinkCluster{}
	require.NoError(t, yaml.UnmarshalStrict(raw, fc))
	assert.Equal(t, "statemachine", fc.Name)
	assert.Equal(t, "flink:"+RealFlinkVersion, fc.Spec.Image.Name)
	assert.Equal(t, realflink.CountingJob, *fc.Spec.Job.ClassName)
	assert.Equal(t, realflink.JobsJarInImage, *fc.Spec.Job.JarFile)
	assert.Equal(t, v1beta1.JobManagerDeploymentTypeDeployment, fc.Spec.JobManager.DeploymentType)
	assert.Equal(t, "file:///state/ha", fc.Spec.FlinkProperties["high-availability.storageDir"])
	assert.Equal(t, "kubernetes", fc.Spec.FlinkProperties["high-availability.type"])
	for k, v := range fc.Spec.FlinkProperties {
		assert.False(t, strings.HasPrefix(v, "s3://"), "%s=%s: no S3 here", k, v)
	}
}
