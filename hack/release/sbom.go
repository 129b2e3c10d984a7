package main

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// SBOM is a CycloneDX bill of materials of a Go binary: the main module as the BOM's
// subject, every module linked into it as a library component with its package URL
// (pkg:golang/<path>@<version>), and the build settings (GOOS, GOARCH, CGO_ENABLED, the Go
// version, the VCS revision) as properties. Everything comes from the binary's build
// information, so the SBOM describes exactly what was shipped, not what go.mod lists.
func SBOM(info *debug.BuildInfo, version string, created time.Time) *cdx.BOM {
	bom := cdx.NewBOM()
	main := component(info.Main)
	main.Type = cdx.ComponentTypeApplication
	main.Name = "flink-admission"
	main.Version = version
	main.PackageURL = purl(info.Main.Path, version)
	main.BOMRef = main.PackageURL
	props := []cdx.Property{{Name: "go:version", Value: info.GoVersion}, {Name: "go:module", Value: info.Main.Path}}
	for _, s := range info.Settings {
		props = append(props, cdx.Property{Name: "go:build:" + s.Key, Value: s.Value})
	}
	main.Properties = &props
	bom.Metadata = &cdx.Metadata{Component: &main}
	if !created.IsZero() {
		bom.Metadata.Timestamp = created.Format(time.RFC3339)
	}

	components := make([]cdx.Component, 0, len(info.Deps))
	refs := make([]string, 0, len(info.Deps))
	for _, d := range info.Deps {
		c := component(*d)
		components = append(components, c)
		refs = append(refs, c.BOMRef)
	}
	bom.Components = &components
	// The binary depends on every module it links; the build information has no graph.
	bom.Dependencies = &[]cdx.Dependency{{Ref: main.BOMRef, Dependencies: &refs}}
	return bom
}

// component is a linked module; a replaced module is described by its replacement, the code
// that was built, with the original path as a property.
func component(m debug.Module) cdx.Component {
	orig := m.Path
	if m.Replace != nil {
		m = *m.Replace
	}
	c := cdx.Component{
		Type:       cdx.ComponentTypeLibrary,
		Name:       m.Path,
		Version:    m.Version,
		PackageURL: purl(m.Path, m.Version),
	}
	c.BOMRef = c.PackageURL
	var props []cdx.Property
	if m.Sum != "" {
		// go.sum's h1: hash (SHA-256 over the module's file tree), which `go mod verify` checks.
		props = append(props, cdx.Property{Name: "go:sum", Value: m.Sum})
	}
	if orig != m.Path {
		props = append(props, cdx.Property{Name: "go:replaces", Value: orig})
	}
	if len(props) > 0 {
		c.Properties = &props
	}
	return c
}

// purl is a Go module's package URL.
func purl(path, version string) string {
	if version == "" || version == "(devel)" {
		return "pkg:golang/" + path
	}
	return "pkg:golang/" + path + "@" + version
}

// writeSBOM reads a binary's build information and writes its SBOM as CycloneDX 1.6 JSON.
func writeSBOM(bin, version string, created time.Time, out string) error {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("reading the build information: %w", err)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	enc := cdx.NewBOMEncoder(f, cdx.BOMFileFormatJSON).SetPretty(true)
	if err := enc.EncodeVersion(SBOM(info, version, created), cdx.SpecVersion1_6); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
