// Package installer renders the overlays of deploy/ into one-file installers, each with the
// image reference set, as kustomize would with an `images:` entry: what `make installer`
// writes into dist/ for `kubectl apply -f`. It uses kustomize's Go API, so it belongs to
// hack/installer and the tests, never to the server binary.
package installer

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// Installer is one rendered overlay.
type Installer struct {
	// Overlay is the kustomization, relative to deploy/.
	Overlay string
	// File is the installer's file name in dist/.
	File string
}

// Installers are the overlays `make installer` renders, one file each.
var Installers = []Installer{
	{Overlay: "overlays/self-signed", File: "install.yaml"},
	{Overlay: "overlays/cert-manager", File: "install-cert-manager.yaml"},
	{Overlay: "overlays/webhook-only", File: "install-webhook-only.yaml"},
	{Overlay: "overlays/admission-policy", File: "install-admission-policy.yaml"},
}

// ImageName is the image name the manifests refer to, which an installer replaces.
const ImageName = "flink-admission"

// Render builds overlay (a directory of files, which holds deploy/) with image as the
// flink-admission image (registry/name:tag or registry/name@sha256:…), and returns the
// objects as one multi-document YAML stream under a header that says how it was made.
func Render(files fs.FS, overlay, image string) ([]byte, error) {
	img, err := imageEntry(image)
	if err != nil {
		return nil, err
	}
	mem := filesys.MakeFsInMemory()
	if err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		content, err := fs.ReadFile(files, p)
		if err != nil {
			return err
		}
		return mem.WriteFile(path.Join("/deploy", p), content)
	}); err != nil {
		return nil, err
	}
	// The installer is a kustomization of its own that uses the overlay as its resource and
	// sets the image, exactly what the docs tell users to write.
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: []string{path.Join("../deploy", overlay)},
		Images:    []types.Image{img},
	}
	raw, err := yaml.Marshal(k)
	if err != nil {
		return nil, err
	}
	if err := mem.WriteFile("/installer/kustomization.yaml", raw); err != nil {
		return nil, err
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(mem, "/installer")
	if err != nil {
		return nil, fmt.Errorf("rendering %s: %w", overlay, err)
	}
	body, err := m.AsYaml()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# flink-admission installer: deploy/%s with the image %s.\n", overlay, image)
	fmt.Fprintf(&out, "# Rendered by `make installer IMG=%s`; apply with `kubectl apply -f FILE`.\n", image)
	out.WriteString("---\n")
	out.Write(body)
	return out.Bytes(), nil
}

// imageEntry is the kustomize images entry that replaces flink-admission by image.
func imageEntry(image string) (types.Image, error) {
	if _, err := name.ParseReference(image); err != nil {
		return types.Image{}, fmt.Errorf("image %q: %w (want registry/name:tag or registry/name@sha256:…)", image, err)
	}
	img := types.Image{Name: ImageName, NewName: image}
	if i := strings.Index(image, "@"); i >= 0 {
		img.NewName, img.Digest = image[:i], image[i+1:]
	} else if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		img.NewName, img.NewTag = image[:i], image[i+1:]
	}
	return img, nil
}
