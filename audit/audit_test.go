package audit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/audit"
	"github.com/flink-admission/flink-admission/check"
	"github.com/flink-admission/flink-admission/internal/test/builder"
	"github.com/flink-admission/flink-admission/policy"
)

// TestJudge: a stored cluster is judged as the next write would see it, and each refusal
// names its rule and field and says whether ratcheting keeps the cluster editable.
func TestJudge(t *testing.T) {
	type finding struct {
		Rule, Field string
		Ratcheted   bool
	}
	cases := []struct {
		name   string
		stored *v1beta1.FlinkCluster
		want   []finding
	}{
		{name: "allow: a valid cluster", stored: builder.MakeFlinkCluster("ok", "team-a").Obj()},
		{name: "allow: a Deployment cluster stored without the webhook's defaults gets them first",
			stored: builder.MakeFlinkCluster("dep", "team-a").DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).HA().Obj()},
		{name: "refuse, ratcheted: a flinkVersion the policy no longer accepts",
			stored: builder.MakeFlinkCluster("old", "team-a").FlinkVersion("latest").Obj(),
			want:   []finding{{Rule: policy.RuleFlinkVersion, Field: "spec.flinkVersion", Ratcheted: true}}},
		{name: "refuse, not ratcheted: last-state without a Deployment JobManager",
			stored: builder.MakeFlinkCluster("ls", "team-a").Job(func(j *v1beta1.JobSpec) { j.UpgradeMode = ptr.To(v1beta1.UpgradeModeLastState) }).Obj(),
			want:   []finding{{Rule: policy.RuleLastStateRequiresKubernetesHA, Field: "spec.job.upgradeMode"}}},
		{name: "refuse: no object", want: []finding{{Rule: policy.RuleNoObject}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := audit.Judge(policy.Validator{}, tc.stored)
			var got []finding
			for _, e := range r.Errors {
				require.NotNil(t, e.Ratcheted, "every refusal says whether it ratchets")
				assert.NotEmpty(t, e.Message)
				got = append(got, finding{Rule: e.Rule, Field: e.Field, Ratcheted: *e.Ratcheted})
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, len(tc.want) == 0, r.Allowed)
			assert.Empty(t, r.Source, "located by namespace and name")
			if tc.stored != nil {
				assert.Equal(t, tc.stored.Namespace+"/"+tc.stored.Name, r.Namespace+"/"+r.Name)
			}
		})
	}
}

// TestJudgeLeavesTheStoredObjectAlone: defaulting works on a copy.
func TestJudgeLeavesTheStoredObjectAlone(t *testing.T) {
	stored := builder.MakeFlinkCluster("dep", "team-a").DeploymentType(v1beta1.JobManagerDeploymentTypeDeployment).HA().Obj()
	before := stored.DeepCopy()
	audit.Judge(policy.Validator{}, stored)
	assert.Equal(t, before, stored)
}

func refused(ns, name string, rules ...string) check.Result {
	r := check.Result{Namespace: ns, Name: name, Allowed: len(rules) == 0}
	for _, rule := range rules {
		r.Errors = append(r.Errors, check.FieldError{Rule: rule, Field: "spec.x", Message: "broken", Ratcheted: ptr.To(true)})
	}
	return r
}

func TestCount(t *testing.T) {
	got := audit.Count([]check.Result{
		refused("a", "one", "r1", "r2"), refused("a", "two", "r1"), refused("b", "three", "r1"), refused("b", "fine"),
	})
	assert.Equal(t, map[audit.Violation]int{{Namespace: "a", Rule: "r1"}: 2, {Namespace: "a", Rule: "r2"}: 1, {Namespace: "b", Rule: "r1"}: 1}, got)
}

