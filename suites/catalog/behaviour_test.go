package catalog

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// ruleLine is a rule of behaviour.md: "- ATT-4 DOC: text" (TMO-8 and TMO-9
// say "DOC (worked example):").
var ruleLine = regexp.MustCompile(`^- ([A-Z]{3}-\d+) (DOC|INT|EXT)(?: \(worked example\))?: (.+)$`)

// behaviourRules reads the rules from ../shared/spec/behaviour.md beside
// the repository, the catalog's source.
func behaviourRules(t *testing.T) []Rule {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "spec", "behaviour.md")
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Skipf("%s is missing: the catalog is checked against it where ../shared is beside the repository (CI)", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []Rule
	for _, line := range strings.Split(string(b), "\n") {
		m := ruleLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		id := m[1]
		out = append(out, Rule{ID: id, Area: id[:3], Level: Level(m[2]), Text: strings.ReplaceAll(m[3], "`", "")})
	}
	if len(out) == 0 {
		t.Fatalf("no rule lines found in %s: has its format changed?", path)
	}
	return out
}

// The catalog is a copy of behaviour.md's rules: the same IDs in the same
// order, with the same levels and texts (backquotes dropped). A rule added,
// removed or reworded in the spec fails here until the catalog follows.
func TestCatalogMatchesBehaviourMD(t *testing.T) {
	spec := behaviourRules(t)
	got := All()
	byID := map[string]Rule{}
	for _, r := range got {
		byID[r.ID] = r
	}
	for i, want := range spec {
		r, ok := byID[want.ID]
		switch {
		case !ok:
			t.Errorf("%s (%s) is in behaviour.md but not in the catalog", want.ID, want.Level)
		case r.Level != want.Level:
			t.Errorf("%s: level %s in the catalog, %s in behaviour.md", want.ID, r.Level, want.Level)
		case r.Area != want.Area:
			t.Errorf("%s: area %s in the catalog, want %s", want.ID, r.Area, want.Area)
		case r.Text != want.Text:
			t.Errorf("%s: text differs\n catalog:      %s\n behaviour.md: %s", want.ID, r.Text, want.Text)
		case i < len(got) && got[i].ID != want.ID:
			t.Errorf("rule %d is %s in the catalog, %s in behaviour.md (order differs)", i, got[i].ID, want.ID)
		}
		delete(byID, want.ID)
	}
	for id := range byID {
		t.Errorf("%s is in the catalog but not in behaviour.md", id)
	}
}
