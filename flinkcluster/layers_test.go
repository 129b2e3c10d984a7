package flinkcluster_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// module is this repository's module path.
const module = "github.com/flink-admission/flink-admission/"

// TestLayers keeps the domain package at the bottom: flinkcluster imports no package of
// this module but the API types, the admission policy imports nothing from the
// controller, and the controller nothing from the admission side (policy, pipeline,
// webhook). Test files count too, except the simulation's (controller/simulation): it plays
// the whole system, the admission policy in front of the controller, so its generator asks
// the policy which random clusters a user could create.
func TestLayers(t *testing.T) {
	rules := []struct {
		// dir is a folder of the repository; every package under it is checked.
		dir string
		// allowed reports whether a package of dir may import the module's package imp.
		allowed func(imp string) bool
		why     string
	}{
		{"flinkcluster", func(imp string) bool { return imp == "api/v1beta1" || imp == "flinkcluster" },
			"the domain package imports only the API types"},
		{"policy", func(imp string) bool { return !strings.HasPrefix(imp, "controller") },
			"the policy decides by package flinkcluster, not by the controller's code"},
		{"controller", func(imp string) bool {
			return imp != "policy" && imp != "pipeline" && imp != "webhook" && imp != "check"
		}, "the controller decides by package flinkcluster, not by the admission policy's code"},
	}
	fset := token.NewFileSet()
	for _, r := range rules {
		err := filepath.WalkDir(filepath.Join("..", r.dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, spec := range f.Imports {
				imp, err := strconv.Unquote(spec.Path.Value)
				if err != nil {
					return err
				}
				if rest, ok := strings.CutPrefix(imp, module); ok && !r.allowed(rest) &&
					(rest != "policy" || !strings.HasPrefix(filepath.ToSlash(path), "../controller/simulation/")) {
					t.Errorf("%s imports %s: %s", path, imp, r.why)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
