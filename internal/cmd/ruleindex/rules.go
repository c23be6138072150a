package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Rule is one rule of behaviour.md.
type Rule struct {
	ID, Level, Text string
	Area            string // the section heading the rule is under
}

// ruleLine is a rule of behaviour.md: "- ATT-4 DOC: text" (TMO-8 and TMO-9
// say "DOC (worked example):"); the same format suites/catalog reads.
var ruleLine = regexp.MustCompile(`^- ([A-Z]{3}-\d+) (DOC|INT|EXT)(?: \(worked example\))?: (.+)$`)

// readRules reads the rules of behaviour.md in their order, each with the
// "## " heading it is under.
func readRules(path string) ([]Rule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the rules: %w", err)
	}
	var rules []Rule
	area := ""
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if h, ok := strings.CutPrefix(line, "## "); ok {
			area = h
			continue
		}
		m := ruleLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if seen[m[1]] {
			return nil, fmt.Errorf("%s: rule %s appears twice", path, m[1])
		}
		seen[m[1]] = true
		rules = append(rules, Rule{ID: m[1], Level: m[2], Text: m[3], Area: area})
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("%s: no rule lines (\"- ATT-4 DOC: text\"): has its format changed?", path)
	}
	return rules, nil
}
