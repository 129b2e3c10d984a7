// Package scope is the set of FlinkClusters one controller runs: the namespaces it watches
// and a label selector on the clusters. The controller restricts its cache, its reconciles and
// its writes to it; the webhook reads it to tell a user when a Deployment-mode cluster falls
// outside it, so nothing Deployment-aware will run it. A scope lets this controller share a
// Kubernetes cluster with another FlinkCluster controller (the flink-on-k8s-operator), each
// with its own namespaces or labels.
//
// The package imports only apimachinery, so that both the controller and the webhook's
// policy can use it without depending on each other.
package scope

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Scope selects FlinkClusters by namespace and labels. The zero value selects every cluster.
type Scope struct {
	// Namespaces are the namespaces watched, sorted and without duplicates; empty means all.
	Namespaces []string
	// Selector selects clusters by their labels; nil means every cluster.
	Selector labels.Selector
}

// All is the scope of every FlinkCluster.
var All = Scope{}

// ParseNamespaces parses a comma-separated list of namespace names (--watch-namespaces).
// Blanks around names are ignored; "" is every namespace. A name that is not a DNS-1123
// label is an error, so a typo does not silently watch nothing.
func ParseNamespaces(list string) ([]string, error) {
	var out []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			return nil, fmt.Errorf("namespace %q: %s", n, strings.Join(errs, "; "))
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// ParseSelector parses a label selector (--cluster-selector), in kubectl's syntax
// ("team=b", "flink.example.com/controller in (flink-admission)", "!legacy"). "" selects
// every cluster.
func ParseSelector(s string) (labels.Selector, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	sel, err := labels.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("label selector %q: %w", s, err)
	}
	return sel, nil
}

// Parse builds a scope from the two flags' values.
func Parse(namespaces, selector string) (Scope, error) {
	ns, err := ParseNamespaces(namespaces)
	if err != nil {
		return Scope{}, err
	}
	sel, err := ParseSelector(selector)
	if err != nil {
		return Scope{}, err
	}
	return Scope{Namespaces: ns, Selector: sel}, nil
}

// AllNamespaces reports whether the scope watches every namespace.
func (s Scope) AllNamespaces() bool { return len(s.Namespaces) == 0 }

// HasNamespace reports whether the scope watches namespace ns.
func (s Scope) HasNamespace(ns string) bool {
	if s.AllNamespaces() {
		return true
	}
	_, found := slices.BinarySearch(s.Namespaces, ns)
	return found
}

// Matches reports whether the selector selects a cluster with these labels.
func (s Scope) Matches(l map[string]string) bool {
	return s.Selector == nil || s.Selector.Matches(labels.Set(l))
}

// Contains reports whether a cluster in namespace ns with labels l is in the scope.
func (s Scope) Contains(ns string, l map[string]string) bool {
	return s.HasNamespace(ns) && s.Matches(l)
}

// Why says why a cluster in namespace ns with labels l is outside the scope, for messages;
// "" when it is inside.
func (s Scope) Why(ns string, l map[string]string) string {
	switch {
	case !s.HasNamespace(ns):
		return fmt.Sprintf("namespace %s is not in --watch-namespaces (%s)", ns, strings.Join(s.Namespaces, ","))
	case !s.Matches(l):
		return fmt.Sprintf("its labels do not match --cluster-selector %q", s.Selector.String())
	}
	return ""
}

// String renders the scope as its flags.
func (s Scope) String() string {
	ns, sel := "all", ""
	if !s.AllNamespaces() {
		ns = strings.Join(s.Namespaces, ",")
	}
	if s.Selector != nil {
		sel = s.Selector.String()
	}
	return fmt.Sprintf("--watch-namespaces=%s --cluster-selector=%q", ns, sel)
}
