package bench

import (
	"fmt"
	"io"
	"path"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Row is one line of the table.
type Row struct {
	// Section is 1 (in-process) to 6 (the controller on the real control plane).
	Section int
	// What is measured; Figures the absolute figures; Ratio the ratios measured in the same
	// run; Reference the reference webhook's figures, measured elsewhere.
	What, Figures, Ratio, Reference string
}

// Section titles, by number.
var sectionTitles = map[int]string{
	1: "in-process",
	2: "HTTPS loopback",
	3: "through kube-apiserver",
	4: "memory",
	5: "CEL cost",
	6: "controller, real control plane",
}

var printer = message.NewPrinter(language.English)

// Rows turns the report into the table's rows, section by section.
func (r *Report) Rows() []Row {
	var rows []Row
	for _, b := range r.InProcess {
		row := Row{
			Section: 1,
			What:    path.Base(b.Package) + " " + strings.TrimPrefix(b.Name, "Benchmark"),
			Figures: printer.Sprintf("%s/op, %d B/op, %d allocs/op", duration(b.NsPerOp), b.BytesPerOp, b.AllocsPerOp),
		}
		if ref := b.Reference; ref != nil {
			// Allocation counts compare across machines, times do not: only allocs get a ratio,
			// and it stays in the reference column, apart from the same-run ratios.
			row.Reference = printer.Sprintf("%s–%s, %d B, %d allocs (ours: allocs ×%.2f)", duration(float64(ref.NsLow)), duration(float64(ref.NsHigh)), ref.Bytes, ref.Allocs,
				float64(b.AllocsPerOp)/float64(ref.Allocs))
		}
		rows = append(rows, row)
	}
	for _, h := range r.HTTPS {
		row := Row{
			Section: 2,
			What:    printer.Sprintf("%s c=%d (%d req)", h.Review, h.Concurrency, h.Requests),
			Figures: printer.Sprintf("%.0f req/s; p50 %.2f / p99 %.2f / p99.9 %.2f ms; %d errors", h.ReqPerSec, h.P50Ms, h.P99Ms, h.P999Ms, errorCount(h.Errors)),
		}
		if h.Incomplete {
			row.Figures += " (time limit hit)"
		}
		if base := httpsBase(r.HTTPS, h.Review); base != nil && base.ReqPerSec > 0 && h.Concurrency != base.Concurrency {
			row.Ratio = fmt.Sprintf("req/s ×%.2f of c=%d", h.ReqPerSec/base.ReqPerSec, base.Concurrency)
		}
		if ref := h.Reference; ref != nil {
			row.Reference = printer.Sprintf("~%.0f req/s, p99 ~%.0f ms", ref.ReqPerSec, ref.P99Ms)
		}
		rows = append(rows, row)
	}
	if a := r.APIServer; a != nil {
		for _, op := range a.Ops {
			row := Row{
				Section: 3,
				What:    fmt.Sprintf("%s ×%d, (%s) %s", op.Operation, op.Count, op.Scenario, ScenarioDescriptions[op.Scenario]),
				Figures: fmt.Sprintf("p50 %.2f ms, p99 %.2f ms", op.P50Ms, op.P99Ms),
			}
			var ratios []string
			for _, q := range a.Ratios {
				if q.Operation == op.Operation && strings.HasPrefix(q.Of, op.Scenario+"/") {
					ratios = append(ratios, fmt.Sprintf("(%s) p50 ×%.2f, p99 ×%.2f", strings.ReplaceAll(q.Of, "/", ")/("), q.P50, q.P99))
				}
			}
			row.Ratio = strings.Join(ratios, "; ")
			rows = append(rows, row)
		}
		if w := a.WebhookCalls; w != nil {
			var api, handler []string
			for _, k := range sortedKeys(w.AdmissionMeanMs) {
				api = append(api, fmt.Sprintf("%s %.2f ms", k, w.AdmissionMeanMs[k]))
			}
			for _, k := range sortedKeys(w.HandlerMeanMs) {
				handler = append(handler, fmt.Sprintf("%s %.2f ms", k, w.HandlerMeanMs[k]))
			}
			rows = append(rows, Row{
				Section: 3,
				What:    fmt.Sprintf("a webhook call in (c), mean of %d", w.Calls),
				Figures: fmt.Sprintf("API server: %s; its HTTP round trip %.2f ms (review of %.1f KiB); webhook handler: %s",
					strings.Join(api, ", "), w.RoundTripMeanMs, w.RequestBytesMean/1024, strings.Join(handler, ", ")),
			})
		}
	}
	for _, m := range r.Memory {
		row := Row{Section: 4, What: "RSS of serve, " + m.When, Figures: fmt.Sprintf("%.1f MiB (peak %.1f MiB)", mib(m.RSSKiB), mib(m.PeakKiB)), Reference: m.Reference}
		if m.AnonKiB+m.FileKiB > 0 {
			row.Figures += fmt.Sprintf(": %.1f MiB allocated, %.1f MiB of mapped files (the binary)", mib(m.AnonKiB), mib(m.FileKiB))
		}
		if m.Note != "" {
			row.Figures += "; " + m.Note
		}
		rows = append(rows, row)
	}
	if c := r.CEL; c != nil {
		rows = append(rows, Row{
			Section: 5, What: fmt.Sprintf("all %d rules", len(c.Rules)),
			Figures: printer.Sprintf("total %d (API server limit %d per CRD)", c.Total, c.PerCRDLimit),
		})
		for i, rule := range c.Rules {
			if i == 3 {
				break
			}
			rows = append(rows, Row{
				Section: 5, What: fmt.Sprintf("largest #%d at %s", i+1, rule.Location),
				Figures: printer.Sprintf("%d (limit %d per rule)", rule.Cost, c.PerRuleLimit),
			})
		}
	}
	if c := r.Controller; c != nil {
		rows = append(rows, controllerRows(c)...)
	}
	for _, f := range r.Failures {
		rows = append(rows, Row{What: "not measured", Figures: f})
	}
	return rows
}

// controllerRows are section 6's rows: one per phase, one per skipped phase, the steady
// state.
func controllerRows(c *ControllerResult) []Row {
	var rows []Row
	// CPU is the sum over the replicas, RSS that of the largest.
	what := printer.Sprintf("%d Deployment-mode clusters, %d replica(s), %d KWOK nodes, simulated Flink: ", c.Clusters, c.Replicas, c.Nodes)
	for _, p := range c.Phases {
		figures := printer.Sprintf("%.1f s (%d of %d clusters); %.1f reconciles per cluster; serve's CPU %.1f s, RSS %.1f MiB (peak %.1f MiB); the machine's CPU %.1f s, of which the simulated Flink's %.1f s",
			p.Seconds, p.Done, c.Clusters, p.ReconcilesPerCluster, p.CPUSeconds, mib(p.RSSKiB), mib(p.PeakKiB), p.MachineCPUSeconds, p.SimulatedFlinkCPUSeconds)
		if len(p.Plane.CPUSeconds) > 0 {
			figures += "; the control plane's CPU: " + componentCPU(p.Plane)
		}
		if p.ClusterIPAllocations > 0 {
			figures += printer.Sprintf("; %d ClusterIP allocations, %.1f s (the API server makes them one at a time)", p.ClusterIPAllocations, p.ClusterIPAllocationSeconds)
		}
		if p.Plane.APIRequestsPerCluster > 0 {
			figures += printer.Sprintf("; %.1f API requests per cluster (%s)", p.Plane.APIRequestsPerCluster, strings.Join(p.Plane.topKinds(4), ", "))
		}
		if len(p.RequestsPerClusterByClient) > 0 {
			figures += printer.Sprintf("; the controller's own %.1f per cluster (%s)", p.ControllerRequestsPerCluster, strings.Join(p.topControllerKinds(4), ", "))
		}
		switch {
		case p.Killed != "":
			// Only the update phase kills a replica; there IDsChanged counts jobs run twice.
			figures += printer.Sprintf("; killed %s; %d jobs run twice", p.Killed, p.IDsChanged)
		case p.IDsChanged > 0:
			figures += printer.Sprintf("; %d job IDs changed", p.IDsChanged)
		}
		row := Row{Section: 6, What: what + p.Name, Figures: figures}
		if p.FloorSeconds > 0 {
			row.Ratio = printer.Sprintf("×%.2f of the control plane's floor, %.1f s (%d JobManager pods of the clusters' objects, created directly; the machine's CPU %.1f s", p.Seconds/p.FloorSeconds, p.FloorSeconds, p.FloorDone, p.FloorMachineCPUSeconds)
			if fp := p.FloorPlane; fp != nil {
				row.Ratio += printer.Sprintf(", the control plane's %s; %.1f API requests per cluster", componentCPU(*fp), fp.APIRequestsPerCluster)
			}
			row.Ratio += printer.Sprintf("; %.1f s of ClusterIP allocations); the machine's CPU ×%.2f of the floor's", p.FloorClusterIPAllocationSeconds, p.MachineCPUSeconds/p.FloorMachineCPUSeconds)
			if fp := p.FloorPlane; fp != nil {
				row.Ratio += printer.Sprintf(", kube-apiserver's and etcd's ×%.2f", apiServerCPURatio(p.Plane, *fp))
			}
		}
		if ff := p.FlinkFloor; ff != nil && ff.Seconds > 0 {
			row.Ratio += printer.Sprintf("; ×%.2f of the same without the controller, %.1f s (%d jobs of the same FlinkClusters, their objects created directly, on the simulated Flink; the machine's CPU %.1f s, the control plane's %s; %.1f API requests per cluster; %.1f s of ClusterIP allocations); the machine's CPU ×%.2f of it, kube-apiserver's and etcd's ×%.2f",
				p.Seconds/ff.Seconds, ff.Seconds, ff.Done, ff.MachineCPUSeconds, componentCPU(ff.Plane), ff.Plane.APIRequestsPerCluster, ff.ClusterIPAllocationSeconds, p.MachineCPUSeconds/ff.MachineCPUSeconds, apiServerCPURatio(p.Plane, ff.Plane))
		}
		rows = append(rows, row)
	}
	for _, s := range c.Skipped {
		rows = append(rows, Row{Section: 6, What: what + s, Figures: "not run"})
	}
	if s := c.Steady; s != nil {
		rows = append(rows, Row{
			Section: 6,
			What:    printer.Sprintf("%ssteady state, %.0f s with %d of %d jobs Running, %d live replica(s), from %.0f s after the last phase (its rollouts done)", what, s.Seconds, s.Running, c.Clusters, s.Replicas, s.RolloutsSettledSeconds),
			Figures: printer.Sprintf("per cluster per minute: %.4f CPU s, %.2f Flink calls, %.3f of the controller's API requests (%.3f without its shard Leases)",
				s.CPUSecondsPerClusterMinute, s.FlinkCallsPerClusterMinute, s.ControllerRequestsPerClusterMinute, s.ControllerClusterRequestsPerClusterMinute),
			Ratio: printer.Sprintf("%.0f clusters per CPU core (60 / CPU s per cluster per minute)", s.ClustersPerCore),
		})
	}
	return rows
}

func mib(kib uint64) float64 { return float64(kib) / 1024 }

// httpsBase is the run at the lowest concurrency of the same review.
func httpsBase(runs []HTTPSRun, review string) *HTTPSRun {
	var base *HTTPSRun
	for i := range runs {
		if runs[i].Review == review && (base == nil || runs[i].Concurrency < base.Concurrency) {
			base = &runs[i]
		}
	}
	return base
}

func errorCount(errs map[string]int) int {
	n := 0
	for _, c := range errs {
		n += c
	}
	return n
}

// duration formats nanoseconds with a unit that keeps three significant digits.
func duration(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	default:
		return fmt.Sprintf("%.0f ns", ns)
	}
}

// WriteMarkdown writes the machine line and the table as Markdown.
func (r *Report) WriteMarkdown(w io.Writer) error {
	m := r.Machine
	mode := ""
	if r.Quick {
		mode = " — BENCH_QUICK (small counts: a smoke run, not figures)"
	}
	fmt.Fprintf(w, "Measured %s on %d CPUs (%s), load average %s at the start and %s at the end, %s %s/%s; %.0f s%s.\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 MST"), m.CPUs, m.CPUModel, m.LoadStart, m.LoadEnd, m.GoVersion, m.OS, m.Arch, r.Seconds, mode)
	fmt.Fprintln(w, "| | measurement | figures | ratio (same run) | reference webhook (measured elsewhere) |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, row := range r.Rows() {
		section := sectionTitles[row.Section]
		if section == "" {
			section = "—"
		}
		cells := []string{section, row.What, row.Figures, row.Ratio, row.Reference}
		for i := range cells {
			cells[i] = strings.ReplaceAll(cells[i], "|", `\|`)
		}
		if _, err := fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | ")); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "\nReference: %s; its RSS from %s. Timing figures are noisy on a shared machine: compare the ratios of one run.\n", ReferenceSource, ReferenceRSSSource)
	return err
}
