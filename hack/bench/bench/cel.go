package bench

import (
	"cmp"
	"slices"

	"github.com/flink-admission/flink-admission/celrules"
	"github.com/flink-admission/flink-admission/celrules/crdvalidation"
)

// ReadCELCosts returns each of the CRD's rules' static estimated cost, as the API server
// computes it when the CRD is created, the largest first.
func ReadCELCosts() (*CELCosts, error) {
	v, err := celrules.New()
	if err != nil {
		return nil, err
	}
	out := &CELCosts{PerRuleLimit: crdvalidation.StaticEstimatedCostLimit, PerCRDLimit: crdvalidation.StaticEstimatedCRDCostLimit}
	rules, err := v.Rules()
	if err != nil {
		return nil, err
	}
	for _, r := range rules {
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
