// Package genutil holds what the peer generators (suites/peers/<peer>)
// share when they walk the neutral topology, so that each maps the same
// order the same way: host rules, or hosts one by one, in MTH-5's matching
// order; path matcher lookup; routes (or their indexes) in MTH-4's
// priority order; path templates as regular expressions; the attempts a
// chain makes; and the limits a generator declares, an area's expanded to
// its rules.
package genutil

import (
	"cmp"
	"slices"
	"strings"

	"github.com/edgeconform/edgeconform/suites/catalog"
	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// OrderHostRules returns the host rules in the order a peer that takes
// the first match must try them (MTH-5): rules with exact hosts first,
// then those with wildcards, longest wildcard first, then "*".
func OrderHostRules(hrs []topology.NeutralHostRule) []topology.NeutralHostRule {
	rank := func(hr topology.NeutralHostRule) (class, length int) {
		longest := 0
		for _, h := range hr.Hosts {
			if h == "*" {
				return 2, 0
			}
			if strings.Contains(h, "*") {
				longest = max(longest, len(h))
			}
		}
		if longest > 0 {
			return 1, -longest
		}
		return 0, 0
	}
	out := slices.Clone(hrs)
	slices.SortStableFunc(out, func(a, b topology.NeutralHostRule) int {
		ca, la := rank(a)
		cb, lb := rank(b)
		return cmp.Or(cmp.Compare(ca, cb), cmp.Compare(la, lb))
	})
	return out
}

// PathMatcher returns the named path matcher of n.
func PathMatcher(n *topology.Neutral, name string) (topology.NeutralPathMatcher, bool) {
	for _, pm := range n.PathMatchers {
		if pm.Name == name {
			return pm, true
		}
	}
	return topology.NeutralPathMatcher{}, false
}

// ByPriority returns routes by ascending priority, the order a peer that
// takes the first match must try them (MTH-4).
func ByPriority(routes []topology.NeutralRoute) []topology.NeutralRoute {
	rs := slices.Clone(routes)
	slices.SortStableFunc(rs, func(a, b topology.NeutralRoute) int { return cmp.Compare(a.Priority, b.Priority) })
	return rs
}

// ExpandAreas turns each limit whose Rule is an area ("RDR") into one
// limit per rule of that area (peers.Limit names rules).
func ExpandAreas(ls []peers.Limit) []peers.Limit {
	var out []peers.Limit
	for _, l := range ls {
		if !catalog.IsArea(l.Rule) {
			out = append(out, l)
			continue
		}
		for _, r := range catalog.All() {
			if r.Area == l.Rule {
				e := l
				e.Rule = r.ID
				out = append(out, e)
			}
		}
	}
	return out
}
