package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/suites/results"
	"github.com/onsi/ginkgo/v2/types"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "r.json")
	f := results.FromReport(types.Report{}, results.Meta{Implementation: "impl-x", Profile: "lab"})
	if err := results.Write(res, f); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	html := filepath.Join(dir, "r.html")
	if err := run([]string{"-html", html, res}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| MTH-1 | DOC | · no spec |") {
		t.Fatalf("markdown:\n%s", out.String())
	}
	b, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(b), "impl-x") {
		t.Fatalf("html: %v", err)
	}
	if err := run(nil, &out); err == nil {
		t.Fatal("no arguments accepted")
	}
}

// Results of different profiles are refused, or rendered with a warning.
func TestMixedProfiles(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for _, prof := range []string{"lab", "strict"} {
		p := filepath.Join(dir, prof+".json")
		if err := results.Write(p, results.FromReport(types.Report{}, results.Meta{Implementation: "impl-" + prof, Profile: prof})); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var out strings.Builder
	if err := run(paths, &out); err == nil || !strings.Contains(err.Error(), "mix timing profiles") {
		t.Fatalf("mixed profiles: %v", err)
	}
	if err := run(append([]string{"-allow-mixed-profiles"}, paths...), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Warning: the results mix timing profiles: lab (impl-lab); strict (impl-strict)") {
		t.Fatalf("markdown:\n%s", out.String())
	}
}
