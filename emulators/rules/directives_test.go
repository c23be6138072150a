package rules

import (
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/fault"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/internal/fielderr"
)

func jsonNames(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// The directive table and the JSON form name the same things: every JSON
// field of Action has a directive and every directive is a JSON field where
// it says it goes.
func TestDirectivesMatchJSON(t *testing.T) {
	action := jsonNames(reflect.TypeFor[Action]())
	for _, name := range action {
		if d, ok := Lookup(name); !ok || d.In != InAction {
			t.Errorf("Action field %q has no action directive", name)
		}
	}
	budget := append(jsonNames(reflect.TypeFor[Rule]()), jsonNames(reflect.TypeFor[Match]())...)
	spec := jsonNames(reflect.TypeFor[objects.Spec]())
	for _, d := range Directives {
		var in []string
		switch d.In {
		case InAction:
			in = action
		case InBudget:
			in = budget
		case InObject:
			in = spec
		default:
			t.Errorf("directive %s: unknown place %q", d.Name, d.In)
		}
		if !d.PathOnly && !slices.Contains(in, d.Name) {
			t.Errorf("directive %s (%s) is no JSON field there", d.Name, d.In)
		}
		if d.Path == "" || d.Doc == "" {
			t.Errorf("directive %s has no path form or doc", d.Name)
		}
		if d.Name != "headers" && d.parse == nil && d.cut == nil {
			t.Errorf("directive %s cannot be parsed from a path", d.Name)
		}
		if d.cut != nil {
			if info, ok := fault.Lookup(d.End); !ok || info.H2Only != d.H2Only {
				t.Errorf("end directive %s: End %q is not a fault.End with the same H2Only", d.Name, d.End)
			}
		}
	}
}

// Every end directive works from the path, and sets exactly its own end.
func TestEndDirectivesFromPath(t *testing.T) {
	for _, d := range EndDirectives() {
		val := "=10"
		if d.H2Only {
			val = "=CANCEL@10"
		}
		ps, _, err := ParsePath("/_emu/" + d.Name + val + "/x")
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		got, c := ps.Rule.Action.Ends()
		if got != d || c == nil || *c.AfterBytes != 10 {
			t.Errorf("%s: Ends() = %v %+v", d.Name, got, c)
		}
	}
}

// readme is the emulator's page, docs/emulators.md.
func readme(t *testing.T) string {
	b, err := os.ReadFile("../../docs/emulators.md")
	if err != nil {
		t.Fatalf("reading docs/emulators.md: %v", err)
	}
	return string(b)
}

// tableAfter returns the first Markdown table after the heading.
func tableAfter(t *testing.T, doc, heading string) []string {
	_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/emulators.md has no %q", heading)
	}
	var rows []string
	for _, line := range strings.Split(rest, "\n") {
		switch {
		case strings.HasPrefix(line, "|"):
			rows = append(rows, line)
		case len(rows) > 0:
			return rows
		}
	}
	return rows
}

// docs/emulators.md's action table names every action directive, and its fault
// table every fault.End with the directive that asks for it.
func TestREADMETables(t *testing.T) {
	doc := readme(t)
	actions := strings.Join(firstCells(tableAfter(t, doc, "## Rules")), "\n")
	for _, d := range Directives {
		if d.In != InAction || d.PathOnly {
			continue
		}
		if !regexp.MustCompile("`" + d.Name + "[`:]").MatchString(actions) {
			t.Errorf("docs/emulators.md's action table has no row for %s", d.Name)
		}
	}
	faults := tableAfter(t, doc, "## The fault vocabulary")
	for _, info := range fault.Ends {
		i := slices.IndexFunc(faults, func(r string) bool { return strings.HasPrefix(r, "| `"+string(info.End)+"` |") })
		if i < 0 {
			t.Errorf("docs/emulators.md's fault table has no row for %q", info.End)
			continue
		}
		for _, d := range EndDirectives() {
			if d.End == info.End && !strings.Contains(faults[i], "`"+d.Name) {
				t.Errorf("docs/emulators.md's fault row for %q does not name %s", info.End, d.Name)
			}
		}
	}
	// And the path section names every path directive.
	_, path, _ := strings.Cut(doc, "## The same vocabulary in the path")
	path, _, _ = strings.Cut(path, "\n## ")
	for _, d := range Directives {
		key := strings.FieldsFunc(d.Path, func(r rune) bool { return r == '=' || r == ' ' || r == '|' })[0]
		if !strings.Contains(path, key) {
			t.Errorf("docs/emulators.md's path section does not mention %s", key)
		}
	}
}

func firstCells(rows []string) []string {
	var out []string
	for _, r := range rows {
		cells := strings.Split(r, "|")
		if len(cells) > 1 {
			out = append(out, cells[1])
		}
	}
	return out
}

// Every JSON rule example of docs/emulators.md is a valid Rule: its
// fields exist (checked the way the control API checks a body) and
// Validate accepts it.
func TestDocsRuleExamples(t *testing.T) {
	doc := readme(t)
	_, rules, ok := strings.Cut(doc, "\n## Rules\n")
	if !ok {
		t.Fatal(`docs/emulators.md has no "## Rules"`)
	}
	rules, _, _ = strings.Cut(rules, "\n## ")
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(rules, -1)
	if len(blocks) == 0 {
		t.Fatal(`docs/emulators.md's "## Rules" has no JSON example`)
	}
	for i, b := range blocks {
		if es := fielderr.CheckJSON([]byte(b[1]), reflect.TypeFor[Rule](), "", "rule"); len(es) > 0 {
			t.Errorf("example %d: %v", i+1, es)
			continue
		}
		var r Rule
		if err := json.Unmarshal([]byte(b[1]), &r); err != nil {
			t.Errorf("example %d: %v", i+1, err)
			continue
		}
		if err := r.Validate(""); err != nil {
			t.Errorf("example %d: %v", i+1, err)
		}
	}
}
