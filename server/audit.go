package server

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/flink-admission/flink-admission/audit"
	"github.com/flink-admission/flink-admission/check"
	"github.com/flink-admission/flink-admission/policy"
)

// storedViolations is the gauge of the periodic audit: the refusals of the stored clusters,
// by namespace and rule, as of the last audit.
var storedViolations = sync.OnceValues(func() (*prometheus.GaugeVec, error) {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "flink_admission_stored_violations",
		Help: "Rules the stored FlinkClusters break, as if created now, by namespace and rule, as of the last audit (--audit-interval).",
	}, []string{"namespace", "rule"})
	return g, crmetrics.Registry.Register(g)
})

// DefaultAuditInterval is --audit-interval's default: a policy upgrade shows in the metric and
// the reports within minutes, for one paginated list of the clusters each time.
const DefaultAuditInterval = 10 * time.Minute

// addAuditor adds the periodic audit to the manager.
func addAuditor(mgr manager.Manager, interval time.Duration, log logr.Logger) error {
	gauge, err := storedViolations()
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	return mgr.Add(&auditor{
		reader: mgr.GetAPIReader(), writer: mgr.GetClient(), discovery: dc,
		interval: interval, gauge: gauge, clock: clock.RealClock{}, log: log,
	})
}

// auditor runs the audit of the stored FlinkClusters every interval (serve --audit-interval):
// it exports flink_admission_stored_violations and, where the PolicyReport CRD is served,
// writes one PolicyReport per namespace.
type auditor struct {
	// reader lists straight from the API server: the manager's cache holds the clusters of
	// the controller's scope only, and the audit reads every namespace a page at a time.
	reader    client.Reader
	writer    client.Client
	discovery discovery.DiscoveryInterface
	interval  time.Duration
	gauge     *prometheus.GaugeVec
	clock     clock.PassiveClock
	log       logr.Logger

	// exported are the series the last run set.
	exported map[audit.Violation]int
	// reportsServed is what the last run found of the PolicyReport CRD, so that its absence
	// (or its arrival) is logged once, not at every run.
	reportsServed *bool
}

// NeedLeaderElection keeps the audit on the elected leader when there is an election (with the
// controller): one writer of the reports. Without one, every replica audits and applies the
// same reports.
func (a *auditor) NeedLeaderElection() bool { return true }

// Start audits at once, then every interval, until ctx is done.
func (a *auditor) Start(ctx context.Context) error {
	ticker := time.NewTicker(a.interval)
	defer ticker.Stop()
	for {
		a.run(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// run is one audit. A failed list keeps the last values of the metric and the reports: an
// audit that could not read the clusters says nothing new about them.
func (a *auditor) run(ctx context.Context) {
	results, err := audit.Run(ctx, a.reader, policy.Validator{}, audit.Options{})
	if err != nil {
		if ctx.Err() == nil {
			a.log.Error(err, "audit of the stored FlinkClusters failed")
		}
		return
	}
	counts := audit.Count(results)
	for v, n := range counts {
		a.gauge.WithLabelValues(v.Namespace, v.Rule).Set(float64(n))
	}
	// A rule fixed in a namespace has no series left. Deleted after the new values are set,
	// rather than by a Reset first, so that a scrape in between never sees an empty gauge.
	for v := range a.exported {
		if _, ok := counts[v]; !ok {
			a.gauge.DeleteLabelValues(v.Namespace, v.Rule)
		}
	}
	a.exported = counts
	a.writeReports(ctx, results)
	a.log.V(1).Info("audited the stored FlinkClusters", "clusters", len(results), "violations", len(counts))
}

// writeReports applies the PolicyReport of every namespace with clusters, and an emptied one
// in every namespace that holds a report of an earlier run; a report that says what it said
// already is left as it is.
//
// +kubebuilder:rbac:groups=wgpolicyk8s.io,resources=policyreports,verbs=get;list;create;update;patch
func (a *auditor) writeReports(ctx context.Context, results []check.Result) {
	gv := audit.PolicyReportGVK.GroupVersion().String()
	_, err := a.discovery.ServerResourcesForGroupVersion(gv)
	served := err == nil
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		a.log.Error(err, "finding out whether the PolicyReport CRD is installed", "groupVersion", gv)
		return
	case a.reportsServed == nil || *a.reportsServed != served:
		if served {
			a.log.Info("the PolicyReport CRD is installed: the audit writes a PolicyReport per namespace", "groupVersion", gv)
		} else {
			a.log.Info("the PolicyReport CRD is not installed: the audit writes no reports", "groupVersion", gv)
		}
	}
	a.reportsServed = &served
	if !served {
		return
	}
	existing := &unstructured.UnstructuredList{}
	existing.SetGroupVersionKind(audit.PolicyReportGVK.GroupVersion().WithKind(audit.PolicyReportGVK.Kind + "List"))
	if err := a.reader.List(ctx, existing, client.MatchingLabels{audit.ManagedByLabel: audit.ReportManager}); err != nil {
		a.log.Error(err, "listing the PolicyReports of the last audit")
		return
	}
	var also []string
	previous := map[string]*unstructured.Unstructured{}
	for i, r := range existing.Items {
		if r.GetName() == audit.ReportName {
			also = append(also, r.GetNamespace())
			previous[r.GetNamespace()] = &existing.Items[i]
		}
	}
	for _, r := range audit.PolicyReports(results, also, a.clock.Now(), audit.MaxReportResults) {
		if audit.SameReport(previous[r.GetNamespace()], r) {
			continue
		}
		err := a.writer.Apply(ctx, client.ApplyConfigurationFromUnstructured(r), client.FieldOwner(audit.ReportManager), client.ForceOwnership)
		if err != nil && ctx.Err() == nil {
			a.log.Error(err, "writing a PolicyReport", "namespace", r.GetNamespace(), "name", r.GetName())
		}
	}
}
