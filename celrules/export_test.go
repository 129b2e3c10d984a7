package celrules

import "fmt"

// RuleDenying is ruleDenying, for the parity test in package celrules_test.
var RuleDenying = ruleDenying

// ruleDenying returns the index in rules of the rule whose error has message msg, on a
// create or an update. Two rules share a message when a rule is split into a create half
// (optionalOldSelf) and a transition half (plain oldSelf), so that lower-casing oldSelf
// stays within the cost limit: transition rules do not run on create, and on update the
// transition half is the one that judges. Any other ambiguity is an error: the coverage
// checks could not tell the rules apart.
func ruleDenying(rules []Rule, msg string, update bool) (int, error) {
	var candidates []int
	for i, r := range rules {
		transitionOnly := r.UsesOldSelf && !r.OptionalOldSelf
		if r.Message == msg && (update || !transitionOnly) {
			candidates = append(candidates, i)
		}
	}
	if len(candidates) > 1 && update {
		var transitions []int
		for _, i := range candidates {
			if rules[i].UsesOldSelf && !rules[i].OptionalOldSelf {
				transitions = append(transitions, i)
			}
		}
		candidates = transitions
	}
	if len(candidates) != 1 {
		return -1, fmt.Errorf("%d rules could have given the message %q (update: %v)", len(candidates), msg, update)
	}
	return candidates[0], nil
}
