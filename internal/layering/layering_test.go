package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/edgeconform/edgeconform/"

// pkg is the part of `go list -json` the checks read. Paths are relative
// to the module ("reference/edge"); packages outside it are dropped from
// the import lists.
type pkg struct {
	ImportPath   string
	Name         string
	Doc          string // the first sentence
	Dir          string
	GoFiles      []string
	Imports      []string // non-test, direct
	Deps         []string // non-test, transitive
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

var (
	loadOnce sync.Once
	loaded   map[string]*pkg
	loadErr  error
)

// packages lists the module's packages once per test binary.
func packages(t *testing.T) map[string]*pkg {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = goList() })
	if loadErr != nil {
		t.Fatalf("listing the module's packages: %v", loadErr)
	}
	return loaded
}

func goList() (map[string]*pkg, error) {
	cmd := exec.Command("go", "list", "-e", "-json", "./...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.Join(err, errors.New(stderr.String()))
	}
	pkgs := map[string]*pkg{}
	d := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := d.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		if p.Error != nil {
			return nil, errors.New(p.ImportPath + ": " + p.Error.Err)
		}
		if !strings.HasPrefix(p.ImportPath, module) {
			return nil, errors.New("go list ./... listed " + p.ImportPath + ", not a package of " + module)
		}
		p.ImportPath = strings.TrimPrefix(p.ImportPath, module)
		for _, l := range []*[]string{&p.Imports, &p.Deps, &p.TestImports, &p.XTestImports} {
			*l = ours(*l)
		}
		pkgs[p.ImportPath] = &p
	}
	if len(pkgs) < 10 {
		return nil, errors.New("go list ./... listed fewer than 10 packages: not run at the module root?")
	}
	return pkgs, nil
}

// ours keeps the module's packages of paths, relative to the module.
func ours(paths []string) []string {
	var out []string
	for _, p := range paths {
		if rel, ok := strings.CutPrefix(p, module); ok {
			out = append(out, rel)
		}
	}
	return out
}

func under(path, folder string) bool {
	return path == folder || strings.HasPrefix(path, folder+"/")
}

func sortedKeys(m map[string]*pkg) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestFoldersImportDownward: the emulators and the reference are the
// ground floor; deploy, suites and bench are built on them and never the
// other way round; internal serves every floor and imports none of them;
// the reference does not reach into the emulators (its tests may: they run
// real emulated origins).
func TestFoldersImportDownward(t *testing.T) {
	pkgs := packages(t)
	rules := []struct {
		from, to string
		tests    bool // test files are held to the rule too
		allowed  map[string]string
	}{
		{from: "emulators", to: "deploy", tests: true, allowed: map[string]string{
			"deploy/dockertest": "the container tests' Docker gate (skip or fail without an engine); test files only"}},
		{from: "reference", to: "deploy", tests: true, allowed: map[string]string{
			"deploy/dockertest": "the container tests' Docker gate (skip or fail without an engine); test files only"}},
		{from: "emulators", to: "suites", tests: true},
		{from: "reference", to: "suites", tests: true},
		{from: "emulators", to: "bench", tests: true},
		{from: "reference", to: "bench", tests: true},
		{from: "emulators", to: "reference", tests: true},
		{from: "reference", to: "emulators"},
		{from: "internal", to: "emulators"},
		{from: "internal", to: "reference"},
		{from: "internal", to: "deploy"},
		{from: "internal", to: "suites"},
		{from: "internal", to: "bench"},
	}
	for _, r := range rules {
		t.Run(r.from+"_not_"+r.to, func(t *testing.T) {
			for _, path := range sortedKeys(pkgs) {
				p := pkgs[path]
				if !under(path, r.from) {
					continue
				}
				for _, dep := range p.Deps {
					if under(dep, r.to) {
						t.Errorf("%s depends on %s (%s/ must not import %s/)", path, dep, r.from, r.to)
					}
				}
				if !r.tests {
					continue
				}
				for _, imp := range slices.Concat(p.TestImports, p.XTestImports) {
					if !under(imp, r.to) || under(imp, r.from) {
						continue
					}
					if _, ok := r.allowed[imp]; ok {
						continue
					}
					t.Errorf("%s's tests import %s (%s/ must not import %s/)", path, imp, r.from, r.to)
				}
			}
		})
	}
}

// serverOnly are the emulator's server packages: listeners, protocol
// servers, the control API's server, the bucket services. A control-API
// client links none of them. (Package wire is the request and header types
// the journal records, no server.)
var serverOnly = []string{
	"emulators/originemu",
	"emulators/control",
	"emulators/wire/http1",
	"emulators/wire/h2",
	"emulators/proxy",
	"emulators/testca",
	"emulators/s3emu",
	"emulators/gcsemu",
	"emulators/blobstore",
}

// TestEmuclientLinksNoServer: `go list -deps ./emulators/emuclient` holds
// no server package; the client and the server share the API types of
// emulators/emuapi instead.
func TestEmuclientLinksNoServer(t *testing.T) {
	pkgs := packages(t)
	c, ok := pkgs["emulators/emuclient"]
	if !ok {
		t.Fatal("no package emulators/emuclient")
	}
	for _, dep := range c.Deps {
		for _, s := range serverOnly {
			if under(dep, s) {
				t.Errorf("emulators/emuclient depends on the server package %s", dep)
			}
		}
	}
	if !slices.Contains(c.Deps, "emulators/emuapi") {
		t.Errorf("emulators/emuclient does not use emulators/emuapi, the API types it shares with the server; deps: %v", c.Deps)
	}
}

// TestPackageNamesUnique: no two packages share a name (a name used twice
// forces an alias on whoever imports both); commands are all main.
func TestPackageNamesUnique(t *testing.T) {
	byName := map[string][]string{}
	pkgs := packages(t)
	for _, path := range sortedKeys(pkgs) {
		if p := pkgs[path]; p.Name != "main" {
			byName[p.Name] = append(byName[p.Name], path)
		}
	}
	for name, paths := range byName {
		if len(paths) > 1 {
			t.Errorf("%d packages are named %s: %s", len(paths), name, strings.Join(paths, ", "))
		}
	}
	if got := byName["topology"]; len(got) != 1 {
		t.Errorf("packages named topology: %v, want exactly suites/topology", got)
	}
}

// TestEveryPackageHasDoc: every package has a doc comment that starts the
// Go way ("Package name ..." or, for a command, "Command name ...") and says
// nothing is still to come.
func TestEveryPackageHasDoc(t *testing.T) {
	pkgs := packages(t)
	for _, path := range sortedKeys(pkgs) {
		p := pkgs[path]
		want := "Package " + p.Name + " "
		if p.Name == "main" {
			want = "Command "
		}
		switch {
		case p.Doc == "":
			t.Errorf("%s (package %s) has no doc comment saying its one job (add a doc.go)", path, p.Name)
		case !strings.HasPrefix(p.Doc, want):
			t.Errorf("%s's doc comment starts %q, want %q...", path, p.Doc, want)
		}
		for _, doc := range fullDocs(t, p) {
			if strings.Contains(strings.ToLower(doc), "still to come") {
				t.Errorf("%s's doc comment says something is still to come: %q", path, doc)
			}
		}
	}
}

// fullDocs is every package doc comment in p's non-test files, whole.
func fullDocs(t *testing.T, p *pkg) []string {
	t.Helper()
	var docs []string
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatalf("reading %s's package clause: %v", p.ImportPath, err)
		}
		if f.Doc != nil {
			docs = append(docs, f.Doc.Text())
		}
	}
	return docs
}
