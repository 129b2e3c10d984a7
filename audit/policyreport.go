package audit

import (
	"reflect"
	"sort"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/check"
)

// The PolicyReport of the Kubernetes policy working group (wgpolicyk8s.io/v1alpha2), as
// Kyverno writes it and its Policy Reporter shows it. flink-admission writes one per
// namespace, when the CRD is installed.
const (
	// ReportName is the name of the PolicyReport of each namespace.
	ReportName = "flink-admission"
	// ReportPolicy is the policy every result names; its rule is the policy rule.
	ReportPolicy = "flink-admission"
	// ManagedByLabel marks the reports flink-admission writes (value ReportManager), so
	// that it finds them again to empty them.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ReportManager is the value of ManagedByLabel, and the field manager of the writes.
	ReportManager = "flink-admission"
	// LeftOutAnnotation counts the refusals a report leaves out of its results (its summary
	// counts them all).
	LeftOutAnnotation = "flink-admission.dev/results-left-out"
	// MaxReportResults bounds the results of one report: a namespace with thousands of
	// broken clusters must not grow an object that etcd and every watcher of reports pay for
	// (kubernetes#118776).
	MaxReportResults = 100
)

// PolicyReportGVK is the kind of the reports.
var PolicyReportGVK = schema.GroupVersionKind{Group: "wgpolicyk8s.io", Version: "v1alpha2", Kind: "PolicyReport"}

// PolicyReports returns the report of each namespace of results and of each namespace of
// also (those that have a report from an earlier run: a namespace whose clusters are fixed
// or gone gets an empty one). A report's results are its refusals, one per rule a cluster
// breaks, result "fail", in the order of results, at most maxResults of them (the others
// counted in LeftOutAnnotation); its summary counts every refusal as fail and every cluster
// that breaks no rule as pass (a passing cluster has no result of its own, to keep reports
// small). now stamps the results.
func PolicyReports(results []check.Result, also []string, now time.Time, maxResults int) []*unstructured.Unstructured {
	type nsReport struct {
		pass, fail int
		results    []any
	}
	byNS := map[string]*nsReport{}
	get := func(ns string) *nsReport {
		if byNS[ns] == nil {
			byNS[ns] = &nsReport{results: []any{}}
		}
		return byNS[ns]
	}
	for _, ns := range also {
		get(ns)
	}
	stamp := map[string]any{"seconds": now.Unix(), "nanos": int64(0)}
	for _, r := range results {
		rep := get(r.Namespace)
		if len(r.Errors) == 0 {
			rep.pass++
			continue
		}
		for _, e := range r.Errors {
			rep.fail++
			if len(rep.results) >= maxResults {
				continue
			}
			props := map[string]any{"field": e.Field}
			if e.Ratcheted != nil {
				props["ratcheted"] = strconv.FormatBool(*e.Ratcheted)
			}
			rep.results = append(rep.results, map[string]any{
				"policy":     ReportPolicy,
				"rule":       e.Rule,
				"result":     "fail",
				"source":     ReportPolicy,
				"message":    e.Field + ": " + e.Message,
				"timestamp":  stamp,
				"properties": props,
				"resources": []any{map[string]any{
					"apiVersion": v1beta1.GroupVersion.String(),
					"kind":       v1beta1.Kind,
					"namespace":  r.Namespace,
					"name":       r.Name,
				}},
			})
		}
	}
	namespaces := make([]string, 0, len(byNS))
	for ns := range byNS {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	reports := make([]*unstructured.Unstructured, 0, len(namespaces))
	for _, ns := range namespaces {
		rep := byNS[ns]
		u := &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{
				"name":        ReportName,
				"namespace":   ns,
				"labels":      map[string]any{ManagedByLabel: ReportManager},
				"annotations": map[string]any{LeftOutAnnotation: strconv.Itoa(rep.fail - len(rep.results))},
			},
			"summary": map[string]any{"pass": int64(rep.pass), "fail": int64(rep.fail), "warn": int64(0), "error": int64(0), "skip": int64(0)},
			"results": rep.results,
		}}
		u.SetGroupVersionKind(PolicyReportGVK)
		reports = append(reports, u)
	}
	return reports
}

// SameReport reports whether two reports say the same: the same summary, the same results
// (their timestamps aside) and the same count left out. The server writes a report only when
// it changes, so that an audit of clusters that did not change costs no write.
func SameReport(a, b *unstructured.Unstructured) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.GetAnnotations()[LeftOutAnnotation] != b.GetAnnotations()[LeftOutAnnotation] ||
		!reflect.DeepEqual(a.Object["summary"], b.Object["summary"]) {
		return false
	}
	ra, _, _ := unstructured.NestedSlice(a.Object, "results")
	rb, _, _ := unstructured.NestedSlice(b.Object, "results")
	if len(ra) != len(rb) {
		return false
	}
	for i := range ra {
		ma, okA := ra[i].(map[string]any)
		mb, okB := rb[i].(map[string]any)
		if !okA || !okB {
			return false
		}
		if !reflect.DeepEqual(withoutTimestamp(ma), withoutTimestamp(mb)) {
			return false
		}
	}
	return true
}

func withoutTimestamp(result map[string]any) map[string]any {
	out := make(map[string]any, len(result))
	for k, v := range result {
		if k != "timestamp" {
			out[k] = v
		}
	}
	return out
}
