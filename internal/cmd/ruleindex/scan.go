package main

import (
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Kind is where a citing file sits.
type Kind int

const (
	// Implementation: a non-test file of reference/ (comments only).
	Implementation Kind = iota
	// Test: a _test.go file anywhere, conformance specs included
	// (comments, and string literals: the specs' labels).
	Test
	// Elsewhere: a non-test file outside reference/ (comments only): the
	// emulators, the peer generators, the suites' code.
	Elsewhere
)

// Cites counts, per rule ID and kind, the citations in each file (paths
// relative to the root, with slashes).
type Cites map[string]map[Kind]map[string]int

// ruleRef is a rule ID in text, or a range of them ("CCH-1..7").
var ruleRef = regexp.MustCompile(`\b([A-Z]{3})-(\d+)(?:\.\.(\d+))?\b`)

// skipDirs are not scanned: generated output, fixtures' data, and this
// command (its comments name rules as examples).
var skipDirs = map[string]bool{"testdata": true, "conformance.out": true, "internal/cmd/ruleindex": true}

// scanTree reads every Go file under root.
func scanTree(root string, rules []Rule) (Cites, error) {
	known := map[string]bool{}
	for _, r := range rules {
		known[r.ID] = true
	}
	cites := Cites{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || skipDirs[d.Name()] || skipDirs[rel]) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") {
			return nil
		}
		return scanFile(path, rel, known, cites)
	})
	if err != nil {
		return nil, fmt.Errorf("scanning %s: %w", root, err)
	}
	return cites, nil
}

// scanFile adds the citations of one Go file.
func scanFile(path, rel string, known map[string]bool, cites Cites) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	kind := Elsewhere
	switch {
	case strings.HasSuffix(rel, "_test.go"):
		kind = Test
	case strings.HasPrefix(rel, "reference/"):
		kind = Implementation
	}
	var s scanner.Scanner
	fset := token.NewFileSet()
	var scanErr error
	s.Init(fset.AddFile(rel, -1, len(src)), src, func(pos token.Position, msg string) {
		if scanErr == nil {
			scanErr = fmt.Errorf("%s: %s", pos, msg)
		}
	}, scanner.ScanComments)
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.COMMENT || (kind == Test && tok == token.STRING) {
			for _, id := range ruleIDs(lit, known) {
				add(cites, id, kind, rel)
			}
		}
	}
	return scanErr
}

// ruleIDs lists the known rule IDs text cites, ranges expanded.
func ruleIDs(text string, known map[string]bool) []string {
	var ids []string
	for _, m := range ruleRef.FindAllStringSubmatch(text, -1) {
		from, _ := strconv.Atoi(m[2])
		to := from
		if m[3] != "" {
			to, _ = strconv.Atoi(m[3])
		}
		for n := from; n <= to && n < from+50; n++ {
			if id := m[1] + "-" + strconv.Itoa(n); known[id] {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

func add(c Cites, id string, k Kind, file string) {
	if c[id] == nil {
		c[id] = map[Kind]map[string]int{}
	}
	if c[id][k] == nil {
		c[id][k] = map[string]int{}
	}
	c[id][k][file]++
}
