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
