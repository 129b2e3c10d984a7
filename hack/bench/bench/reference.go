package bench

import (
	"path"
	"strings"
)

// The reference is the flink-on-k8s-operator webhook that flink-admission replaces. Its
// figures were measured on another machine, in another run: they are shown beside ours for
// orientation, never divided into ours (allocation counts do compare across machines).
const (
	// ReferenceSource says where the in-process and HTTPS reference figures come from.
	ReferenceSource = "flink-on-k8s-operator webhook, measured elsewhere (shared bench README: " +
		"controller-runtime, full ServeHTTP in-process, 2-core VM, medians, noisy)"
	// ReferenceRSSSource says where the reference server's memory figure comes from.
	ReferenceRSSSource = "issue 9's side-by-side table (server RSS after load)"
	// ReferenceRSSMB is the reference server's RSS after the HTTPS load.
	ReferenceRSSMB = 45
)

// ReferenceInProcess is the reference webhook's full ServeHTTP on one review.
type ReferenceInProcess struct {
	// NsLow and NsHigh bound the medians of several runs.
	NsLow, NsHigh uint64
	Bytes, Allocs uint64
}

// ReferenceHTTPS is the reference webhook over HTTPS on loopback at one concurrency.
type ReferenceHTTPS struct {
	ReqPerSec float64
	P99Ms     float64
}

// referenceInProcess are the reference's figures on the shared review bodies, by review.
var referenceInProcess = map[string]ReferenceInProcess{
	"minimal-mutate-create":   {NsLow: 435_000, NsHigh: 893_000, Bytes: 75_914, Allocs: 1_130},
	"minimal-validate-create": {NsLow: 214_000, NsHigh: 299_000, Bytes: 39_085, Allocs: 302},
	"minimal-validate-update": {NsLow: 381_000, NsHigh: 444_000, Bytes: 58_559, Allocs: 445},
	"typical-mutate-create":   {NsLow: 1_622_000, NsHigh: 1_692_000, Bytes: 301_144, Allocs: 4_729},
	"typical-validate-create": {NsLow: 680_000, NsHigh: 790_000, Bytes: 98_842, Allocs: 892},
	"typical-validate-update": {NsLow: 1_346_000, NsHigh: 1_675_000, Bytes: 192_830, Allocs: 1_787},
}

// referenceHTTPS are the reference's figures for the typical validate UPDATE review (the
// only one measured over HTTPS), by concurrency (all with 0 errors; "~" figures).
var referenceHTTPS = map[string]map[int]ReferenceHTTPS{
	"typical-validate-update": {
		1:  {ReqPerSec: 480, P99Ms: 5},
		16: {ReqPerSec: 960, P99Ms: 86},
		64: {ReqPerSec: 930, P99Ms: 350},
	},
}

// ReferenceFor returns the reference figures matching an in-process benchmark: one of the
// webhook package that runs a whole review through the HTTP handler (BenchmarkServeHTTP…)
// and is named after the review in its last element
// (BenchmarkServeHTTP/typical-validate-update). Stages (…/typical-validate-update/policy,
// BenchmarkDecodeReview/…) and other packages have no reference: the reference measured the
// full handler only.
func ReferenceFor(pkg, name string) *ReferenceInProcess {
	top, _, _ := strings.Cut(name, "/")
	if path.Base(pkg) != "webhook" || !strings.HasPrefix(top, "BenchmarkServeHTTP") {
		return nil
	}
	last := name[strings.LastIndex(name, "/")+1:]
	last = strings.ToLower(strings.ReplaceAll(last, "_", "-"))
	if r, ok := referenceInProcess[last]; ok {
		return &r
	}
	return nil
}

// referenceHTTPSFor returns the reference's figures for review at concurrency, or nil.
func referenceHTTPSFor(review string, concurrency int) *ReferenceHTTPS {
	if r, ok := referenceHTTPS[review][concurrency]; ok {
		return &r
	}
	return nil
}
