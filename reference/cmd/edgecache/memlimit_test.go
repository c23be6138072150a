package main

import (
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

// Issue #12 item 5: serve sets the runtime's soft memory limit from
// --memory-limit, else GOMEMLIMIT, else --cache-size + 32 MiB; the
// previous limit comes back afterwards.
func TestMemoryLimit(t *testing.T) {
	const cache = 48 << 20
	tests := []struct {
		name, flag, env string
		want            int64
	}{
		{"derived from the cache size", "", "", cache + memoryHeadroom},
		{"flag", "300MiB", "", 300 << 20},
		{"flag over GOMEMLIMIT", "1GiB", "100MiB", 1 << 30},
		{"off", "off", "", math.MaxInt64},
		{"GOMEMLIMIT kept", "", "100MiB", -1}, // unchanged
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--config", "x.yaml", "--listen", "127.0.0.1:0", "--cache-size", "48MiB"}
			if tc.flag != "" {
				args = append(args, "--memory-limit", tc.flag)
			}
			f, err := parseServe(args)
			if err != nil {
				t.Fatal(err)
			}
			if tc.env != "" {
				t.Setenv("GOMEMLIMIT", tc.env)
			} else {
				t.Setenv("GOMEMLIMIT", "")
				os.Unsetenv("GOMEMLIMIT")
			}
			before := debug.SetMemoryLimit(-1)
			restore := applyMemoryLimit(f.memoryLimit, int64(f.cacheSize), slog.New(slog.DiscardHandler))
			got := debug.SetMemoryLimit(-1)
			restore()
			if after := debug.SetMemoryLimit(-1); after != before {
				t.Errorf("limit after restore %d, want %d", after, before)
			}
			want := tc.want
			if want == -1 {
				want = before
			}
			if got != want {
				t.Fatalf("memory limit %d, want %d", got, want)
			}
		})
	}
}

func TestMemoryLimitBadValue(t *testing.T) {
	for _, v := range []string{"12XB", "-5MiB", "0", "of"} {
		_, err := parseServe([]string{"--config", "x.yaml", "--listen", "127.0.0.1:0", "--memory-limit", v})
		if err == nil || !strings.Contains(err.Error(), "memory-limit") || !strings.Contains(err.Error(), v) {
			t.Errorf("--memory-limit %q: error %v, want one naming the flag and the value", v, err)
		}
	}
}
