package genutil

import (
	"regexp"
	"slices"
	"testing"

	"github.com/edgeconform/edgeconform/suites/peers/peertest"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// MTH-5: exact hosts, then the longest wildcard, then "*".
func TestHostsOrder(t *testing.T) {
	var got []string
	for _, h := range Hosts(peertest.Topology(t, topology.Strict)) {
		got = append(got, h.Matcher)
	}
	want := []string{"main", "main", "mth-exact", "mth-long", "mth-short", "mth-prefix", "mth-star"}
	if !slices.Equal(got, want) {
		t.Fatalf("matchers in order %q, want %q", got, want)
	}
}

// MTH-4: prio-first (900) before prio (901), though listed after it.
func TestPriorityOrder(t *testing.T) {
	n := peertest.Topology(t, topology.Strict)
	var main topology.NeutralPathMatcher
	for _, pm := range n.PathMatchers {
		if pm.Name == topology.MainMatcher {
			main = pm
		}
	}
	var order []string
	for _, i := range PriorityOrder(main) {
		order = append(order, main.Routes[i].Scenario)
	}
	if i, j := slices.Index(order, "prio-first"), slices.Index(order, "prio"); i < 0 || j < 0 || i > j {
		t.Fatalf("prio-first at %d, prio at %d", i, j)
	}
}

func TestTemplateRegexp(t *testing.T) {
	for _, tc := range []struct {
		tmpl, path string
		match      bool
	}{
		{"/v/{id}/seg.ts", "/v/42/seg.ts", true},
		{"/v/{id}/seg.ts", "/v/4/2/seg.ts", false},
		{"/v/*/x", "/v/a/x", true},
		{"/v/{rest=**}", "/v/a/b/c", true},
		{"/a.b/*", "/aXb/c", false},
	} {
		if got := regexp.MustCompile("^" + TemplateRegexp(tc.tmpl) + "$").MatchString(tc.path); got != tc.match {
			t.Errorf("%s ~ %s: %v, want %v", tc.tmpl, tc.path, got, tc.match)
		}
	}
}

func TestAttempts(t *testing.T) {
	o := func(n int) topology.NeutralOrigin { return topology.NeutralOrigin{MaxAttempts: n} }
	for _, tc := range []struct {
		chain []topology.NeutralOrigin
		want  int
	}{
		{[]topology.NeutralOrigin{o(1)}, 1},
		{[]topology.NeutralOrigin{o(2), o(1), o(1)}, 4},
		{[]topology.NeutralOrigin{o(3), o(3)}, 4}, // ATT-4
		{[]topology.NeutralOrigin{o(0)}, 1},
	} {
		if got := Attempts(tc.chain); got != tc.want {
			t.Errorf("%+v: %d, want %d", tc.chain, got, tc.want)
		}
	}
}
