package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const root = "../../.."

func specPath(t *testing.T) string {
	t.Helper()
	p := filepath.Join(root, "..", "shared", "spec", "behaviour.md")
	if _, err := os.Stat(p); os.IsNotExist(err) {
		t.Skipf("%s is missing: the index is checked where ../shared is beside the repository (CI)", p)
	}
	return p
}

// TestRulesPageIsCurrent: docs/rules.md is what the command writes now.
func TestRulesPageIsCurrent(t *testing.T) {
	want, err := generate(root, specPath(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, "docs", "rules.md"))
	if err != nil {
		t.Fatalf("reading docs/rules.md: %v (regenerate: %s)", err, Command)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("docs/rules.md is stale (first difference at line %d); regenerate it at the module's root:\n\t%s\nhave: %.200s\nwant: %.200s", i+1, Command, gl[i], wl[i])
			}
		}
		t.Fatalf("docs/rules.md is stale (%d lines, want %d); regenerate it at the module's root:\n\t%s", len(gl), len(wl), Command)
	}
}

// TestEveryDocAndIntRuleIsImplemented: every DOC and INT rule is cited by
// a non-test file of reference/, or excused in noImplementation; an excuse
// for a rule that is cited after all is stale.
func TestEveryDocAndIntRuleIsImplemented(t *testing.T) {
	rules, err := readRules(specPath(t))
	if err != nil {
		t.Fatal(err)
	}
	cites, err := scanTree(root, rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range unimplemented(rules, cites) {
		t.Errorf("%s has no implementing file: no non-test file of reference/ cites it in a comment (cite it where it is implemented, or list it in noImplementation with the reason)", id)
	}
	for id := range noImplementation {
		if len(cites[id][Implementation]) > 0 {
			t.Errorf("%s is in noImplementation but reference/ cites it: remove the excuse", id)
		}
	}
	if len(rules) < 50 {
		t.Errorf("only %d rules read from behaviour.md", len(rules))
	}
}

// The scanner counts comments in implementation files, comments and string
// literals in tests, and expands ranges.
func TestScanFile(t *testing.T) {
	known := map[string]bool{"ATT-4": true, "CCH-1": true, "CCH-2": true, "CCH-3": true, "MTH-1": true}
	dir := t.TempDir()
	write := func(rel, src string) string {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cites := Cites{}
	for rel, src := range map[string]string{
		"reference/a.go":      "package a\n// ATT-4, CCH-1..3\nvar s = \"MTH-1\"\n",
		"reference/a_test.go": "package a\nvar l = R(\"MTH-1\") // ATT-9 is not a rule\n",
		"suites/b.go":         "package b\n/* MTH-1 */\n",
	} {
		if err := scanFile(write(rel, src), rel, known, cites); err != nil {
			t.Fatal(err)
		}
	}
	checks := []struct {
		id   string
		kind Kind
		file string
		want int
	}{
		{"ATT-4", Implementation, "reference/a.go", 1},
		{"CCH-2", Implementation, "reference/a.go", 1},
		{"MTH-1", Implementation, "reference/a.go", 0}, // a string in a non-test file is not a citation
		{"MTH-1", Test, "reference/a_test.go", 1},
		{"MTH-1", Elsewhere, "suites/b.go", 1},
	}
	for _, c := range checks {
		if got := cites[c.id][c.kind][c.file]; got != c.want {
			t.Errorf("%s in %s (kind %d): %d citations, want %d", c.id, c.file, c.kind, got, c.want)
		}
	}
	if _, ok := cites["ATT-9"]; ok {
		t.Error("ATT-9 counted though it is not a rule")
	}
}
