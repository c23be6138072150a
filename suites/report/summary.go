package report

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/suites/catalog"
	"github.com/edgeconform/edgeconform/suites/results"
)

// Summary is a short Markdown matrix for a console or a README: rules per
// status for each implementation, then the rules where the
// implementations differ most (the most implementations not passing).
func Summary(files []results.File) string {
	var b strings.Builder
	b.WriteString("| implementation | profile | pass | fail | observation | setup | skipped | limits |\n|---|---|---|---|---|---|---|---|\n")
	for _, f := range files {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %d |\n", mdCell(f.Implementation), f.Profile,
			f.Counts[results.Pass], f.Counts[results.Fail], f.Counts[results.Observation], f.Counts[results.Setup],
			f.Counts[results.Skipped], len(f.Limits))
	}
	type diff struct {
		id  string
		not int
	}
	var diffs []diff
	for i, r := range catalog.All() {
		n := 0
		for _, f := range files {
			if rr, ok := ruleOf(f, i, r.ID); ok && (rr.Status == results.Fail || rr.Status == results.Observation || rr.Status == results.Setup) {
				n++
			}
		}
		if n > 0 {
			diffs = append(diffs, diff{r.ID, n})
		}
	}
	slices.SortStableFunc(diffs, func(a, b diff) int { return cmp.Compare(b.not, a.not) })
	if len(diffs) == 0 {
		return b.String()
	}
	b.WriteString("\nRules where the implementations differ most:\n\n| rule | ")
	for _, f := range files {
		b.WriteString(mdCell(f.Implementation) + " | ")
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(files)) + "\n")
	for _, d := range diffs[:min(len(diffs), 12)] {
		i := slices.IndexFunc(catalog.All(), func(r catalog.Rule) bool { return r.ID == d.id })
		fmt.Fprintf(&b, "| %s | ", d.id)
		for _, f := range files {
			b.WriteString(cellText(f, i, d.id) + limitFlag(f, d.id) + " | ")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Screenshot renders the HTML page at htmlPath with headless Chromium into
// pngPath: the check that the report displays in a real browser. It
// returns pngPath, or an error when Chromium is missing or fails.
func Screenshot(ctx context.Context, htmlPath, pngPath string) (string, error) {
	bin := ""
	for _, b := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(b); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		return "", fmt.Errorf("no chromium on PATH (apt-get install -y chromium)")
	}
	abs, err := filepath.Abs(htmlPath)
	if err != nil {
		return "", err
	}
	profile, err := os.MkdirTemp("", "edgeconform-chromium-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(profile)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+profile, "--window-size=1400,2400", "--screenshot="+pngPath, "file://"+abs)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("chromium --screenshot: %w\n%s", err, tail(string(out), 1500))
	}
	st, err := os.Stat(pngPath)
	if err != nil || st.Size() == 0 {
		return "", fmt.Errorf("chromium wrote no screenshot to %s (%v)\n%s", pngPath, err, tail(string(out), 1500))
	}
	return pngPath, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
