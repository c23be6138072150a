package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

func TestPercentFor(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name        string
		floor, scan uint64
		base, want  int
	}{
		{"tiny heap: the runtime's minimum scales with the percentage", 16 * mib, 1 * mib, 100, 400},
		{"heap at the minimum", 16 * mib, 4 * mib, 100, 400},
		{"heap past the minimum", 16 * mib, 8 * mib, 100, 200},
		{"heap the base already covers", 16 * mib, 64 * mib, 100, 100},
		{"a higher base wins", 16 * mib, 8 * mib, 300, 300},
		{"rounded up, not down", 10 * mib, 4 * mib, 100, 250},
		{"bounded", 1 << 40, 0, 100, maxPercent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentFor(tc.floor, tc.base, tc.scan); got != tc.want {
				t.Errorf("percentFor(%d, %d, %d) = %d, want %d", tc.floor, tc.base, tc.scan, got, tc.want)
			}
		})
	}
}

var sink []byte

// churn allocates n bytes in 4 KiB pieces, none kept, and reports how many
// collections ran meanwhile.
func churn(n int) uint32 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < n/4096; i++ {
		sink = make([]byte, 4096)
	}
	runtime.ReadMemStats(&after)
	return after.NumGC - before.NumGC
}

// With a floor the runtime's heap goal after a cycle on a small heap is
// about the floor (it is 4 MiB without), and the collector runs about
// once per floor of allocation. Stop restores the percentage found.
func TestFloorCollectsLessOften(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	runtime.GC()
	without := churn(256 << 20)

	tu, err := Start(64 << 20)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC() // a cycle to adjust after
	waitCycles(t, tu, 2)
	// Read on a quiet heap: the goal the last adjustment gave (within the
	// tenth a change must exceed to be made).
	if goal := heapGoal(); goal < 64<<20*9/10 {
		t.Errorf("heap goal %d MiB after cycles with a 64 MiB floor, want about 64", goal>>20)
	}
	with := churn(256 << 20)
	p, cycles := tu.Percent()
	t.Logf("collections over 256 MiB: %d without a floor, %d with 64 MiB (percent %d after %d cycles)", without, with, p, cycles)
	// The live heap a cycle reports counts what was allocated while it
	// marked, so under churn (and more so on a loaded machine, where
	// marking takes longer) it reads above the few MiB retained: the
	// percentage varies, and so does the count without a floor (5 to 84
	// seen), which is logged, not compared.
	if with > 8 {
		t.Errorf("collections over 256 MiB: %d with a 64 MiB floor, want at most 8", with)
	}
	tu.Stop()
	if p := current(); p != 100 {
		t.Errorf("percent %d after Stop, want 100 restored", p)
	}
	runtime.GC()
	runtime.GC()
	if p := current(); p != 100 {
		t.Errorf("percent %d after Stop and two cycles, want 100: the tuner still adjusts", p)
	}
}

func heapGoal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func current() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(int64(s[0].Value.Uint64()))
}

// waitCycles waits until the tuner has adjusted n times (cleanups run on
// their own goroutine after a cycle).
func waitCycles(t *testing.T, tu *Tuner, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, c := tu.Percent(); c >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tuner saw fewer than %d cycles in 5s", n)
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
}

func TestFloorRefuses(t *testing.T) {
	if _, err := Start(0); err == nil || !strings.Contains(err.Error(), "floor 0") {
		t.Errorf("Start(0) = %v, want an error naming the floor", err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	if _, err := Start(1 << 20); err == nil || !strings.Contains(err.Error(), "GOGC=off") {
		t.Errorf("Start with GOGC off = %v, want an error saying so", err)
	}
}
