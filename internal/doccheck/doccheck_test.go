package doccheck

import (
	"bufio"
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the module's root, relative to this package's directory.
const root = "../.."

// markdownFiles lists the module's Markdown files (git's, so build output
// and conformance.out/ are not included), relative to the root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("listing Markdown files with git ls-files: %v", err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			files = append(files, f)
		}
	}
	if !slices.Contains(files, "README.md") {
		t.Fatalf("git ls-files listed no README.md: %v", files)
	}
	return files
}

// link is one inline Markdown link: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// links returns the link targets of a Markdown document outside code
// fences and inline code, with their line numbers.
func links(doc []byte) (targets []string, lines []int) {
	fence := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		line = regexp.MustCompile("`[^`]*`").ReplaceAllString(line, "")
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
			lines = append(lines, n)
		}
	}
	return targets, lines
}

// anchors are the fragment names GitHub gives a document's headings.
func anchors(doc []byte) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	fence := false
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		a := slug(strings.TrimLeft(line, "#"))
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// slug is GitHub's heading anchor: lower case, spaces to hyphens, other
// punctuation dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// TestLinksResolve: every relative link of every Markdown file leads to a
// file or folder of the checkout, and a #fragment to one of its headings.
func TestLinksResolve(t *testing.T) {
	checked := 0
	for _, file := range markdownFiles(t) {
		doc, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		targets, lines := links(doc)
		for i, target := range targets {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			where := file + ":" + strconv.Itoa(lines[i])
			p, frag, _ := strings.Cut(target, "#")
			dest := file
			if p != "" {
				dest = path.Join(path.Dir(file), p)
			}
			if strings.HasPrefix(dest, "../") {
				continue // ../shared: outside the checkout
			}
			body, err := os.ReadFile(filepath.Join(root, dest))
			if err != nil {
				if _, statErr := os.Stat(filepath.Join(root, dest)); statErr == nil {
					continue // a folder
				}
				t.Errorf("%s links %s: %s does not exist", where, target, dest)
				continue
			}
			if frag != "" && strings.HasSuffix(dest, ".md") && !anchors(body)[frag] {
				t.Errorf("%s links %s: %s has no heading with the anchor #%s", where, target, dest, frag)
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d relative links checked: is the link pattern still right?", checked)
	}
}

// tablePackages reads the first cells of the table under the README's
// "## Packages" heading: one or more backquoted packages per row, the
// later ones possibly short ("`emulators/wire`, `wire/h2`", "`suites/peers/nginx`,
// `varnish`"): a short one is taken relative to the first one's parent.
func tablePackages(t *testing.T, readme string) map[string]int {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "\n## Packages\n")
	if !ok {
		t.Fatal(`README.md has no "## Packages" heading`)
	}
	rows := map[string]int{}
	inTable := false
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(line, "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") || strings.TrimSpace(cells[1]) == "package" {
			continue
		}
		names := regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[1], -1)
		if len(names) == 0 {
			t.Errorf("README package row without a backquoted package: %s", line)
			continue
		}
		first := names[0][1]
		for i, m := range names {
			p := m[1]
			if i > 0 && !strings.HasPrefix(p, strings.SplitN(first, "/", 2)[0]+"/") {
				p = path.Join(path.Dir(first), p)
			}
			rows[p]++
		}
	}
	return rows
}

// TestPackageMapMatchesTree: the README's package map has exactly one row
// for every package of the module (go list ./...), and no other.
func TestPackageMapMatchesTree(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	tree := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		tree[strings.TrimPrefix(p, "github.com/edgeconform/edgeconform/")] = true
	}
	rows := tablePackages(t, string(readme))
	for _, p := range slices.Sorted(maps.Keys(tree)) {
		if rows[p] == 0 {
			t.Errorf("README's package map has no row for %s: add one saying its one job", p)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(rows)) {
		switch {
		case !tree[p]:
			t.Errorf("README's package map names %s, which is not a package of the tree", p)
		case rows[p] > 1:
			t.Errorf("README's package map names %s %d times", p, rows[p])
		}
	}
}
