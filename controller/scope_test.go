package controller

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/scope"
)

// TestScopedCacheOptions: the cache watches the scope's namespaces only (every kind) and the
// FlinkClusters its selector selects; the zero scope adds nothing to CacheOptions.
func TestScopedCacheOptions(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"flink.example.com/controller": "flink-admission"})
	cases := []struct {
		name           string
		scope          scope.Scope
		wantNamespaces map[string]cache.Config
		wantSelector   labels.Selector
	}{
		{name: "every cluster: no namespace, no FlinkCluster selector", scope: scope.All},
		{name: "namespaces: watched only there", scope: scope.Scope{Namespaces: []string{"team-b", "team-c"}},
			wantNamespaces: map[string]cache.Config{"team-b": {}, "team-c": {}}},
		{name: "selector: FlinkClusters selected by label", scope: scope.Scope{Selector: sel}, wantSelector: sel},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := ScopedCacheOptions(tc.scope)
			assert.Equal(t, tc.wantNamespaces, opts.DefaultNamespaces)
			var fcBy *cache.ByObject
			for obj, by := range opts.ByObject {
				if _, ok := obj.(*v1beta1.FlinkCluster); ok {
					fcBy = &by
				}
			}
			if tc.wantSelector == nil {
				assert.Nil(t, fcBy, "no FlinkCluster entry")
				assert.Len(t, opts.ByObject, len(CacheOptions().ByObject))
				return
			}
			require.NotNil(t, fcBy)
			assert.Equal(t, tc.wantSelector.String(), fcBy.Label.String())
		})
	}
}

// TestScopeFlags: --watch-namespaces and --cluster-selector fill Options.Scope; a bad value
// is a usage error that names the flag's problem.
func TestScopeFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		want    string
		wantErr string
	}{
		{name: "unset: every cluster", want: scope.All.String()},
		{name: "both set", args: []string{"--watch-namespaces=team-c,team-b", "--cluster-selector=team=b"},
			want: `--watch-namespaces=team-b,team-c --cluster-selector="team=b"`},
		{name: "error: bad namespace", args: []string{"--watch-namespaces=Team B"}, wantErr: `namespace "Team B"`},
		{name: "error: bad selector", args: []string{"--cluster-selector=team in (b"}, wantErr: "label selector"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var o Options
			o.BindFlags(fs)
			err := fs.Parse(tc.args)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, o.Scope.String())
		})
	}
}
