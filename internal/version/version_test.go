package version

import (
	"runtime/debug"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResolve(t *testing.T) {
	stamped := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"},
		}}, true
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	installed := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v1.2.3"}}, true
	}
	// Go 1.24 and later stamp a plain `go build` in a checkout with the commit's tag or
	// pseudo-version (+dirty for uncommitted changes), as they do for `go install`.
	built := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v0.1.1-0.20261201095713-61c15d7abcde+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "61c15d7abcde"}, {Key: "vcs.modified", Value: "true"},
		}}, true
	}
	for _, tc := range []struct {
		name     string
		ver, rev string
		read     func() (*debug.BuildInfo, bool)
		want     Info
	}{
		{"link-time values win over VCS stamping", "v0.1.0", "fff", stamped, Info{Version: "v0.1.0", Commit: "fff", Modified: true, GoVersion: "go1.99"}},
		{"VCS stamping gives the commit of a plain go build", "", "", stamped, Info{Version: Unknown, Commit: "abc123", Modified: true, GoVersion: "go1.99"}},
		{"go install module@version gives the module version", "", "", installed, Info{Version: "v1.2.3", Commit: Unknown, GoVersion: "go1.99"}},
		{"a plain go build in a checkout gives its pseudo-version", "", "", built, Info{Version: "v0.1.1-0.20261201095713-61c15d7abcde+dirty", Commit: "61c15d7abcde", Modified: true, GoVersion: "go1.99"}},
		{"nothing known is unknown", "", "", none, Info{Version: Unknown, Commit: Unknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := resolve(tc.ver, tc.rev, tc.read)
			if tc.want.GoVersion == "" {
				assert.True(t, strings.HasPrefix(got.GoVersion, "go"), got.GoVersion)
				got.GoVersion = ""
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestString(t *testing.T) {
	assert.Equal(t, "flink-admission v0.1.0 (commit abc, modified, go1.26.8)",
		Info{Version: "v0.1.0", Commit: "abc", Modified: true, GoVersion: "go1.26.8"}.String())
}

func TestRegisterMetric(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, RegisterMetric(reg))
	require.NoError(t, RegisterMetric(reg), "a second registration is not an error")
	info := Get()
	want := `# HELP flink_admission_build_info Which build of flink-admission is running; always 1.
# TYPE flink_admission_build_info gauge
flink_admission_build_info{commit="` + info.Commit + `",go_version="` + info.GoVersion + `",version="` + info.Version + `"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), MetricName))
}
