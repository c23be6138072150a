// Package report renders conformance results files (package results) as a
// Markdown summary and a static HTML page: rules down, implementations
// across, each cell showing the rule's status and leading to the failure
// message, observation or skip reason behind it.
package report

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"

	"github.com/edgeconform/edgeconform/suites/catalog"
	"github.com/edgeconform/edgeconform/suites/results"
)

var symbols = map[results.Status]string{
	results.Pass:        "✅ pass",
	results.Fail:        "❌ fail",
	results.Observation: "👁 observation",
	results.Skipped:     "⏭ skipped",
	results.Setup:       "⚠️ setup failure",
	results.NoSpec:      "· no spec",
	results.NotSelected: "– not selected",
}

var order = []results.Status{results.Pass, results.Fail, results.Observation, results.Setup, results.Skipped, results.NotSelected, results.NoSpec}

// Markdown is a summary of files: counts per implementation, a table of
// rules by implementation, and the messages behind every cell that is not
// a pass.
func Markdown(files []results.File) string {
	var b strings.Builder
	b.WriteString("# Conformance results\n\n")
	if err := SameProfile(files); err != nil {
		fmt.Fprintf(&b, "**Warning: %s.** Timings differ between profiles: compare columns with care.\n\n", err)
	}
	b.WriteString("| implementation | profile | target | suite | ")
	for _, s := range order {
		fmt.Fprintf(&b, "%s | ", s)
	}
	b.WriteString("time |\n|---|---|---|---|")
	b.WriteString(strings.Repeat("---|", len(order)+1) + "\n")
	for _, f := range files {
		suite := "passed"
		if !f.SuitePassed {
			suite = "FAILED"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | ", f.Implementation, f.Profile, f.Target, suite)
		for _, s := range order {
			fmt.Fprintf(&b, "%d | ", f.Counts[s])
		}
		fmt.Fprintf(&b, "%.1fs |\n", f.Duration.Seconds())
	}
	b.WriteString("\n| rule | level | ")
	for _, f := range files {
		fmt.Fprintf(&b, "%s (%s) | ", mdCell(f.Implementation), mdCell(f.Profile))
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(files)) + "\n")
	for i, r := range catalog.All() {
		fmt.Fprintf(&b, "| %s | %s | ", r.ID, r.Level)
		for _, f := range files {
			b.WriteString(cellText(f, i, r.ID) + limitFlag(f, r.ID) + " | ")
		}
		b.WriteString("\n")
	}
	b.WriteString("\n## Details\n")
	for _, f := range files {
		fmt.Fprintf(&b, "\n### %s (%s)\n\n", f.Implementation, f.Profile)
		any := false
		for _, r := range f.Rules {
			for _, s := range r.Specs {
				if s.Status == results.Pass {
					continue
				}
				any = true
				status := string(s.Status)
				if s.AlsoExercised {
					status += " (also exercised: charged to the rule it is written for)"
				}
				// Enough lines to keep gomega's "Expected ... to equal ..." whole.
				fmt.Fprintf(&b, "- **%s** %s: %s — %s\n", r.ID, status, mdCell(s.Name), mdCell(firstLines(s.Message, 12)))
			}
		}
		if !any {
			b.WriteString("Every spec passed.\n")
		}
		if len(f.Limits) > 0 {
			b.WriteString("\nDeclared limits (⚑: the implementation has no setting for it; the specs ran anyway):\n\n")
			for _, l := range f.Limits {
				fmt.Fprintf(&b, "- **%s**%s: %s (%s)\n", l.Rule, scenarioOf(l), mdCell(l.Reason), l.Doc)
			}
		}
		for _, n := range f.Notes {
			fmt.Fprintf(&b, "\nNote: %s\n", mdCell(n))
		}
	}
	return b.String()
}

