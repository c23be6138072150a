package main

import (
	"log/slog"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
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
			f := serveWith(t, "--memory-limit", tc.flag, "--cache-size", "48MiB")
			setEnv(t, "GOMEMLIMIT", tc.env)
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

// serveWith parses serve's flags with flag set to value (left out when
// value is empty) and extra.
func serveWith(t *testing.T, flag, value string, extra ...string) *serveFlags {
	t.Helper()
	args := append([]string{"--config", "x.yaml", "--listen", "127.0.0.1:0"}, extra...)
	if value != "" {
		args = append(args, flag, value)
	}
	f, err := parseServe(args)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// setEnv sets k to v for the test, or unsets it when v is empty.
func setEnv(t *testing.T, k, v string) {
	t.Setenv(k, v) // restored after the test
	if v == "" {
		os.Unsetenv(k)
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

func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(int64(s[0].Value.Uint64()))
}

// Issue #14: serve keeps a floor under the collector's growth (--gc-floor,
// default 16 MiB) unless it is off or GOGC is set; stop restores GOGC's.
func TestGCFloor(t *testing.T) {
	for _, tc := range []struct {
		name, flag, env string
		raised          bool
	}{
		{"default", "", "", true},
		{"flag", "64MiB", "", true},
		{"flag over GOGC", "64MiB", "100", true},
		{"off", "off", "", false},
		{"GOGC kept", "", "100", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := serveWith(t, "--gc-floor", tc.flag)
			setEnv(t, "GOGC", tc.env)
			defer debug.SetGCPercent(debug.SetGCPercent(100))
			runtime.GC() // the test binary's live heap is small
			stop, err := applyGCFloor(f.gcFloor, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			got := gcPercent()
			stop()
			if p := gcPercent(); p != 100 {
				t.Errorf("percent %d after stop, want 100", p)
			}
			if raised := got > 100; raised != tc.raised {
				t.Errorf("percent %d after applyGCFloor, raised=%v, want %v", got, raised, tc.raised)
			}
		})
	}
}

func TestGCFloorBadValue(t *testing.T) {
	for _, v := range []string{"12XB", "-5MiB", "0", "of"} {
		_, err := parseServe([]string{"--config", "x.yaml", "--listen", "127.0.0.1:0", "--gc-floor", v})
		if err == nil || !strings.Contains(err.Error(), "gc-floor") || !strings.Contains(err.Error(), v) {
			t.Errorf("--gc-floor %q: error %v, want one naming the flag and the value", v, err)
		}
	}
}
