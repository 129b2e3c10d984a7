// Command installer renders each overlay of deploy/ into a one-file installer in dist/,
// with the image reference set (make installer IMG=registry/flink-admission:v0.1.0).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flink-admission/flink-admission/deploy"
	"github.com/flink-admission/flink-admission/deploy/installer"
)

func main() {
	img := flag.String("img", "flink-admission:latest", "image reference of flink-admission (registry/name:tag or registry/name@sha256:…)")
	out := flag.String("out", "dist", "directory the installers are written to")
	flag.Parse()
	if err := run(*img, *out); err != nil {
		fmt.Fprintf(os.Stderr, "installer: %v\n", err)
		os.Exit(1)
	}
}

func run(img, out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for _, i := range installer.Installers {
		y, err := installer.Render(deploy.Files(), i.Overlay, img)
		if err != nil {
			return err
		}
		file := filepath.Join(out, i.File)
		if err := os.WriteFile(file, y, 0o644); err != nil {
			return err
		}
		fmt.Printf("%s: deploy/%s with %s\n", file, i.Overlay, img)
	}
	return nil
}
