// Package audit judges the FlinkClusters an API server already stores by the current policy,
// as if each were created now: the clusters created while the webhooks were off, or before a
// rule existed, which ratcheting keeps editable and which otherwise surface one by one at
// their next edit. `flink-admission audit` prints its verdicts with check's reporters;
// `serve --audit-interval` runs it periodically, exports the count of violations and writes
// PolicyReports.
//
// Judge is pure. List reads the clusters page by page, through any client.Reader.
package audit

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flink-admission/flink-admission/api/v1beta1"
	"github.com/flink-admission/flink-admission/check"
	"github.com/flink-admission/flink-admission/policy"
)

// Judge returns the verdict on a stored cluster as if it were created now: the object the
// mutating webhook would pass on (policy.Default on a copy; a cluster stored without the
// webhook lacks its defaults, which any next write adds) judged by the validating webhook's
// rules (policy.Validator.ValidateStored). Each refusal carries its rule, field and message,
// and whether ratcheting keeps the cluster editable despite it. The result is located by
// namespace and name (an empty Source); it holds no patch and no object.
//
// The controller-scope check of serve (--deployment-without-controller) is not judged: it
// is about the install, not the cluster, and a cluster it flags already gets its warning at
// every write.
func Judge(v policy.Validator, stored *v1beta1.FlinkCluster) check.Result {
	r := check.Result{Operation: "CREATE", Errors: []check.FieldError{}, Warnings: []string{}}
	var fc *v1beta1.FlinkCluster
	if stored != nil {
		r.Name, r.Namespace = stored.Name, stored.Namespace
		fc = stored.DeepCopy()
		policy.Default(fc)
	}
	errs, ratcheted, warnings := v.ValidateStored(stored, fc)
	for i, e := range errs {
		r.Errors = append(r.Errors, check.FieldError{
			Field: e.Field, Type: string(e.Type), Rule: policy.RuleOf(e), Message: e.ErrorBody(),
			Ratcheted: ptr.To(ratcheted[i]),
		})
	}
	if warnings != nil {
		r.Warnings = warnings
	}
	r.Allowed = len(r.Errors) == 0
	return r
}

// Options select the clusters an audit reads.
type Options struct {
	// Namespace is the one namespace to read; empty reads every namespace.
	Namespace string
	// Selector selects the clusters by label; nil selects every cluster.
	Selector labels.Selector
	// PageSize is how many clusters one list request returns (DefaultPageSize when zero):
	// the API server answers a large installation in pages, and the audit holds one page at
	// a time.
	PageSize int64
}

// DefaultPageSize is the page size of List, as kubectl's --chunk-size.
const DefaultPageSize = 500

// Run lists the selected clusters page by page and judges each (Judge), in the API
// server's order (by namespace, then name).
//
// +kubebuilder:rbac:groups=flinkoperator.k8s.io,resources=flinkclusters,verbs=list
func Run(ctx context.Context, r client.Reader, v policy.Validator, o Options) ([]check.Result, error) {
	opts := []client.ListOption{client.Limit(o.PageSize)}
	if o.PageSize <= 0 {
		opts[0] = client.Limit(DefaultPageSize)
	}
	if o.Namespace != "" {
		opts = append(opts, client.InNamespace(o.Namespace))
	}
	if o.Selector != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: o.Selector})
	}
	var results []check.Result
	cont := ""
	for {
		var page v1beta1.FlinkClusterList
		if err := r.List(ctx, &page, append(opts, client.Continue(cont))...); err != nil {
			if meta.IsNoMatchError(err) || discovery.IsGroupDiscoveryFailedError(err) {
				return nil, fmt.Errorf("listing FlinkClusters: the API server serves no %s (is the FlinkCluster CRD installed?): %w", v1beta1.GroupVersion, err)
			}
			return nil, fmt.Errorf("listing FlinkClusters: %w", err)
		}
		for i := range page.Items {
			results = append(results, Judge(v, &page.Items[i]))
		}
		if cont = page.Continue; cont == "" {
			return results, nil
		}
	}
}

// Violation counts the refusals of one rule in one namespace.
type Violation struct {
	Namespace, Rule string
}

// Count returns the number of refusals by namespace and rule: what the metric
// flink_admission_stored_violations exports.
func Count(results []check.Result) map[Violation]int {
	counts := map[Violation]int{}
	for _, r := range results {
		for _, e := range r.Errors {
			counts[Violation{Namespace: r.Namespace, Rule: e.Rule}]++
		}
	}
	return counts
}
