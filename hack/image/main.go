// Command image builds the flink-admission OCI image without a container engine (make
// image): a static binary per platform on an empty base, user 65532, no shell, the binary as
// entrypoint, all platforms in one index, written as an OCI layout.
//
//	go run ./hack/image -img registry/flink-admission:v0.1.0 -out dist/image
//
// Push the layout with any OCI tool that reads layouts, for example
// `crane push dist/image registry/flink-admission:v0.1.0 --index` or
// `skopeo copy --all oci:dist/image:v0.1.0 docker://registry/flink-admission:v0.1.0`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	var (
		o          Options
		platforms  string
		created    string
		digestFile string
	)
	fs.StringVar(&o.Image, "img", "flink-admission:latest", "image reference the layout names (registry/name:tag)")
	fs.StringVar(&o.Out, "out", filepath.Join("dist", "image"), "directory of the OCI layout (replaced)")
	fs.StringVar(&platforms, "platforms", "linux/amd64,linux/arm64", "comma-separated os/arch pairs")
	fs.StringVar(&o.Version, "version", "", "version stamped into the binary (default: git describe)")
	fs.StringVar(&o.Commit, "commit", "", "commit stamped into the binary (default: git rev-parse HEAD)")
	fs.StringVar(&created, "created", os.Getenv("SOURCE_DATE_EPOCH"), "creation time in Unix seconds (default $SOURCE_DATE_EPOCH, else the commit's time)")
	fs.StringVar(&o.BinDir, "bin-dir", "", "directory to copy each platform's binary into (flink-admission-<os>-<arch>); empty: none")
	fs.StringVar(&digestFile, "digest-file", "", "file to write the image index digest into (sha256:…), for installers that name the image by digest")
	if err := fs.Parse(args); err != nil {
		return err
	}
	for _, s := range strings.Split(platforms, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(s))
		if err != nil || p.OS == "" || p.Architecture == "" {
			return fmt.Errorf("-platforms: %q is not os/arch", s)
		}
		o.Platforms = append(o.Platforms, *p)
	}
	if o.Version == "" {
		o.Version = git("describe", "--tags", "--always", "--dirty")
	}
	if o.Commit == "" {
		o.Commit = git("rev-parse", "HEAD")
	}
	if created == "" {
		created = git("log", "-1", "--format=%ct")
	}
	secs, err := strconv.ParseInt(created, 10, 64)
	if err != nil {
		return fmt.Errorf("-created %q: not Unix seconds", created)
	}
	o.Created = time.Unix(secs, 0).UTC()
	o.Go = "go"
	if o.RepoRoot, err = os.Getwd(); err != nil {
		return err
	}

	res, err := Build(ctx, o)
	if err != nil {
		return err
	}
	if digestFile != "" {
		if err := os.WriteFile(digestFile, []byte(res.Index.String()+"\n"), 0o644); err != nil {
			return err
		}
	}
	abs, _ := filepath.Abs(o.Out)
	fmt.Printf("%s: OCI image layout of %s (version %s, commit %s), index %s\n", abs, o.Image, o.Version, o.Commit, res.Index)
	names := make([]string, 0, len(res.Images))
	for p := range res.Images {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		i := res.Images[p]
		fmt.Printf("  %-12s %s  %s to pull (binary %s)\n", p, i.Digest, mib(i.Size), mib(i.BinarySize))
	}
	return nil
}

// git returns the output of a git command in the working directory, or "unknown".
func git(args ...string) string {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
