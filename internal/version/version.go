// Package version says which build of flink-admission is running: the release version and
// the commit, stamped at link time (-ldflags -X, as `make image` does) or, for a plain
// `go build` in a checkout, read from the VCS information the Go toolchain embeds.
package version

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Set at link time by `make image` and `make run`:
//
//	-ldflags "-X github.com/flink-admission/flink-admission/internal/version.version=v0.1.0
//	          -X github.com/flink-admission/flink-admission/internal/version.commit=<sha>"
var (
	version string
	commit  string
)

// Unknown stands for a version or commit that the build does not carry (go run, go test).
const Unknown = "unknown"

// Info identifies a build.
type Info struct {
	// Version is the release version (a git describe string), or Unknown.
	Version string
	// Commit is the full commit hash the binary was built from, or Unknown.
	Commit string
	// Modified says the working tree had uncommitted changes (known from VCS stamping only).
	Modified bool
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string
}

// Get returns the running binary's build information: the link-time values first, then
// the toolchain's VCS stamping, then Unknown.
func Get() Info {
	return resolve(version, commit, debug.ReadBuildInfo)
}

func resolve(ver, rev string, read func() (*debug.BuildInfo, bool)) Info {
	info := Info{Version: ver, Commit: rev, GoVersion: runtime.Version()}
	if bi, ok := read(); ok {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if info.Commit == "" {
					info.Commit = s.Value
				}
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version // go install module@version
		}
	}
	if info.Version == "" {
		info.Version = Unknown
	}
	if info.Commit == "" {
		info.Commit = Unknown
	}
	return info
}

// String is what `flink-admission version` prints.
func (i Info) String() string {
	s := fmt.Sprintf("flink-admission %s (commit %s", i.Version, i.Commit)
	if i.Modified {
		s += ", modified"
	}
	return s + ", " + i.GoVersion + ")"
}

// MetricName is the build-info gauge: always 1, labelled with the build.
const MetricName = "flink_admission_build_info"

// RegisterMetric registers the build-info gauge on r. Registering it again (a second
// server in one process, as in tests) is not an error.
func RegisterMetric(r prometheus.Registerer) error {
	info := Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: MetricName,
		Help: "Which build of flink-admission is running; always 1.",
		ConstLabels: prometheus.Labels{
			"version":    info.Version,
			"commit":     info.Commit,
			"go_version": info.GoVersion,
		},
	})
	g.Set(1)
	if err := r.Register(g); err != nil {
		if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
			return nil
		}
		return fmt.Errorf("registering %s: %w", MetricName, err)
	}
	return nil
}