// TestPolicyReports: one report per namespace, results bounded, a summary of every cluster,
// and an empty report for a namespace that had one and has nothing wrong now.
func TestPolicyReports(t *testing.T) {
	now := time.Unix(1700000000, 0)
	results := []check.Result{refused("a", "fine"), refused("a", "one", "r1", "r2"), refused("a", "two", "r3")}
	for i := range 5 {
		results = append(results, refused("big", fmt.Sprintf("c%d", i), "r1"))
	}
	reports := audit.PolicyReports(results, []string{"gone"}, now, 3)
	require.Len(t, reports, 3)
	byNS := map[string]*unstructured.Unstructured{}
	for _, r := range reports {
		assert.Equal(t, audit.PolicyReportGVK, r.GroupVersionKind())
		assert.Equal(t, audit.ReportName, r.GetName())
		assert.Equal(t, audit.ReportManager, r.GetLabels()[audit.ManagedByLabel])
		byNS[r.GetNamespace()] = r
	}

	cases := []struct {
		ns                 string
		pass, fail, listed int64
		leftOut, firstRule string
		firstCluster       string
	}{
		{ns: "a", pass: 1, fail: 3, listed: 3, leftOut: "0", firstRule: "r1", firstCluster: "one"},
		{ns: "big", fail: 5, listed: 3, leftOut: "2", firstRule: "r1", firstCluster: "c0"},
		{ns: "gone", leftOut: "0"},
	}
	for _, tc := range cases {
		t.Run(tc.ns, func(t *testing.T) {
			r := byNS[tc.ns]
			require.NotNil(t, r)
			summary, _, _ := unstructured.NestedMap(r.Object, "summary")
			assert.Equal(t, map[string]any{"pass": tc.pass, "fail": tc.fail, "warn": int64(0), "error": int64(0), "skip": int64(0)}, summary)
			items, _, _ := unstructured.NestedSlice(r.Object, "results")
			assert.Len(t, items, int(tc.listed))
			assert.Equal(t, tc.leftOut, r.GetAnnotations()[audit.LeftOutAnnotation])
			if tc.listed == 0 {
				return
			}
			first := items[0].(map[string]any)
			assert.Equal(t, "fail", first["result"])
			assert.Equal(t, audit.ReportPolicy, first["policy"])
			assert.Equal(t, tc.firstRule, first["rule"])
			assert.Equal(t, "spec.x: broken", first["message"])
			assert.Equal(t, map[string]any{"field": "spec.x", "ratcheted": "true"}, first["properties"])
			res := first["resources"].([]any)[0].(map[string]any)
			assert.Equal(t, tc.firstCluster, res["name"])
			assert.Equal(t, v1beta1.Kind, res["kind"])
			assert.Equal(t, map[string]any{"seconds": now.Unix(), "nanos": int64(0)}, first["timestamp"])
		})
	}
}

// TestSameReport: a report that says the same (a later run, read back from the API server)
// needs no write; one whose results, summary or left-out count changed does.
func TestSameReport(t *testing.T) {
	results := []check.Result{refused("a", "one", "r1"), refused("a", "fine")}
	first := audit.PolicyReports(results, nil, time.Unix(100, 0), 10)[0]
	stored := &unstructured.Unstructured{}
	data, err := first.MarshalJSON()
	require.NoError(t, err)
	require.NoError(t, stored.UnmarshalJSON(data), "as the API server returns it")

	fixed := []check.Result{refused("a", "one"), refused("a", "fine")}
	other := []check.Result{refused("a", "one", "r2"), refused("a", "fine")}
	more := append([]check.Result{refused("a", "two", "r1")}, results...)
	cases := []struct {
		name string
		next *unstructured.Unstructured
		want bool
	}{
		{name: "same: a later run over the same clusters", next: audit.PolicyReports(results, nil, time.Unix(200, 0), 10)[0], want: true},
		{name: "changed: the cluster is fixed", next: audit.PolicyReports(fixed, nil, time.Unix(200, 0), 10)[0]},
		{name: "changed: another rule", next: audit.PolicyReports(other, nil, time.Unix(200, 0), 10)[0]},
		{name: "changed: another refused cluster, past the bound", next: audit.PolicyReports(more, nil, time.Unix(200, 0), 1)[0]},
		{name: "changed: no report yet", next: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, audit.SameReport(stored, tc.next))
		})
	}
}
