package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"
)

const (
	// binaryPath is the only file of the image, and its entrypoint.
	binaryPath = "/flink-admission"
	// user is the image's user (uid:gid), the one the Deployment's securityContext expects.
	user = "65532:65532"
	// mainPackage is what the image runs.
	mainPackage = "./cmd/flink-admission"
	// versionPackage receives the version and commit at link time.
	versionPackage = "github.com/flink-admission/flink-admission/internal/version"

	// refNameAnnotation names an image in an OCI layout (the tag, as tools that read layouts
	// expect); containerdNameAnnotation carries the full reference for containerd's import.
	refNameAnnotation        = "org.opencontainers.image.ref.name"
	containerdNameAnnotation = "io.containerd.image.name"
)

// Options configure Build.
type Options struct {
	// Image is the reference the image is named by (registry/name:tag).
	Image string
	// Out is the directory of the OCI layout; it is replaced.
	Out string
	// Platforms are os/arch pairs, one image each in the index.
	Platforms []v1.Platform
	// Version and Commit are stamped into the binary and the image's annotations.
	Version, Commit string
	// Created is the images' creation time (the commit's time makes builds reproducible).
	Created time.Time
	// RepoRoot is the module to build.
	RepoRoot string
	// Go is the go command.
	Go string
	// BinDir, when set, receives a copy of each platform's binary, named
	// flink-admission-<os>-<arch>: what a release's SBOM is read from.
	BinDir string
}

// Result describes a written image.
type Result struct {
	// Index is the digest of the image index.
	Index v1.Hash
	// Images are the images of the index, by platform ("linux/amd64").
	Images map[string]ImageInfo
}

// ImageInfo is one platform's image.
type ImageInfo struct {
	Digest v1.Hash
	// Size is what a pull transfers: manifest, config and compressed layer.
	Size int64
	// BinarySize is the size of the uncompressed binary.
	BinarySize int64
}

// Build compiles the binary for every platform (in parallel), wraps each in a one-layer
// image on an empty base, and writes them as one index into an OCI layout at o.Out.
func Build(ctx context.Context, o Options) (*Result, error) {
	work, err := os.MkdirTemp("", "flink-admission-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	bins := make([]string, len(o.Platforms))
	g, gctx := errgroup.WithContext(ctx)
	for i, p := range o.Platforms {
		bins[i] = filepath.Join(work, p.OS+"-"+p.Architecture, "flink-admission")
		g.Go(func() error { return compile(gctx, o, p, bins[i]) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	if o.BinDir != "" {
		if err := copyBinaries(o, bins); err != nil {
			return nil, err
		}
	}

	res := &Result{Images: map[string]ImageInfo{}}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, p := range o.Platforms {
		img, size, err := image(bins[i], p, o)
		if err != nil {
			return nil, err
		}
		digest, err := img.Digest()
		if err != nil {
			return nil, err
		}
		pulled, err := pullSize(img)
		if err != nil {
			return nil, err
		}
		res.Images[p.String()] = ImageInfo{Digest: digest, Size: pulled, BinarySize: size}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &p},
		})
	}
	idx = mutate.Annotations(idx, annotations(o)).(v1.ImageIndex)
	if res.Index, err = idx.Digest(); err != nil {
		return nil, err
	}

	if err := os.RemoveAll(o.Out); err != nil {
		return nil, err
	}
	lp, err := layout.Write(o.Out, empty.Index)
	if err != nil {
		return nil, err
	}
	tag := o.Image
	if i := strings.LastIndex(tag, ":"); i > strings.LastIndex(tag, "/") {
		tag = tag[i+1:]
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		refNameAnnotation:        tag,
		containerdNameAnnotation: o.Image,
	})); err != nil {
		return nil, fmt.Errorf("writing the OCI layout %s: %w", o.Out, err)
	}
	return res, nil
}

// copyBinaries copies the built binaries into o.BinDir, the exact files the images hold.
func copyBinaries(o Options, bins []string) error {
	if err := os.MkdirAll(o.BinDir, 0o755); err != nil {
		return err
	}
	for i, p := range o.Platforms {
		content, err := os.ReadFile(bins[i])
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(o.BinDir, "flink-admission-"+p.OS+"-"+p.Architecture), content, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// compile builds a static binary for one platform: no cgo, no local paths (-trimpath), no
// DWARF (-w; the symbol table stays, for `go tool nm` and readable stack traces), and the
// version and commit stamped in.
func compile(ctx context.Context, o Options, p v1.Platform, out string) error {
	ldflags := fmt.Sprintf("-w -X %s.version=%s -X %s.commit=%s", versionPackage, o.Version, versionPackage, o.Commit)
	cmd := exec.CommandContext(ctx, o.Go, "build", "-trimpath", "-ldflags", ldflags, "-o", out, mainPackage)
	cmd.Dir = o.RepoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture, "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s: %w\n%s", p, err, stderr.String())
	}
	return nil
}

// image is an image of one layer holding only the binary, on an empty base.
func image(bin string, p v1.Platform, o Options) (v1.Image, int64, error) {
	layerTar, size, err := binaryLayer(bin, o.Created)
	if err != nil {
		return nil, 0, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, 0, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		History:   v1.History{CreatedBy: "hack/image: " + binaryPath, Created: v1.Time{Time: o.Created}},
		MediaType: types.OCILayer,
	})
	if err != nil {
		return nil, 0, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, 0, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Variant = p.OS, p.Architecture, p.Variant
	cfg.Created = v1.Time{Time: o.Created}
	cfg.Config = v1.Config{
		User:       user,
		Entrypoint: []string{binaryPath},
		WorkingDir: "/",
		Labels:     annotations(o),
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, 0, err
	}
	img = mutate.Annotations(img, annotations(o)).(v1.Image)
	return img, size, nil
}

// binaryLayer is a tar holding the binary, owned by root and executable by all, so the
// non-root user can run it but not change it.
func binaryLayer(bin string, created time.Time) ([]byte, int64, error) {
	content, err := os.ReadFile(bin)
	if err != nil {
		return nil, 0, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg,
		Name:     strings.TrimPrefix(binaryPath, "/"),
		Mode:     0o555,
		Size:     int64(len(content)),
		ModTime:  created,
		Format:   tar.FormatPAX,
	}); err != nil {
		return nil, 0, err
	}
	if _, err := tw.Write(content); err != nil {
		return nil, 0, err
	}
	if err := tw.Close(); err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), int64(len(content)), nil
}

// annotations are the OCI annotations (and config labels) of the images and the index.
func annotations(o Options) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    "flink-admission",
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.revision": o.Commit,
		"org.opencontainers.image.created":  o.Created.UTC().Format(time.RFC3339),
	}
}

// pullSize is the number of bytes a pull of the image transfers.
func pullSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	raw, err := img.RawManifest()
	if err != nil {
		return 0, err
	}
	size := int64(len(raw)) + m.Config.Size
	for _, l := range m.Layers {
		size += l.Size
	}
	return size, nil
}
