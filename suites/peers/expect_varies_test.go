package peers

import (
	"testing"

	"github.com/edgeconform/edgeconform/suites/catalog"
	"github.com/edgeconform/edgeconform/suites/results"
)

// A rule listed with varies is accepted with its status or any of those;
// another status still differs.
func TestCompareVaries(t *testing.T) {
	e := Expectations{Peer: "p", Profile: "strict", Rules: map[string]Expected{
		"RNG-4": {Status: results.Fail, Reason: "a timer checked once a second", Varies: []results.Status{results.Pass}},
	}}
	for _, tc := range []struct {
		got   results.Status
		diffs int
	}{{results.Fail, 0}, {results.Pass, 0}, {results.Observation, 1}} {
		f := results.File{Rules: []results.Rule{{Rule: catalog.Rule{ID: "RNG-4"}, Status: tc.got}}}
		if d := e.Compare(f); len(d) != tc.diffs {
			t.Errorf("got %s: %d differences %v, want %d", tc.got, len(d), d, tc.diffs)
		}
	}
}

// A draft keeps an expectation whose Varies accepts the run's status.
func TestDraftKeepsVaries(t *testing.T) {
	old := Expectations{Rules: map[string]Expected{
		"RNG-4": {Status: results.Fail, Reason: "a timer checked once a second", Varies: []results.Status{results.Pass}},
	}}
	f := results.File{Implementation: "p", Profile: "strict", Rules: []results.Rule{{Rule: catalog.Rule{ID: "RNG-4"}, Status: results.Pass}}}
	if x, ok := Draft(f, old).Rules["RNG-4"]; !ok || x.Reason != "a timer checked once a second" {
		t.Errorf("draft %+v, want the old expectation kept", x)
	}
}
