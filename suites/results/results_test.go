package results

import (
	"path/filepath"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

func spec(text string, state types.SpecState, labels []string, msg string, entries ...string) types.SpecReport {
	sr := types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: text, LeafNodeLabels: labels, State: state}
	sr.Failure.Message = msg
	for i := 0; i+1 < len(entries); i += 2 {
		sr.ReportEntries = append(sr.ReportEntries, types.ReportEntry{Name: entries[i], Value: types.WrapEntryValue(entries[i+1])})
	}
	return sr
}

func TestFromReport(t *testing.T) {
	r := types.Report{SuiteSucceeded: false, SpecReports: types.SpecReports{
		spec("a", types.SpecStatePassed, []string{"ATT-4", "ATT", "DOC"}, ""),
		spec("b", types.SpecStateFailed, []string{"ATT-4", "ATT", "DOC"}, "boom"),
		spec("c", types.SpecStatePassed, []string{"ATT-5"}, ""),
		spec("d", types.SpecStateSkipped, []string{"ATT-10", "INT"}, "observation: x", EntryObservation, "got 502"),
		spec("e", types.SpecStateSkipped, []string{"RDR-6", "EXT"}, "EXT rule: reference only"),
		spec("f", types.SpecStateFailed, []string{"TMO-1"}, "setup failure: x", EntrySetup, "control API down"),
		spec("g", types.SpecStatePassed, []string{"TMO-1"}, ""),
	}}
	f := FromReport(r, Meta{Implementation: "x", Profile: "lab"})
	want := map[string]Status{"ATT-4": Fail, "ATT-5": Pass, "ATT-10": Observation, "RDR-6": Skipped, "TMO-1": Setup, "CCH-1": NoSpec}
	for _, rr := range f.Rules {
		if w, ok := want[rr.ID]; ok && rr.Status != w {
			t.Errorf("%s: %s, want %s (%q)", rr.ID, rr.Status, w, rr.Message)
		}
		switch rr.ID {
		case "ATT-4":
			if rr.Message != "boom" || len(rr.Specs) != 2 {
				t.Errorf("ATT-4: %+v", rr)
			}
		case "ATT-10":
			if rr.Message != "got 502" {
				t.Errorf("ATT-10 message %q", rr.Message)
			}
		case "TMO-1":
			if rr.Message != "control API down" {
				t.Errorf("TMO-1 message %q", rr.Message)
			}
		}
	}
	if f.Counts[Fail] != 1 || f.Counts[Pass] != 1 || f.Counts[Observation] != 1 || f.Counts[Setup] != 1 || f.Counts[Skipped] != 1 {
		t.Errorf("counts %v", f.Counts)
	}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := Write(path, f); err != nil {
		t.Fatal(err)
	}
	g, err := Read(path)
	if err != nil || len(g.Rules) != len(f.Rules) || g.Rules[0].Status != f.Rules[0].Status {
		t.Fatalf("round trip: %v %+v", err, g.Rules[0])
	}
}

// A spec's failure is charged to the rule it is written for (its first
// rule label); the other rules it carries are only also exercised.
func TestFailureChargedToPrimaryRule(t *testing.T) {
	r := types.Report{SpecReports: types.SpecReports{
		spec("prt4", types.SpecStateFailed, []string{"PRT-4", "PRT", "DOC", "HST-3", "HST", "DOC"}, "boom"),
		spec("hst3", types.SpecStatePassed, []string{"HST-3", "HST", "DOC"}, ""),
		spec("tmo4", types.SpecStateFailed, []string{"TMO-4", "TMO", "DOC", "TMO-6"}, "boom"),
	}}
	f := FromReport(r, Meta{Implementation: "x", Profile: "lab"})
	for _, rr := range f.Rules {
		switch rr.ID {
		case "PRT-4", "TMO-4":
			if rr.Status != Fail {
				t.Errorf("%s: %s, want fail", rr.ID, rr.Status)
			}
		case "HST-3":
			if rr.Status != Pass || len(rr.Specs) != 2 {
				t.Errorf("HST-3: %s with %d specs, want pass with 2 (one also exercised)", rr.Status, len(rr.Specs))
			}
			for _, s := range rr.Specs {
				if s.AlsoExercised != (s.Name == "prt4") {
					t.Errorf("HST-3 spec %s: alsoExercised=%v", s.Name, s.AlsoExercised)
				}
			}
		case "TMO-6":
			if rr.Status != NoSpec || rr.Message == "no spec yet" {
				t.Errorf("TMO-6: %s %q", rr.Status, rr.Message)
			}
		}
	}
}

// Specs a label filter left out are "not selected", not "skipped".
func TestNotSelected(t *testing.T) {
	r := types.Report{SpecReports: types.SpecReports{
		spec("filtered", types.SpecStateSkipped, []string{"ATT-4"}, ""),
		spec("skip", types.SpecStateSkipped, []string{"ATT-5"}, "EXT rule: reference only"),
	}}
	f := FromReport(r, Meta{Implementation: "x", Profile: "lab"})
	for _, rr := range f.Rules {
		if rr.ID == "ATT-4" && rr.Status != NotSelected || rr.ID == "ATT-5" && rr.Status != Skipped {
			t.Errorf("%s: %s", rr.ID, rr.Status)
		}
	}
}
