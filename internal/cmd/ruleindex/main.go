// Command ruleindex writes docs/rules.md, the rule → file index: for every
// rule of ../shared/spec/behaviour.md, its level and text, the reference's
// non-test files whose comments cite it (where it is implemented), the
// tests and conformance specs that cite it, and the other non-test files
// that do (the emulators, the peer generators). Run it at the module's root
// after moving code:
//
//	go run ./internal/cmd/ruleindex > docs/rules.md
//
// Its test fails when docs/rules.md is stale, and when a DOC or INT rule
// has no implementing file in reference/ (except those listed in
// noImplementation, with the reason).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// Command is how docs/rules.md is regenerated; the page and the stale
// test print it.
const Command = "go run ./internal/cmd/ruleindex > docs/rules.md"

func main() {
	root := flag.String("root", ".", "the module's root")
	spec := flag.String("spec", "", "behaviour.md (default: ROOT/../shared/spec/behaviour.md)")
	flag.Parse()
	if *spec == "" {
		*spec = filepath.Join(*root, "..", "shared", "spec", "behaviour.md")
	}
	out, err := generate(*root, *spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ruleindex:", err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}

// generate builds the index from the rules in spec and the Go files under
// root.
func generate(root, spec string) ([]byte, error) {
	rules, err := readRules(spec)
	if err != nil {
		return nil, err
	}
	cites, err := scanTree(root, rules)
	if err != nil {
		return nil, err
	}
	return render(rules, cites), nil
}
