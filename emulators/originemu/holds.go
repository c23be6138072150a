package originemu

import (
	"context"

	"github.com/edgeconform/edgeconform/emulators/emuapi"
	"sort"
	"sync"
	"time"
)

// DefaultHoldTimeout is how long a held request waits when its rule gives no
// timeout: a forgotten barrier cannot hang a test forever.
const DefaultHoldTimeout = 60 * time.Second

// HoldStatus is a barrier with the requests waiting at it (emuapi.HoldStatus).
type HoldStatus = emuapi.HoldStatus

// holds are named barriers. A generation of a barrier opens when its first
// request arrives and is released as a whole, after which the name starts a
// new generation.
type holds struct {
	mu sync.Mutex
	m  map[string]*barrier
}

type barrier struct {
	count   int
	waiting int
	release chan struct{}
}

func newHolds() *holds { return &holds{m: map[string]*barrier{}} }

// How a wait at a barrier ended.
const (
	heldReleased = "released"
	heldTimedOut = "timed out"
	heldGone     = "client gone"
)

// wait blocks until the barrier name has count waiters (count > 0), it is
// released, timeout passes, or ctx ends.
func (h *holds) wait(ctx context.Context, name string, count int, timeout time.Duration) string {
	h.mu.Lock()
	b := h.m[name]
	if b == nil {
		b = &barrier{count: count, release: make(chan struct{})}
		h.m[name] = b
	}
	b.waiting++
	if b.count > 0 && b.waiting >= b.count {
		h.releaseLocked(name, b)
	}
	h.mu.Unlock()

	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-b.release:
		return heldReleased
	case <-t.C:
		h.leave(name, b)
		return heldTimedOut
	case <-ctx.Done():
		h.leave(name, b)
		return heldGone
	}
}

// leave takes a waiter that gave up off its barrier.
func (h *holds) leave(name string, b *barrier) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m[name] == b {
		b.waiting--
		if b.waiting == 0 {
			delete(h.m, name)
		}
	}
}

func (h *holds) releaseLocked(name string, b *barrier) int {
	close(b.release)
	delete(h.m, name)
	return b.waiting
}

// release lets every request waiting at name go and returns how many.
func (h *holds) release(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.m[name]; b != nil {
		return h.releaseLocked(name, b)
	}
	return 0
}

func (h *holds) releaseAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, b := range h.m {
		h.releaseLocked(name, b)
	}
}

func (h *holds) list() []HoldStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]HoldStatus, 0, len(h.m))
	for name, b := range h.m {
		out = append(out, HoldStatus{Name: name, Waiting: b.waiting, Count: b.count})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
