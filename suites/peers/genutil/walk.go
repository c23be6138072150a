package genutil

// The neutral topology the way a peer generator needs it, host by host:
// hosts in MTH-5's matching order, a path matcher's routes in MTH-4's
// priority order (as indexes), path templates as regular expressions, the
// attempts a chain makes, and the limits a generator declares. (This was
// package walk; genutil.go has the same orders rule by rule.)

import (
	"regexp"
	"sort"
	"strings"

	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Host is one host of a host rule and the path matcher it selects.
type Host struct {
	Host    string // lower case: an exact name, "*.suffix", "prefix.*" or "*"
	Matcher string
}

// Hosts returns every host of n's host rules in the order they must be
// tried (MTH-5): exact hosts first, then wildcards by length (the longest
// first), then "*".
func Hosts(n *topology.Neutral) []Host {
	var out []Host
	for _, hr := range n.HostRules {
		for _, h := range hr.Hosts {
			out = append(out, Host{strings.ToLower(h), hr.PathMatcher})
		}
	}
	rank := func(h string) (int, int) {
		switch {
		case h == "*":
			return 2, 0
		case strings.Contains(h, "*"):
			return 1, -len(h)
		}
		return 0, 0
	}
	sort.SliceStable(out, func(i, j int) bool {
		ri, li := rank(out[i].Host)
		rj, lj := rank(out[j].Host)
		return ri < rj || ri == rj && li < lj
	})
	return out
}

// PriorityOrder returns the indexes of pm's routes by ascending priority
// (MTH-4: the first match wins), keeping the listed order among equals;
// ByPriority returns the routes themselves.
func PriorityOrder(pm topology.NeutralPathMatcher) []int {
	idx := make([]int, len(pm.Routes))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return pm.Routes[idx[a]].Priority < pm.Routes[idx[b]].Priority })
	return idx
}

// TemplateRegexp turns a pathTemplateMatch (/a/{x}/*/{rest=**}) into an
// unanchored regular expression: * is one segment, ** the rest.
func TemplateRegexp(t string) string {
	var out []string
	for _, seg := range strings.Split(t, "/") {
		inner := seg
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			inner = "*"
			if _, v, ok := strings.Cut(strings.Trim(seg, "{}"), "="); ok {
				inner = v
			}
		}
		switch inner {
		case "**":
			out = append(out, ".*")
		case "*":
			out = append(out, "[^/]+")
		default:
			out = append(out, regexp.QuoteMeta(seg))
		}
	}
	return strings.Join(out, "/")
}

// Attempts is how many attempts a chain makes at most: the sum of its
// origins' maxAttempts, capped at 4 (ATT-3, ATT-4).
func Attempts(chain []topology.NeutralOrigin) int {
	n := 0
	for _, o := range chain {
		n += max(o.MaxAttempts, 1)
	}
	return min(n, 4)
}

// Limits collects a generator's declared limits, each once.
type Limits struct {
	list []peers.Limit
	seen map[peers.Limit]bool
}

// Add declares that the peer cannot express rule's setting (in scenario,
// or "" for all), why, and where its documentation says so.
func (l *Limits) Add(rule, scenario, reason, doc string) {
	x := peers.Limit{Rule: rule, Scenario: scenario, Reason: reason, Doc: doc}
	if l.seen == nil {
		l.seen = map[peers.Limit]bool{}
	}
	if !l.seen[x] {
		l.seen[x] = true
		l.list = append(l.list, x)
	}
}

// List returns the limits in the order they were added.
func (l *Limits) List() []peers.Limit { return l.list }
