package routing

import (
	"fmt"
	"sort"
	"strings"

	"github.com/edgeconform/edgeconform/reference/config"
)

// hostTable selects a path matcher by host (MTH-5): exact hosts, then
// suffix wildcards, then prefix wildcards (each longest first), then "*".
type hostTable struct {
	exact   map[string]int
	suffix  []wildcard // "*.example.com": lit ".example.com"
	prefix  []wildcard // "foo.*": lit "foo."
	star    int        // path matcher for "*", when hasStar
	hasStar bool
}

type wildcard struct {
	lit string // the non-wildcard part, lower case
	pm  int
}

func compileHosts(rules []config.HostRule, matchers map[string]int) (hostTable, error) {
	t := hostTable{exact: map[string]int{}}
	seen := map[string]string{}
	for i, hr := range rules {
		field := fmt.Sprintf("routing.hostRules[%d]", i)
		pm, ok := matchers[hr.PathMatcher]
		if !ok {
			return t, fmt.Errorf("%s.pathMatcher: no path matcher named %q", field, hr.PathMatcher)
		}
		if len(hr.Hosts) == 0 {
			return t, fmt.Errorf("%s.hosts: at least one host is required", field)
		}
		for j, h := range hr.Hosts {
			f := fmt.Sprintf("%s.hosts[%d]", field, j)
			h = strings.ToLower(h)
			if prev, dup := seen[h]; dup {
				return t, fmt.Errorf("%s: host %q is already in %s", f, h, prev)
			}
			seen[h] = f
			switch {
			case h == "":
				return t, fmt.Errorf("%s: empty host", f)
			case strings.Contains(h, ":"):
				return t, fmt.Errorf("%s: ports are not allowed in host %q", f, h)
			case h == "*":
				t.star, t.hasStar = pm, true
			case strings.HasPrefix(h, "*"):
				lit := h[1:]
				if strings.Contains(lit, "*") {
					return t, fmt.Errorf("%s: a host has at most one wildcard, at its start or end (%q)", f, h)
				}
				t.suffix = append(t.suffix, wildcard{lit, pm})
			case strings.HasSuffix(h, "*"):
				lit := h[:len(h)-1]
				if strings.Contains(lit, "*") {
					return t, fmt.Errorf("%s: a host has at most one wildcard, at its start or end (%q)", f, h)
				}
				t.prefix = append(t.prefix, wildcard{lit, pm})
			case strings.Contains(h, "*"):
				return t, fmt.Errorf("%s: a wildcard must be at the start or end of the host (%q)", f, h)
			default:
				t.exact[h] = pm
			}
		}
	}
	longestFirst := func(w []wildcard) {
		sort.SliceStable(w, func(a, b int) bool { return len(w[a].lit) > len(w[b].lit) })
	}
	longestFirst(t.suffix)
	longestFirst(t.prefix)
	return t, nil
}

// lookup returns the path matcher for the request's Host.
func (t *hostTable) lookup(host string) (int, bool) {
	h := strings.ToLower(stripPort(host))
	h = strings.TrimSuffix(h, ".") // INT: a fully qualified name is the same host
	if pm, ok := t.exact[h]; ok {
		return pm, true
	}
	for _, w := range t.suffix {
		if len(h) > len(w.lit) && strings.HasSuffix(h, w.lit) && wildOK(h[:len(h)-len(w.lit)]) {
			return w.pm, true
		}
	}
	for _, w := range t.prefix {
		if len(h) > len(w.lit) && strings.HasPrefix(h, w.lit) && wildOK(h[len(w.lit):]) {
			return w.pm, true
		}
	}
	if t.hasStar {
		return t.star, true
	}
	return 0, false
}

// wildOK reports whether s can stand for a wildcard: one or more of
// [a-z0-9-.] (the API reference's definition).
func wildOK(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// stripPort removes the port from a Host header (MTH-5) and the brackets
// from an IPv6 literal.
func stripPort(host string) string {
	if strings.HasPrefix(host, "[") {
		if i := strings.IndexByte(host, ']'); i > 0 {
			return host[1:i]
		}
		return host
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.IndexByte(host, ':') == i {
		return host[:i]
	}
	return host
}
