package main

import (
	"math"
	"runtime"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	for _, tc := range []struct {
		name       string
		in         string
		busy, idle time.Duration
		bad        bool
	}{
		{name: "kernel 6", in: "cpu  100 5 40 800 20 1 4 30 0 0\ncpu0 50 2 20 400 10 0 2 15 0 0\n",
			busy: 150 * clockTick, idle: 820 * clockTick},
		{name: "old kernel, seven times", in: "cpu 1 2 3 4 5 6 7\n", busy: 19 * clockTick, idle: 9 * clockTick},
		{name: "not the aggregate line", in: "cpu0 1 2 3 4 5 6 7\n", bad: true},
		{name: "too few times", in: "cpu 1 2 3 4 5 6\n", bad: true},
		{name: "not a number", in: "cpu 1 2 x 4 5 6 7\n", bad: true},
		{name: "negative", in: "cpu 1 2 -3 4 5 6 7\n", bad: true},
		{name: "empty", in: "", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := parseProcStat(tc.in)
			if tc.bad {
				if err == nil {
					t.Fatalf("parsed %q as %+v, want an error", tc.in, m)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.busy != tc.busy || m.idle != tc.idle {
				t.Errorf("busy %v idle %v, want %v and %v", m.busy, m.idle, tc.busy, tc.idle)
			}
		})
	}
}

func TestMachineSince(t *testing.T) {
	a := machineCPU{busy: time.Second, idle: time.Second}
	b := machineCPU{busy: 3 * time.Second, idle: 1500 * time.Millisecond} // 2 s busy, 0.5 s idle
	per, idle, err := b.since(a, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if per != 200 || math.Abs(idle-0.2) > 1e-9 {
		t.Errorf("%.1f µs per request, idle %.3f: want 200 and 0.200", per, idle)
	}
	if _, _, err := a.since(a, 10); err == nil {
		t.Error("no time passed: want an error")
	}
	if _, _, err := b.since(a, 0); err == nil {
		t.Error("no request: want an error")
	}
	if _, _, err := a.since(b, 10); err == nil {
		t.Error("samples the wrong way round: want an error")
	}
}

// TestReadMachineCPU: on Linux, the machine's clock moves while a core
// spins.
func TestReadMachineCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/stat is Linux's")
	}
	a, err := readMachineCPU()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(100 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	b, err := readMachineCPU()
	if err != nil {
		t.Fatal(err)
	}
	if b.busy+b.idle <= a.busy+a.idle {
		t.Errorf("no CPU time passed over 100 ms of spinning: %+v then %+v", a, b)
	}
}

func TestPerRound(t *testing.T) {
	rounds := [][2]float64{{150, 0.10}, {170, 0.05}, {160, 0.125}}
	if got, want := machinePer(rounds), "160.0, 10.0%"; got != want {
		t.Errorf("machinePer = %q, want %q", got, want)
	}
	if got, want := clientPer(rounds), "160.0, 10%"; got != want {
		t.Errorf("clientPer = %q, want %q", got, want)
	}
	if got := machinePer(nil); got != "—" {
		t.Errorf("machinePer without rounds = %q, want —", got)
	}
}
