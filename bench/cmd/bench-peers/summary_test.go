package main

import (
	"strings"
	"testing"
)

// TestSummarize: the -runs table takes each row's median ratio over the
// runs that have it, with min–max, and judges that median against the
// goal, never rounding a miss up to it.
func TestSummarize(t *testing.T) {
	rows := []row{{name: "hit-1k"}, {name: "proxy-1k"}}
	run := func(on, off map[string]float64) ratios { return ratios{on: on, off: off} }
	for _, tc := range []struct {
		name string
		runs []ratios
		want []string // lines or fragments the table must hold
		not  []string // fragments it must not
	}{
		{
			name: "median of three, goal met and missed",
			runs: []ratios{
				run(map[string]float64{"hit-1k": 1.10, "proxy-1k": 0.60}, map[string]float64{"hit-1k": 0.95, "proxy-1k": 0.58}),
				run(map[string]float64{"hit-1k": 0.97, "proxy-1k": 0.68}, map[string]float64{"hit-1k": 0.88, "proxy-1k": 0.61}),
				run(map[string]float64{"hit-1k": 1.02, "proxy-1k": 0.65}, map[string]float64{"hit-1k": 1.20, "proxy-1k": 0.66}),
			},
			want: []string{
				"### 3 whole runs",
				"| hit-1k | **1.02×** (0.97–1.10) | yes | **0.95×** (0.88–1.20) | yes |",
				"| proxy-1k | **0.65×** (0.60–0.68) | no | **0.61×** (0.58–0.66) | no |",
				"below the goal: proxy-1k (logging on), proxy-1k (logging off)",
			},
		},
		{
			name: "a median just under the goal is cut, not rounded up",
			runs: []ratios{run(map[string]float64{"hit-1k": 0.996, "proxy-1k": 1.0}, map[string]float64{"hit-1k": 0.899, "proxy-1k": 0.9})},
			want: []string{
				"### 1 whole run:",
				"| hit-1k | **0.99×** (0.99–0.99) | no | **0.89×** (0.89–0.89) | no |",
				"| proxy-1k | **1.00×** (1.00–1.00) | yes | **0.90×** (0.90–0.90) | yes |",
				"below the goal: hit-1k (logging on), hit-1k (logging off)",
			},
		},
		{
			name: "even count and a row one run lacks",
			runs: []ratios{
				run(map[string]float64{"hit-1k": 1.00, "proxy-1k": 1.13}, map[string]float64{"hit-1k": 1.0}),
				run(map[string]float64{"hit-1k": 1.20}, map[string]float64{"hit-1k": 1.0}),
			},
			want: []string{
				"| hit-1k | **1.10×** (1.00–1.20) | yes | **1.00×** (1.00–1.00) | yes |",
				"| proxy-1k | **1.13×** (1.13–1.13) | yes | — | — |",
				"every row meets the goal",
			},
			not: []string{"below the goal", "wrk-bound"},
		},
		{
			name: "wrk-bound rows are named with how many runs found them so",
			runs: []ratios{
				{on: map[string]float64{"hit-1k": 0.9, "proxy-1k": 1}, off: map[string]float64{"hit-1k": 1}, boundOn: map[string]bool{"hit-1k": true}},
				{on: map[string]float64{"hit-1k": 0.8, "proxy-1k": 1}, off: map[string]float64{"hit-1k": 1}, boundOn: map[string]bool{"hit-1k": true}, boundOff: map[string]bool{"hit-1k": true}},
				{on: map[string]float64{"hit-1k": 1.1}, off: map[string]float64{"hit-1k": 1}},
			},
			want: []string{
				"below the goal: hit-1k (logging on)",
				"wrk-bound (wrk's one thread at 90% of a core or more against both servers",
				": hit-1k (logging on, 2 of 3 runs), hit-1k (logging off, 1 of 3 runs)\n",
			},
			not: []string{"proxy-1k (logging"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize(rows, tc.runs)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("summary lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("summary holds %q:\n%s", n, got)
				}
			}
		})
	}
}
