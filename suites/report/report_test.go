package report

import (
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
