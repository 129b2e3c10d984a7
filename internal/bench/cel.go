package bench

import (
	"cmp"
	"slices"

	"github.com/flink-admission/flink-admission/celrules"
)

// ReadCELCosts compiles the CRD's rules as the API server does when the CRD is created and
// returns each rule's static estimated cost, the largest first.
func ReadCELCosts() (*CELCosts, error) {
	v, err := celrules.New()
	if err != nil {
		return nil, err
	}
	out := &CELCosts{PerRuleLimit: celrules.StaticEstimatedCostLimit, PerCRDLimit: celrules.StaticEstimatedCRDCostLimit}
	for _, r := range v.Rules() {
		loc := r.Path + r.FieldPath
		if loc == "" {
			loc = "<root>"
		}
		out.Rules = append(out.Rules, CELRuleCost{Location: loc, Rule: r.Rule, Cost: r.EstimatedCost})
		out.Total += r.EstimatedCost
	}
	slices.SortStableFunc(out.Rules, func(a, b CELRuleCost) int { return cmp.Compare(b.Cost, a.Cost) })
	return out, nil
}
