package peers_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/suites/catalog"
	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/results"
)

// Every checked-in expectations file is valid: rules of the catalog,
// known statuses, a reason for each.
func TestCheckedInExpectations(t *testing.T) {
	files, err := filepath.Glob("expectations/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no expectations files (%v)", err)
	}
	for _, f := range files {
		e, err := peers.ReadExpectations(f)
		if err != nil {
			t.Error(err)
			continue
		}
		if e.Peer+".json" != filepath.Base(f) {
			t.Errorf("%s names peer %q", f, e.Peer)
		}
	}
}

func resultsWith(status map[string]results.Status) results.File {
	f := results.File{Implementation: "fake", Profile: "strict"}
	for _, r := range catalog.All() {
		s, ok := status[r.ID]
		if !ok {
			s = results.Pass
		}
		f.Rules = append(f.Rules, results.Rule{Rule: r, Status: s, Message: "message of " + r.ID})
	}
	return f
}

func TestCompareAndDraft(t *testing.T) {
	e := peers.Expectations{Peer: "fake", Profile: "strict", Rules: map[string]peers.Expected{
		"ATT-9": {Status: results.Fail, Reason: "no total deadline"},
		"TMO-2": {Status: results.Fail, Reason: "no total deadline"},
	}}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	// ATT-9 as expected; TMO-2 now passes; MTH-2 newly fails.
	f := resultsWith(map[string]results.Status{"ATT-9": results.Fail, "MTH-2": results.Fail})
	d := e.Compare(f)
	if len(d) != 2 || d[0].Rule != "MTH-2" || d[0].Expected != results.Pass || d[1].Rule != "TMO-2" || d[1].Got != results.Pass {
		t.Fatalf("differences %+v", d)
	}
	if !strings.Contains(d[1].String(), "expected because: no total deadline") {
		t.Fatalf("difference text %q", d[1])
	}
	// A rule a label filter left out is not compared.
	f = resultsWith(map[string]results.Status{"ATT-9": results.Fail, "TMO-2": results.Fail})
	f.Rules[0].Status, f.Rules[0].Message = results.NotSelected, "not selected in this run (label filter or focus)"
	if d := e.Compare(f); len(d) != 0 {
		t.Fatalf("differences %+v", d)
	}
	// A draft keeps known reasons and marks new ones, which Validate refuses.
	draft := peers.Draft(resultsWith(map[string]results.Status{"ATT-9": results.Fail, "MTH-2": results.Fail}), e)
	if draft.Rules["ATT-9"].Reason != "no total deadline" || !strings.HasPrefix(draft.Rules["MTH-2"].Reason, peers.Unexplained) {
		t.Fatalf("draft %+v", draft)
	}
	if _, ok := draft.Rules["TMO-2"]; ok {
		t.Fatal("a passing rule is in the draft")
	}
	if err := draft.Validate(); err == nil || !strings.Contains(err.Error(), "MTH-2: no reason") {
		t.Fatalf("an unexplained draft validated: %v", err)
	}
	path := filepath.Join(t.TempDir(), "fake.json")
	if err := peers.WriteExpectations(path, draft); err != nil {
		t.Fatal(err)
	}
	if _, err := peers.ReadExpectations(path); err == nil {
		t.Fatal("an unexplained file was read")
	}
	bad := peers.Expectations{Peer: "x", Rules: map[string]peers.Expected{"NOPE-1": {Status: "weird", Reason: "r"}, "MTH-1": {Status: results.Pass, Reason: "r"}}}
	err := bad.Validate()
	for _, want := range []string{"NOPE-1: not a rule", `unknown status "weird"`, "MTH-1: pass is the default"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: no %q", err, want)
		}
	}
	_ = os.Remove(path)
}

// A varies list is checked: not the expected status again, only statuses
// a run gives.
func TestVariesValidated(t *testing.T) {
	for _, bad := range []peers.Expected{
		{Status: results.Fail, Varies: []results.Status{results.Fail}, Reason: "r"},
		{Status: results.Fail, Varies: []results.Status{"weird"}, Reason: "r"},
		{Status: results.Fail, Varies: []results.Status{results.NoSpec}, Reason: "r"},
	} {
		x := peers.Expectations{Peer: "x", Rules: map[string]peers.Expected{"TMO-6": bad}}
		if err := x.Validate(); err == nil {
			t.Errorf("%+v validated", bad)
		}
	}
	ok := peers.Expectations{Peer: "x", Rules: map[string]peers.Expected{
		"TMO-6": {Status: results.Fail, Varies: []results.Status{results.Pass}, Reason: "fails 4 runs in 6"}}}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
}
