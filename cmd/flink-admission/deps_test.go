package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// module is this repository's module path.
const module = "github.com/flink-admission/flink-admission/"

// testKit names the packages the image's binary must not link: the repository's test kit
// (the fake Flink, the simulated JobManager pods, builders, envtest environments), the dev
// environment, and the test libraries. A prefix ending in "/" covers the packages under it.
// k8s.io/client-go/testing is not among them: client-go's gentype imports it for its fake
// typed clients, in every build.
var testKit = []string{
	module + "internal/test/",
	module + "internal/devenv",
	"testing/",
	"github.com/stretchr/testify/",
	"sigs.k8s.io/controller-runtime/pkg/envtest",
	"sigs.k8s.io/controller-runtime/pkg/internal/testing/",
	"sigs.k8s.io/controller-runtime/pkg/client/fake",
}

// TestDefaultBuildLinksNoTestKit checks, by go list, that the default build of the command
// (the image's binary, built without -tags dev) depends on no package of the test kit; the
// dev build, which does, shows the check sees the test kit where it is linked.
func TestDefaultBuildLinksNoTestKit(t *testing.T) {
	deps := func(args ...string) []string {
		t.Helper()
		out, err := exec.Command("go", append(append([]string{"list", "-deps"}, args...), ".")...).Output()
		if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
			t.Fatalf("go list -deps %v: %v\n%s", args, err, exit.Stderr)
		}
		require.NoError(t, err, "go list -deps %v", args)
		return strings.Fields(string(out))
	}
	linked := func(pkgs []string) []string {
		var found []string
		for _, p := range pkgs {
			for _, k := range testKit {
				if p == strings.TrimSuffix(k, "/") || strings.HasSuffix(k, "/") && strings.HasPrefix(p, k) {
					found = append(found, p)
					break
				}
			}
		}
		return found
	}

	require.Empty(t, linked(deps()), "the default build of cmd/flink-admission links the test kit")
	require.Contains(t, linked(deps("-tags", "dev")), module+"internal/test/flinksim",
		"the dev build links the simulated Flink, or the check no longer sees the test kit")
}
