package peers

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/edgeconform/edgeconform/suites/catalog"
	"github.com/edgeconform/edgeconform/suites/results"
)

// Expectations are a peer's checked-in expected results
// (suites/peers/expectations/<peer>.json): every rule whose expected
// status is not pass, with a one-line reason naming the peer's behaviour
// and its evidence (the journal, the peer's log, its documentation). A
// rule not listed is expected to pass. The runner fails when a result
// differs, so a harness change that flips a peer's result must say why,
// here.
type Expectations struct {
	Peer    string              `json:"peer"`
	Profile string              `json:"profile"`
	Rules   map[string]Expected `json:"rules"`
}

// Expected is one rule's expected status and why. Varies lists the other
// statuses a run may show for a peer behaviour that varies from run to run
// (a timer checked once a second; Varnish sometimes passing a short body
// off as complete, TMO-6); the reason must say why and how often. A result
// in Varies is not a difference, so a flapping peer does not fail CI, yet
// the expectation stays honest about what the peer does.
type Expected struct {
	Status results.Status   `json:"status"`
	Reason string           `json:"reason"`
	Varies []results.Status `json:"varies,omitempty"`
}

// allows reports whether a result of status s meets x.
func (x Expected) allows(s results.Status) bool {
	return s == x.Status || slices.Contains(x.Varies, s)
}

// Unexplained starts the reason of an expectation drafted from a run
// (Draft) that nobody has explained yet; Validate refuses it.
const Unexplained = "UNEXPLAINED: "

// ReadExpectations reads and validates an expectations file.
func ReadExpectations(path string) (Expectations, error) {
	var e Expectations
	b, err := os.ReadFile(path)
	if err != nil {
		return e, fmt.Errorf("reading expectations: %w", err)
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("reading expectations %s: %w", path, err)
	}
	if err := e.Validate(); err != nil {
		return e, fmt.Errorf("%s: %w", path, err)
	}
	return e, nil
}

// Validate reports rules that are not in the catalog, unknown statuses,
// and non-passes without a reason.
func (e Expectations) Validate() error {
	var problems []string
	for _, id := range slices.Sorted(maps.Keys(e.Rules)) {
		x := e.Rules[id]
		if _, ok := catalog.Lookup(id); !ok {
			problems = append(problems, id+": not a rule of the catalog")
		}
		switch x.Status {
		case results.Fail, results.Observation, results.Skipped, results.Setup, results.NoSpec, results.NotSelected:
		case results.Pass:
			problems = append(problems, id+": pass is the default; list only other statuses")
		default:
			problems = append(problems, fmt.Sprintf("%s: unknown status %q", id, x.Status))
		}
		if r := strings.TrimSpace(x.Reason); r == "" || strings.HasPrefix(r, Unexplained) {
			problems = append(problems, id+": no reason (name the peer's behaviour and its evidence)")
		}
		for _, alt := range x.Varies {
			switch {
			case alt == x.Status:
				problems = append(problems, fmt.Sprintf("%s: varies %q repeats the expected status", id, alt))
			case !slices.Contains([]results.Status{results.Pass, results.Fail, results.Observation, results.Skipped, results.Setup}, alt):
				problems = append(problems, fmt.Sprintf("%s: varies %q is not a status a run gives", id, alt))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("expectations for %s: %s", e.Peer, strings.Join(problems, "; "))
	}
	return nil
}

// Difference is a rule whose result is not the expected one.
type Difference struct {
	Rule          string
	Expected, Got results.Status
	Reason        string // the expectation's
	Message       string // the result's
}

func (d Difference) String() string {
	s := fmt.Sprintf("%s: expected %s, got %s", d.Rule, d.Expected, d.Got)
	if d.Reason != "" {
		s += " (expected because: " + d.Reason + ")"
	}
	if d.Message != "" {
		s += ": " + firstLine(d.Message)
	}
	return s
}

// Compare returns the rules of f whose status differs from e. Rules whose
// specs a label filter left out are not compared.
func (e Expectations) Compare(f results.File) []Difference {
	var out []Difference
	for _, r := range f.Rules {
		if r.Status == results.NotSelected {
			continue
		}
		x, listed := e.Rules[r.ID]
		if !listed {
			x = Expected{Status: results.Pass}
		}
		if !x.allows(r.Status) {
			out = append(out, Difference{Rule: r.ID, Expected: x.Status, Got: r.Status, Reason: x.Reason, Message: r.Message})
		}
	}
	return out
}

// Draft returns expectations matching f, keeping old's reasons where the
// status is unchanged and marking the others Unexplained (with the
// result's message) for a person to explain before checking it in.
func Draft(f results.File, old Expectations) Expectations {
	e := Expectations{Peer: f.Implementation, Profile: f.Profile, Rules: map[string]Expected{}}
	for _, r := range f.Rules {
		if x, ok := old.Rules[r.ID]; ok && x.allows(r.Status) {
			e.Rules[r.ID] = x // unchanged, or a status its Varies accepts
			continue
		}
		if r.Status == results.Pass || r.Status == results.NotSelected {
			continue
		}
		e.Rules[r.ID] = Expected{Status: r.Status, Reason: Unexplained + firstLine(r.Message)}
	}
	return e
}

// WriteExpectations writes e as indented JSON, rules sorted.
func WriteExpectations(path string, e Expectations) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding expectations: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing expectations: %w", err)
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
