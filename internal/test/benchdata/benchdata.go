// Package benchdata holds the admission review bodies the benchmarks share: minimal and
// typical (copies of the shared benchmark bodies) and large (~100 KB objects, made from
// the typical one by TestLargeReviews -update), each as mutate CREATE, validate CREATE and
// validate UPDATE. Benchmarks are named after them: <size>-<webhook>-<operation>.
package benchdata

import (
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/flink-admission/flink-admission/api/v1beta1"
)

//go:embed reviews/*.json
var files embed.FS

// Review is one benchmark review.
type Review struct {
	// Name is <size>-<webhook>-<operation>, e.g. typical-validate-update.
	Name string
	// Body is the AdmissionReview request body, as the API server sends it.
	Body []byte
	// Mutate reports whether the review is for the mutating webhook.
	Mutate bool
	// Object and Old are the decoded objects of the review (Old is nil on create).
	Object, Old *v1beta1.FlinkCluster
}

// Reviews returns every benchmark review, sorted by name.
func Reviews() ([]Review, error) {
	entries, err := files.ReadDir("reviews")
	if err != nil {
		return nil, err
	}
	var out []Review
	for _, e := range entries {
		body, err := files.ReadFile(path.Join("reviews", e.Name()))
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(e.Name(), ".json")
		var rv struct {
			Request struct {
				Object    *v1beta1.FlinkCluster `json:"object"`
				OldObject *v1beta1.FlinkCluster `json:"oldObject"`
			} `json:"request"`
		}
		if err := json.Unmarshal(body, &rv); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out = append(out, Review{
			Name: name, Body: body, Mutate: strings.Contains(name, "-mutate-"),
			Object: rv.Request.Object, Old: rv.Request.OldObject,
		})
	}
	slices.SortFunc(out, func(a, b Review) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Find returns the benchmark review named name (typical-validate-update).
func Find(name string) (Review, error) {
	reviews, err := Reviews()
	if err != nil {
		return Review{}, err
	}
	for _, r := range reviews {
		if r.Name == name {
			return r, nil
		}
	}
	return Review{}, fmt.Errorf("no benchmark review named %q", name)
}
