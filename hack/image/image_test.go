package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	testImage   = "example.com/team/flink-admission:v9.8.7"
	testVersion = "v9.8.7-test"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
)

// built is the image written once per test run: both platforms cost a cross-compilation.
var built struct {
	once sync.Once
	dir  string
	res  *Result
	err  error
}

func buildOnce(t *testing.T) (string, *Result) {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "flink-admission-image-test-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = filepath.Join(dir, "image")
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			built.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute) // a cold arm64 cross-compilation on a loaded machine
		defer cancel()
		built.res, built.err = Build(ctx, Options{
			Image:     testImage,
			Out:       built.dir,
			Platforms: testPlatforms,
			Version:   testVersion,
			Commit:    testCommit,
			Created:   time.Unix(1700000000, 0).UTC(),
			RepoRoot:  root,
			Go:        "go",
			BinDir:    filepath.Join(dir, "bin"),
		})
	})
	require.NoError(t, built.err)
	return built.dir, built.res
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(filepath.Dir(built.dir))
	}
	os.Exit(code)
}

// TestImage reads the written layout back as a registry client would see it.
func TestImage(t *testing.T) {
	dir, res := buildOnce(t)
	lp, err := layout.FromPath(dir)
	require.NoError(t, err)
	top, err := lp.ImageIndex()
	require.NoError(t, err)
	topManifest, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, topManifest.Manifests, 1, "the layout names one index")
	named := topManifest.Manifests[0]
	assert.Equal(t, "v9.8.7", named.Annotations[refNameAnnotation], "IMG's tag names the index")
	assert.Equal(t, testImage, named.Annotations[containerdNameAnnotation])
	assert.Equal(t, res.Index, named.Digest)

	idx, err := top.ImageIndex(named.Digest)
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	var platforms []string
	for _, d := range im.Manifests {
		platforms = append(platforms, d.Platform.String())
	}
	sort.Strings(platforms)
	var want []string
	for _, p := range testPlatforms {
		want = append(want, p.String())
	}
	require.Equal(t, want, platforms, "one index for every platform")

	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for _, d := range im.Manifests {
		t.Run(d.Platform.String(), func(t *testing.T) {
			img, err := idx.Image(d.Digest)
			require.NoError(t, err)
			cfg, err := img.ConfigFile()
			require.NoError(t, err)
			assert.Equal(t, "65532:65532", cfg.Config.User, "non-root")
			assert.Equal(t, []string{"/flink-admission"}, cfg.Config.Entrypoint)
			assert.Empty(t, cfg.Config.Cmd, "the Deployment passes serve and its flags")
			assert.Equal(t, d.Platform.Architecture, cfg.Architecture)
			assert.Equal(t, "linux", cfg.OS)
			assert.Equal(t, testCommit, cfg.Config.Labels["org.opencontainers.image.revision"])

			layers, err := img.Layers()
			require.NoError(t, err)
			require.Len(t, layers, 1, "an empty base and the binary")
			files := untar(t, mutate.Extract(img))
			require.Equal(t, []string{"flink-admission"}, keys(files), "the binary alone: no shell, no base image")
			bin := files["flink-admission"]
			assert.Equal(t, int64(0o555), bin.mode, "executable by the non-root user, writable by nobody")

			f, err := elf.NewFile(bytes.NewReader(bin.content))
			require.NoError(t, err)
			assert.Equal(t, machines[d.Platform.Architecture], f.Machine)
			for _, p := range f.Progs {
				assert.NotEqual(t, elf.PT_INTERP, p.Type, "statically linked: no dynamic loader")
			}
			t.Logf("%s: %.1f MiB to pull, binary %.1f MiB", d.Platform, float64(res.Images[d.Platform.String()].Size)/(1<<20), float64(len(bin.content))/(1<<20))
		})
	}
}

// TestImageBinary runs the image's amd64 binary and inspects how it was built.
func TestImageBinary(t *testing.T) {
	dir, res := buildOnce(t)
	lp, err := layout.FromPath(dir)
	require.NoError(t, err)
	top, err := lp.ImageIndex()
	require.NoError(t, err)
	idx, err := top.ImageIndex(res.Index)
	require.NoError(t, err)
	img, err := idx.Image(res.Images["linux/amd64"].Digest)
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "flink-admission")
	layered := untar(t, mutate.Extract(img))["flink-admission"].content
	require.NoError(t, os.WriteFile(bin, layered, 0o755))

	t.Run("the binary copied for the SBOM is the image's", func(t *testing.T) {
		copied, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "bin", "flink-admission-linux-amd64"))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(layered, copied), "-bin-dir holds another binary than the image")
	})

	t.Run("version says which commit it is", func(t *testing.T) {
		out, err := exec.Command(bin, "version").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Regexp(t, `^flink-admission `+testVersion+` \(commit `+testCommit+`, go1\.\d+`, string(out))
	})

	t.Run("built static, with -trimpath", func(t *testing.T) {
		info, err := buildinfo.ReadFile(bin)
		require.NoError(t, err)
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		assert.Equal(t, "true", settings["-trimpath"])
		assert.Equal(t, "0", settings["CGO_ENABLED"])
		// -ldflags is not recorded with -trimpath (it may hold paths): the version
		// subtest shows its -X values took effect.
	})

	t.Run("links no test tooling", func(t *testing.T) {
		out, err := exec.Command("go", "tool", "nm", bin).Output()
		require.NoError(t, err)
		symbols := string(out)
		require.Contains(t, symbols, "github.com/flink-admission/flink-admission/webhook.", "nm lists the program's own symbols")
		for _, pkg := range []string{
			"sigs.k8s.io/controller-runtime/pkg/envtest",
			"sigs.k8s.io/controller-runtime/pkg/internal/testing",
			"sigs.k8s.io/kustomize/",
			"github.com/flink-admission/flink-admission/internal/test/",
			"github.com/flink-admission/flink-admission/internal/devenv",
			"github.com/stretchr/testify",
			// The chart's and the alerts' tests, and the release's SBOM, use these; serve does not.
			"helm.sh/helm/",
			"github.com/prometheus/prometheus/",
			"github.com/CycloneDX/",
			// A Clientset and a SharedInformerFactory link the typed clients, informers and
			// listers of every API group (23 MB of the image's binary); serve needs two groups' typed clients.
			"k8s.io/client-go/kubernetes.",
			"k8s.io/client-go/informers.",
		} {
			assert.NotContains(t, symbols, " "+pkg, "the image's binary links %s", pkg)
		}
	})
}

type file struct {
	mode    int64
	content []byte
}

// untar reads the regular files of a tar stream.
func untar(t *testing.T, r io.ReadCloser) map[string]file {
	t.Helper()
	defer r.Close()
	files := map[string]file{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		require.NoError(t, err)
		content, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[strings.TrimPrefix(h.Name, "/")] = file{mode: h.Mode, content: content}
	}
}

func keys(m map[string]file) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
