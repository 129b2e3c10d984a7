package scope

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, namespaces, selector string
		wantNamespaces             []string
		wantErr                    string
	}{
		{name: "empty flags: every cluster"},
		{name: "namespaces sorted, blanks and duplicates dropped", namespaces: " team-b,team-a,,team-b ", wantNamespaces: []string{"team-a", "team-b"}},
		{name: "error: a namespace that is not a DNS label", namespaces: "team-a,Team_B", wantErr: `namespace "Team_B"`},
		{name: "selector in kubectl syntax", selector: "flink.example.com/controller in (flink-admission),!legacy"},
		{name: "error: a malformed selector", selector: "team in (a", wantErr: `label selector "team in (a"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.namespaces, tc.selector)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantNamespaces, s.Namespaces)
			assert.Equal(t, tc.selector == "", s.Selector == nil)
		})
	}
}

func TestContains(t *testing.T) {
	s, err := Parse("team-b,team-c", "flink.example.com/controller=flink-admission")
	require.NoError(t, err)
	ours := map[string]string{"flink.example.com/controller": "flink-admission"}
	cases := []struct {
		name    string
		scope   Scope
		ns      string
		labels  map[string]string
		in      bool
		whyPart string
	}{
		{name: "in: watched namespace, matching labels", scope: s, ns: "team-c", labels: ours, in: true},
		{name: "out: namespace not watched", scope: s, ns: "team-a", labels: ours, whyPart: "namespace team-a is not in --watch-namespaces (team-b,team-c)"},
		{name: "out: labels do not match", scope: s, ns: "team-b", labels: map[string]string{"app": "x"}, whyPart: `do not match --cluster-selector "flink.example.com/controller=flink-admission"`},
		{name: "out: no labels", scope: s, ns: "team-b", whyPart: "--cluster-selector"},
		{name: "in: the zero scope holds everything", scope: All, ns: "anywhere", in: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.in, tc.scope.Contains(tc.ns, tc.labels))
			why := tc.scope.Why(tc.ns, tc.labels)
			if tc.in {
				assert.Empty(t, why)
			} else {
				assert.Contains(t, why, tc.whyPart)
			}
		})
	}
}

func TestString(t *testing.T) {
	s, err := Parse("b,a", "x=y")
	require.NoError(t, err)
	assert.Equal(t, `--watch-namespaces=a,b --cluster-selector="x=y"`, s.String())
	assert.Equal(t, `--watch-namespaces=all --cluster-selector=""`, All.String())
}
