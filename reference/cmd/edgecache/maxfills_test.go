package main

import (
	"errors"
	"strings"
	"testing"
)

// --max-fills (issue #12 item 2): a bound on fills in flight, 0 for none,
// a negative value a usage error naming the flag.
func TestMaxFillsFlag(t *testing.T) {
	base := []string{"--config", "c.yaml", "--listen", "127.0.0.1:0"}
	for _, tc := range []struct {
		args []string
		want int // edge.WithMaxFills's argument; 0: a usage error
	}{
		{nil, 1024},
		{[]string{"--max-fills", "5"}, 5},
		{[]string{"--max-fills", "0"}, -1},
		{[]string{"--max-fills", "-3"}, 0},
	} {
		f, err := parseServe(append(base, tc.args...))
		if tc.want == 0 {
			var ue *usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--max-fills") || !strings.Contains(err.Error(), "-3") {
				t.Errorf("%v: %v, want a usage error naming --max-fills", tc.args, err)
			}
			continue
		}
		if err != nil || maxFills(f.maxFills) != tc.want {
			t.Errorf("%v: %v, %+v; want %d", tc.args, err, f, tc.want)
		}
	}
}
