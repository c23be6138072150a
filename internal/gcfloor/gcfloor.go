// Package gcfloor keeps Go's garbage collector from running more often than
// once per a floor of new allocation when the live heap is small.
//
// With GOGC=100 the collector starts a cycle when the heap has grown by
// the live heap's size, and at least at 4 MiB. A cache whose store holds
// little (a benchmark's three objects, a demo) has a live heap of 2 MiB or
// so, and under load collects 50 times a second: on a 1 KiB hit at 35k
// requests a second that was a quarter of the process's CPU (issue #14;
// the collector's fixed costs, stack scans and the wake-ups of its
// workers, are paid per cycle). A floor puts a lower bound on the growth
// instead: after each cycle the percentage is raised so that the next
// goal is at least about the floor past the live heap, and set back to the
// base once the live heap is large enough that the base already allows
// that. A large heap (a full cache) is collected as with the base alone,
// and the soft memory limit (runtime/debug.SetMemoryLimit) still caps the
// total.
//
// This is a process-wide setting: a command starts it, a library must not.
package gcfloor

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// heapMinimum is the runtime's minimum goal at GOGC=100; it scales with
// the percentage (runtime/mgcpacer.go).
const heapMinimum = 4 << 20

// maxPercent bounds the percentage a tiny live heap would ask for.
const maxPercent = 100_000

// Start adjusts the collector after each cycle until Stop, which restores
// the percentage it found. floor is in bytes and must be positive. The
// base is the percentage in effect when Start is called (GOGC's, 100 by
// default); a base of off (GOGC=off) is an error, as there is nothing to
// raise.
func Start(floor int64) (*Tuner, error) {
	if floor <= 0 {
		return nil, fmt.Errorf("gcfloor: floor %d bytes: want a positive size", floor)
	}
	cur := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(cur)
	base := int(int64(cur[0].Value.Uint64())) // off reads as -1
	if base < 0 {
		return nil, fmt.Errorf("gcfloor: the collector is off (GOGC=off): no floor to keep")
	}
	t := &Tuner{floor: uint64(floor), base: base, percent: base,
		samples: []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}}
	t.adjust(false)
	t.arm()
	return t, nil
}

// Tuner is a running floor.
type Tuner struct {
	floor uint64
	base  int

	mu      sync.Mutex
	stopped bool
	percent int // the percentage last set
	cycles  int // cycles seen (adjustments after one)
	samples []metrics.Sample
}

// Percent reports the percentage last set and how many cycles have been
// seen since Start.
func (t *Tuner) Percent() (percent, cycles int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.percent, t.cycles
}

// sentinel is a heap object whose collection marks the end of a cycle; it
// is 32 bytes so the tiny allocator does not share its block.
type sentinel struct{ _ [32]byte }

// arm registers a cleanup that runs after the next cycle that finds the
// new sentinel unreachable.
func (t *Tuner) arm() {
	runtime.AddCleanup(new(sentinel), func(t *Tuner) { t.afterCycle() }, t)
}

func (t *Tuner) afterCycle() {
	if t.adjust(true) {
		t.arm()
	}
}

// adjust sets the percentage for the live heap the last cycle marked
// (counting the cycle when it is one's end); false once stopped.
func (t *Tuner) adjust(cycle bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	if cycle {
		t.cycles++
	}
	metrics.Read(t.samples)
	p := percentFor(t.floor, t.base, t.samples[0].Value.Uint64()+t.samples[1].Value.Uint64()+t.samples[2].Value.Uint64())
	// A change under a tenth is not worth the heap lock.
	if p != t.percent && (p == t.base || p*10 > t.percent*11 || p*11 < t.percent*10) {
		debug.SetGCPercent(p)
		t.percent = p
	}
	return true
}

// Stop ends the adjustments and restores the base percentage; when it
// returns, the tuner sets nothing more.
func (t *Tuner) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.stopped = true
	debug.SetGCPercent(t.base)
	t.percent = t.base
}

// percentFor is the least percentage of at least base whose goal lies
// about floor past a heap whose scannable size is scan: the runtime's goal
// is live + scan×percent/100, at least heapMinimum×percent/100.
func percentFor(floor uint64, base int, scan uint64) int {
	d := max(scan, heapMinimum)
	p := (floor*100 + d - 1) / d
	if p > maxPercent {
		p = maxPercent
	}
	return max(base, int(p))
}
