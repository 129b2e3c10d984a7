// Command release finishes a release's dist/ after `make release` has written the image
// layout, the binaries and the installers into it: the Helm chart archive, versioned for the
// release and pinned to its image by digest, a CycloneDX SBOM of each binary, read
// from the Go build information the toolchain embeds (the modules linked, with their
// versions and go.sum hashes), and SHA256SUMS over every file, in the format of
// `sha256sum -c`.
//
//	go run ./hack/release -version v0.1.0 -dist dist -chart charts/flink-admission -image ghcr.io/flink-admission/flink-admission@sha256:…
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	version := fs.String("version", "", "the release version (vX.Y.Z)")
	dist := fs.String("dist", "dist", "the release directory: bin/ is read, sbom/ and SHA256SUMS are written")
	chartDir := fs.String("chart", "", "Helm chart directory to package into -dist; empty: none")
	image := fs.String("image", "", "the released image by digest (repository@sha256:…, as the installers name it), which the chart's values are pinned to; required with -chart")
	created := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "SBOM timestamp in Unix seconds (default $SOURCE_DATE_EPOCH, else none: reproducible)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" {
		return fmt.Errorf("-version is required")
	}
	var when time.Time
	if *created != "" {
		var secs int64
		if _, err := fmt.Sscan(*created, &secs); err != nil {
			return fmt.Errorf("-created %q: not Unix seconds", *created)
		}
		when = time.Unix(secs, 0).UTC()
	}
	bins, err := filepath.Glob(filepath.Join(*dist, "bin", "flink-admission-*"))
	if err != nil {
		return err
	}
	if len(bins) == 0 {
		return fmt.Errorf("no binaries in %s", filepath.Join(*dist, "bin"))
	}
	sort.Strings(bins)
	sbomDir := filepath.Join(*dist, "sbom")
	if err := os.MkdirAll(sbomDir, 0o755); err != nil {
		return err
	}
	for _, bin := range bins {
		out := filepath.Join(sbomDir, filepath.Base(bin)+".cdx.json")
		if err := writeSBOM(bin, *version, when, out); err != nil {
			return fmt.Errorf("SBOM of %s: %w", bin, err)
		}
		fmt.Printf("%s: CycloneDX SBOM of %s\n", out, bin)
	}
	if *chartDir != "" {
		if *image == "" {
			return fmt.Errorf("-chart needs -image: the chart is pinned to the released image")
		}
		archive, err := PackageChart(*chartDir, *version, *image, *dist)
		if err != nil {
			return err
		}
		fmt.Printf("%s: Helm chart %s, image %s\n", archive, *chartDir, *image)
	}
	sums := filepath.Join(*dist, ChecksumsFile)
	n, err := WriteChecksums(*dist, sums)
	if err != nil {
		return err
	}
	fmt.Printf("%s: SHA-256 of %d files (check with: cd %s && sha256sum -c %s)\n", sums, n, strings.TrimSuffix(*dist, "/"), ChecksumsFile)
	return nil
}
