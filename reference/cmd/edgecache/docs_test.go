package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// validateMarker precedes a fenced YAML block of docs/*.md that must pass
// `edgecache validate`: "<!-- edgecache validate: ... -->" for a whole
// configuration, "<!-- edgecache validate origins: ... -->" for a list of
// origins, checked with a service routing everything to the first.
var validateMarker = regexp.MustCompile(`(?m)^<!-- edgecache validate( origins)?[: ].*-->\n` + "```yaml\n" + `((?s:.*?))` + "```")

var firstOrigin = regexp.MustCompile(`(?m)^  - (?:\{\s*)?name: ([A-Za-z0-9_-]+)`)

const docService = `service:
  name: doc
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: m}]
    pathMatchers: [{name: m, routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: %s}]}]
`

// TestDocsConfigsValidate runs `edgecache validate` on every marked
// configuration example of the docs, so that an example that stops being
// valid (a renamed field, a tightened bound) fails here.
func TestDocsConfigsValidate(t *testing.T) {
	pages, err := filepath.Glob(repoFile(t, "docs") + "/*.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, page := range pages {
		doc, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range validateMarker.FindAllStringSubmatch(string(doc), -1) {
			yaml := m[2]
			if m[1] != "" {
				o := firstOrigin.FindStringSubmatch(yaml)
				if o == nil {
					t.Errorf("%s: block %d is marked origins but names no origin", filepath.Base(page), i+1)
					continue
				}
				yaml += strings.Replace(docService, "%s", o[1], 1)
			}
			file := filepath.Join(t.TempDir(), "doc.yaml")
			if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errOut strings.Builder
			if code := exitCode(run(context.Background(), []string{"validate", "--config", file}, &out, &errOut), &errOut); code != 0 {
				t.Errorf("%s: marked block %d: edgecache validate exit %d:\n%s%s\n--- the block:\n%s", filepath.Base(page), i+1, code, out.String(), errOut.String(), yaml)
			}
			checked++
		}
	}
	if checked < 2 {
		t.Errorf("%d marked configuration blocks in docs/*.md, want at least docs/reference.md's 2", checked)
	}
}
