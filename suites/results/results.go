// Package results is the conformance results file: per rule of the
// catalog, what a run of the suites found (pass, fail, observation,
// skipped with a reason, setup failure, or no spec), with the specs behind
// it. FromReport builds it from a Ginkgo report; package report renders
// one or several files side by side.
package results

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/suites/catalog"
	"github.com/onsi/ginkgo/v2/types"
)

// Status of a spec or a rule.
type Status string

// Statuses.
const (
	Pass        Status = "pass"
	Fail        Status = "fail"
	Observation Status = "observation" // an INT spec the target does not follow: recorded, not a failure
	Skipped     Status = "skipped"     // with a reason
	Setup       Status = "setup"       // the emulators or the topology were wrong, not the target
	NoSpec      Status = "none"        // no spec cites the rule yet
	// NotSelected: the label filter (or a focus) left the specs out of this
	// run; unlike Skipped, the target had no say.
	NotSelected Status = "not-selected"
)

// rank orders statuses for a rule with several specs: the worst wins.
var rank = map[Status]int{Fail: 7, Setup: 6, Observation: 5, Pass: 4, Skipped: 3, NotSelected: 2, NoSpec: 1}

// Report entry names specs use to qualify their outcome.
const (
	// EntryObservation marks an INT spec whose expectation the target did
	// not meet; the spec is skipped with the failure as its message.
	EntryObservation = "edgeconform:observation"
	// EntrySetup marks a failure of the test set-up (control API, journal
	// evidence of a misbehaving emulator, topology).
	EntrySetup = "edgeconform:setup-failure"
)

// File is one run of the suites against one implementation.
type File struct {
	Implementation string        `json:"implementation"`
	Target         string        `json:"target"`
	Profile        string        `json:"profile"`
	Started        time.Time     `json:"started"`
	Duration       time.Duration `json:"durationNs"`
	SuitePassed    bool          `json:"suitePassed"`
	Counts         Counts        `json:"counts"`
	Rules          []Rule        `json:"rules"`
	// Limits are what the implementation declared it cannot express
	// (peers: suites/peers Setup.Limits); reports show them beside the
	// rule's result.
	Limits []Limit `json:"limits,omitempty"`
	// Notes are remarks on the run (a peer's profile choice, mappings).
	Notes []string `json:"notes,omitempty"`
}

// Limit is a declared limit: the implementation has no setting for what
// Rule's specs in Scenario ("" for all) need.
type Limit struct {
	Rule     string `json:"rule"`
	Scenario string `json:"scenario,omitempty"`
	Reason   string `json:"reason"`
	Doc      string `json:"doc,omitempty"`
}

// LimitsOf returns the limits f declares for rule.
func (f File) LimitsOf(rule string) []Limit {
	var out []Limit
	for _, l := range f.Limits {
		if l.Rule == rule {
			out = append(out, l)
		}
	}
	return out
}

// Counts are rules per status.
type Counts map[Status]int

// Rule is one rule's outcome.
type Rule struct {
	catalog.Rule
	Status  Status `json:"status"`
	Message string `json:"message,omitempty"` // of the first spec with the rule's status
	Specs   []Spec `json:"specs,omitempty"`
}

// Spec is one spec's outcome.
type Spec struct {
	Name     string        `json:"name"`
	Status   Status        `json:"status"`
	Message  string        `json:"message,omitempty"`
	Location string        `json:"location,omitempty"`
	Duration time.Duration `json:"durationNs"`
	// AlsoExercised says the spec is written for another rule (its first
	// rule label) and only also exercises this one: its failure is
	// charged to that rule, not to this one.
	AlsoExercised bool `json:"alsoExercised,omitempty"`
}

// Meta describes the run.
type Meta struct {
	Implementation, Target, Profile string
}

// FromReport builds the results file from a Ginkgo suite report.
func FromReport(r types.Report, m Meta) File {
	f := File{
		Implementation: m.Implementation, Target: m.Target, Profile: m.Profile,
		Started: r.StartTime, Duration: r.RunTime, SuitePassed: r.SuiteSucceeded, Counts: Counts{},
	}
	byRule := map[string][]Spec{}
	for _, sr := range r.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt {
			continue
		}
		s := specOf(sr)
		primary := ""
		for _, l := range sr.Labels() {
			if !catalog.IsRuleID(l) {
				continue
			}
			if primary == "" {
				primary = l // the rule the spec is written for: R's first
			}
			ss := s
			ss.AlsoExercised = l != primary
			byRule[l] = append(byRule[l], ss)
		}
	}
	for _, cr := range catalog.All() {
		rr := Rule{Rule: cr, Status: NoSpec}
		specs := byRule[cr.ID]
		slices.SortFunc(specs, func(a, b Spec) int { return strings.Compare(a.Name, b.Name) })
		rr.Specs = specs
		for _, s := range specs {
			st := s.Status
			if s.AlsoExercised && (st == Fail || st == Setup || st == Observation) {
				continue // charged to the rule it is written for
			}
			if rank[st] > rank[rr.Status] {
				rr.Status, rr.Message = st, s.Message
			}
		}
		switch {
		case rr.Status == NoSpec && len(specs) > 0:
			rr.Message = "only exercised by specs written for other rules (their failures are charged there)"
		case rr.Status == NoSpec:
			rr.Message = "no spec yet"
		}
		f.Counts[rr.Status]++
		f.Rules = append(f.Rules, rr)
	}
	return f
}

func specOf(sr types.SpecReport) Spec {
	s := Spec{Name: sr.FullText(), Duration: sr.RunTime, Location: sr.LeafNodeLocation.String()}
	has := func(name string) (string, bool) {
		for _, e := range sr.ReportEntries {
			if e.Name == name {
				return e.StringRepresentation(), true
			}
		}
		return "", false
	}
	switch sr.State {
	case types.SpecStatePassed:
		s.Status = Pass
	case types.SpecStateSkipped:
		if msg, ok := has(EntryObservation); ok {
			s.Status, s.Message = Observation, msg
			break
		}
		s.Status, s.Message = Skipped, sr.Failure.Message
		if s.Message == "" {
			s.Status, s.Message = NotSelected, "not selected in this run (label filter or focus)"
		}
	case types.SpecStatePending:
		s.Status, s.Message = Skipped, "pending"
	default: // failed, panicked, timed out, interrupted, aborted
		s.Status, s.Message = Fail, sr.Failure.Message
		if sr.State != types.SpecStateFailed {
			s.Message = sr.State.String() + ": " + s.Message
		}
		if msg, ok := has(EntrySetup); ok {
			s.Status, s.Message = Setup, msg
		}
	}
	return s
}

// Write writes f as indented JSON.
func Write(path string, f File) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the results: %w", err)
	}
	return nil
}

// Read reads a results file.
func Read(path string) (File, error) {
	var f File
	b, err := os.ReadFile(path)
	if err != nil {
		return f, fmt.Errorf("reading results: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("reading results %s: %w", path, err)
	}
	return f, nil
}