// SameProfile reports whether files mix timing profiles (their timeouts
// differ by the profile's unit, so their results are not comparable).
func SameProfile(files []results.File) error {
	seen := map[string][]string{}
	var profiles []string
	for _, f := range files {
		if _, ok := seen[f.Profile]; !ok {
			profiles = append(profiles, f.Profile)
		}
		seen[f.Profile] = append(seen[f.Profile], f.Implementation)
	}
	if len(profiles) <= 1 {
		return nil
	}
	var parts []string
	for _, p := range profiles {
		parts = append(parts, fmt.Sprintf("%s (%s)", p, strings.Join(seen[p], ", ")))
	}
	return fmt.Errorf("the results mix timing profiles: %s", strings.Join(parts, "; "))
}

// plainLabel drops a cell text's leading symbol.
func plainLabel(s string) string {
	if _, rest, ok := strings.Cut(s, " "); ok {
		return rest
	}
	return s
}

// limitFlag marks a cell whose implementation declared a limit for the rule.
func limitFlag(f results.File, id string) string {
	if len(f.LimitsOf(id)) > 0 {
		return " ⚑"
	}
	return ""
}

func scenarioOf(l results.Limit) string {
	if l.Scenario == "" {
		return ""
	}
	return " (" + l.Scenario + ")"
}

func cellText(f results.File, i int, id string) string {
	r, ok := ruleOf(f, i, id)
	if !ok {
		return symbols[results.NoSpec]
	}
	n := 0
	for _, s := range r.Specs {
		if s.Status == r.Status {
			n++
		}
	}
	if len(r.Specs) > 1 {
		return fmt.Sprintf("%s (%d/%d)", symbols[r.Status], n, len(r.Specs))
	}
	return symbols[r.Status]
}

// ruleOf finds rule id in f (at index i when the catalogs agree).
func ruleOf(f results.File, i int, id string) (results.Rule, bool) {
	if i < len(f.Rules) && f.Rules[i].ID == id {
		return f.Rules[i], true
	}
	for _, r := range f.Rules {
		if r.ID == id {
			return r, true
		}
	}
	return results.Rule{}, false
}

func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.Join(strings.Fields(s), " ")
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	out := strings.Join(lines, " ")
	if len(out) > 600 {
		out = out[:600] + "…"
	}
	return out
}

type htmlCell struct {
	Status  results.Status
	Label   string
	Anchor  string
	Message string
	// Limits are the implementation's declared limits for the rule.
	Limits []results.Limit
}

type htmlRow struct {
	catalog.Rule
	AreaStart string
	Cells     []htmlCell
}

type htmlDetail struct {
	Anchor, Impl, RuleID string
	Status               results.Status
	Specs                []results.Spec
	Limits               []results.Limit
}

// HTML is a static page: a table of rules by implementation, grouped by
// area, each cell linking to its details (every spec's status and
// message).
func HTML(files []results.File) ([]byte, error) {
	var rows []htmlRow
	var details []htmlDetail
	area := ""
	for i, r := range catalog.All() {
		row := htmlRow{Rule: r}
		if r.Area != area {
			area = r.Area
			row.AreaStart = r.Area + " — " + catalog.AreaTitle(r.Area)
		}
		for j, f := range files {
			rr, ok := ruleOf(f, i, r.ID)
			c := htmlCell{Status: results.NoSpec, Label: plainLabel(symbols[results.NoSpec])}
			if ok {
				// The cell's colour says the status: the label is plain text (no
				// emoji, which a browser without an emoji font shows as boxes).
				c = htmlCell{Status: rr.Status, Label: plainLabel(cellText(f, i, r.ID)), Message: firstLines(rr.Message, 6), Limits: f.LimitsOf(r.ID)}
				if len(rr.Specs) > 0 || len(c.Limits) > 0 {
					c.Anchor = fmt.Sprintf("d-%d-%s", j, r.ID)
					details = append(details, htmlDetail{Anchor: c.Anchor, Impl: f.Implementation, RuleID: r.ID, Status: rr.Status,
						Specs: rr.Specs, Limits: c.Limits})
				}
			}
			row.Cells = append(row.Cells, c)
		}
		rows = append(rows, row)
	}
	mixed := ""
	if err := SameProfile(files); err != nil {
		mixed = err.Error()
	}
	var buf bytes.Buffer
	err := page.Execute(&buf, struct {
		Files   []results.File
		Rows    []htmlRow
		Details []htmlDetail
		Order   []results.Status
		Cols    int
		Mixed   string
	}{files, rows, details, order, len(files) + 2, mixed})
	if err != nil {
		return nil, fmt.Errorf("rendering the HTML report: %w", err)
	}
	return buf.Bytes(), nil
}

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"count": func(f results.File, s results.Status) int { return f.Counts[s] },
	"secs":  func(f results.File) string { return fmt.Sprintf("%.1fs", f.Duration.Seconds()) },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>edgeconform conformance results</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:.3em .5em;vertical-align:top;font-size:14px}
