package genutil

import (
	"reflect"
	"testing"

	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/topology"
)

func TestOrderHostRules(t *testing.T) {
	in := []topology.NeutralHostRule{
		{Hosts: []string{"*"}, PathMatcher: "star"},
		{Hosts: []string{"*.mth.edge.test"}, PathMatcher: "short"},
		{Hosts: []string{"edge.test", "alias.edge.test"}, PathMatcher: "main"},
		{Hosts: []string{"*.deep.mth.edge.test"}, PathMatcher: "long"},
		{Hosts: []string{"www.mth.edge.test"}, PathMatcher: "exact"},
	}
	var got []string
	for _, hr := range OrderHostRules(in) {
		got = append(got, hr.PathMatcher)
	}
	if want := []string{"main", "exact", "long", "short", "star"}; !reflect.DeepEqual(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestByPriority(t *testing.T) {
	rs := ByPriority([]topology.NeutralRoute{{Scenario: "b", Priority: 901}, {Scenario: "a", Priority: 900}, {Scenario: "c", Priority: 901}})
	if rs[0].Scenario != "a" || rs[1].Scenario != "b" || rs[2].Scenario != "c" {
		t.Errorf("order %v", rs)
	}
}

func TestExpandAreas(t *testing.T) {
	ls := ExpandAreas([]peers.Limit{{Rule: "RDR", Reason: "r", Doc: "https://x"}, {Rule: "TMO-2", Reason: "t", Doc: "https://y"}})
	if len(ls) < 3 || ls[0].Rule != "RDR-1" || ls[len(ls)-1].Rule != "TMO-2" {
		t.Errorf("expanded %v", ls)
	}
	for _, l := range ls[:len(ls)-1] {
		if l.Reason != "r" || l.Rule[:4] != "RDR-" {
			t.Errorf("limit %+v", l)
		}
	}
}
