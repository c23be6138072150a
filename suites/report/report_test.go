package report

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/suites/catalog"
	"github.com/edgeconform/edgeconform/suites/results"
)

func file(name string, status map[string]results.Status) results.File {
	f := results.File{Implementation: name, Profile: "lab", Counts: results.Counts{}}
	for _, r := range catalog.All() {
		s, ok := status[r.ID]
		if !ok {
			s = results.NoSpec
		}
		rr := results.Rule{Rule: r, Status: s}
		if s != results.NoSpec {
			rr.Specs = []results.Spec{{Name: r.ID + " spec", Status: s, Message: "msg <" + r.ID + ">"}}
			rr.Message = rr.Specs[0].Message
		}
		f.Counts[s]++
		f.Rules = append(f.Rules, rr)
	}
	return f
}

func TestMarkdownAndHTML(t *testing.T) {
	files := []results.File{
		file("reference", map[string]results.Status{"ATT-4": results.Pass, "ATT-5": results.Fail}),
		file("cdn", map[string]results.Status{"ATT-4": results.Observation, "ATT-5": results.Skipped}),
	}
	md := Markdown(files)
	for _, want := range []string{"| ATT-4 | DOC | ✅ pass | 👁 observation | ", "| ATT-5 | DOC | ❌ fail | ⏭ skipped | ", "**ATT-5** fail", "### cdn"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	page, err := HTML(files)
	if err != nil {
		t.Fatal(err)
	}
	h := string(page)
	for _, want := range []string{`<td class="fail" title="msg &lt;ATT-5&gt;"><a href="#d-0-ATT-5">`, `id="d-1-ATT-4"`, "msg &lt;ATT-4&gt;"} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

// The Markdown details keep the expected value of a gomega message.
func TestMarkdownKeepsExpected(t *testing.T) {
	f := file("x", map[string]results.Status{"ATT-7": results.Fail})
	for i := range f.Rules {
		if f.Rules[i].ID == "ATT-7" {
			f.Rules[i].Specs[0].Message = "status 503, want 502: GET http://127.0.0.1:1/c/x (Host: edge.test); body: (empty)\nExpected\n    <int>: 503\nto equal\n    <int>: 502"
		}
	}
	if md := Markdown([]results.File{f}); !strings.Contains(md, "to equal <int>: 502") {
		t.Fatalf("the expected value was cut off:\n%s", md)
	}
}

// The HTML page renders in a real browser (headless Chromium), when one
// is installed.
func TestHTMLInChromium(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("chromium not installed (apt-get install -y chromium): the browser check is skipped")
	}
	page, err := HTML([]results.File{file("reference", map[string]results.Status{"ATT-4": results.Pass})})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	htmlPath := filepath.Join(dir, "r.html")
	if err := os.WriteFile(htmlPath, page, 0o644); err != nil {
		t.Fatal(err)
	}
	png, err := Screenshot(context.Background(), htmlPath, filepath.Join(dir, "r.png"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(png)
	if err != nil || len(b) < 1000 || string(b[1:4]) != "PNG" {
		t.Fatalf("not a PNG screenshot (%d bytes, %v)", len(b), err)
	}
}
