package rules

import (
	"fmt"
	"testing"
)

// BenchmarkTableFireUnmatched measures one rule lookup for a request no rule
// matches, with n rules on other paths (exact paths, prefixes and
// listener-only rules): an index keeps it from growing with n.
func BenchmarkTableFireUnmatched(b *testing.B) {
	for _, n := range []int{0, 100, 10000} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			tb := NewTable(nil)
			if _, err := tb.Add(benchRules(n)...); err != nil {
				b.Fatal(err)
			}
			tgt := Target{Listener: "http", Method: "GET", Path: "/unmatched/segment/0001.ts"}
			b.ResetTimer()
			for b.Loop() {
				if _, ok := tb.Fire(tgt); ok {
					b.Fatal("a rule fired")
				}
			}
		})
	}
}

// benchRules returns n unlimited rules none of which matches
// /unmatched/...: mostly exact paths, some prefixes, a few listener-only.
func benchRules(n int) []Rule {
	rs := make([]Rule, n)
	for i := range rs {
		var m Match
		switch i % 10 {
		case 0:
			m.PathPrefix = fmt.Sprintf("/p%d/", i)
		case 1:
			m.Listener = "other"
		default:
			m.Path = fmt.Sprintf("/obj/%d", i)
		}
		rs[i] = Rule{Match: m, Unlimited: true, Action: Action{Status: 503}}
	}
	return rs
}