th{background:#f4f4f4}
tr.area td{background:#e8eef8;font-weight:bold}
td.pass{background:#dff5df} td.fail{background:#f9d6d5} td.observation{background:#fdf1c7}
td.skipped{background:#eee;color:#666} td.not-selected{color:#999} td.setup{background:#f7d7f3} td.none{color:#aaa}
td.text{max-width:40em}
a.limit{font-size:12px;color:#7a4b00;white-space:nowrap}
a{color:inherit}
pre{white-space:pre-wrap;background:#f8f8f8;padding:.5em;max-width:100em}
</style></head><body>
<h1>edgeconform conformance results</h1>
{{if .Mixed}}<p style="background:#fdf1c7;padding:.5em"><b>Warning: {{.Mixed}}.</b> Timings differ between profiles: compare columns with care.</p>{{end}}
<table><tr><th>implementation</th><th>profile</th><th>target</th><th>suite</th>{{range .Order}}<th>{{.}}</th>{{end}}<th>time</th></tr>
{{range .Files}}<tr><td>{{.Implementation}}{{range .Notes}}<br><small>{{.}}</small>{{end}}</td><td>{{.Profile}}</td><td>{{.Target}}</td><td>{{if .SuitePassed}}passed{{else}}FAILED{{end}}</td>{{$f := .}}{{range $.Order}}<td>{{count $f .}}</td>{{end}}<td>{{secs .}}</td></tr>
{{end}}</table>
<h2>Rules</h2>
<table><tr><th>rule</th><th>rule text</th>{{range .Files}}<th>{{.Implementation}}<br><small>{{.Profile}}</small></th>{{end}}</tr>
{{range .Rows}}{{if .AreaStart}}<tr class="area"><td colspan="{{$.Cols}}">{{.AreaStart}}</td></tr>{{end}}
<tr><td>{{.ID}}<br><small>{{.Level}}</small></td><td class="text">{{.Text}}</td>{{range .Cells}}<td class="{{.Status}}" title="{{.Message}}">{{if .Anchor}}<a href="#{{.Anchor}}">{{.Label}}</a>{{else}}{{.Label}}{{end}}{{if .Limits}} <a class="limit" href="#{{.Anchor}}" title="{{range .Limits}}{{.Reason}} {{end}}">declared limit</a>{{end}}</td>{{end}}</tr>
{{end}}</table>
<h2>Details</h2>
{{range .Details}}<h3 id="{{.Anchor}}">{{.RuleID}} on {{.Impl}}: {{.Status}}</h3>
{{if .Limits}}<p>Declared limits (the implementation has no setting for it; the specs ran anyway):</p><ul class="limits">
{{range .Limits}}<li>{{if .Scenario}}<code>{{.Scenario}}</code>: {{end}}{{.Reason}}{{if .Doc}} — <a href="{{.Doc}}">documentation</a>{{end}}</li>
{{end}}</ul>{{end}}<ul>
{{range .Specs}}<li><b>{{.Status}}</b>{{if .AlsoExercised}} <small>(also exercised: charged to the rule it is written for)</small>{{end}} {{.Name}} <small>({{.Location}})</small>{{if .Message}}<pre>{{.Message}}</pre>{{end}}</li>
{{end}}</ul>
{{end}}</body></html>
`))
