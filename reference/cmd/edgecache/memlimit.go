package main

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"

	"github.com/edgeconform/edgeconform/internal/gcfloor"
)

// memoryHeadroom is what the soft memory limit allows beyond the cache's
// bound: fills' chunk buffers, connection buffers, the index, the runtime
// (issue #12 item 5). The goal is a peak RSS of at most the cache's bound +
// 64 MiB + 64 KiB per open client connection; RSS also counts the binary
// and what the runtime has not yet returned, so the limit stays below it
// (the soak, reference/soak, measures it).
const memoryHeadroom = 32 << 20

// sizeOrOff is a flag of a size, "off", or unset (then a default):
// --memory-limit (derived from --cache-size) and --gc-floor.
type sizeOrOff struct {
	set, off bool
	size     byteSize
}

func (m *sizeOrOff) String() string {
	switch {
	case m.off:
		return "off"
	case m.set:
		return m.size.String()
	}
	return ""
}

func (m *sizeOrOff) Set(v string) error {
	m.set = true
	if v == "off" {
		m.off = true
		return nil
	}
	if err := m.size.Set(v); err != nil {
		return fmt.Errorf("want a size (KiB, MiB, GiB) or off: %w", err)
	}
	return nil
}

// applyMemoryLimit sets the Go runtime's soft memory limit
// (runtime/debug.SetMemoryLimit): --memory-limit if given, else GOMEMLIMIT
// if set in the environment (the runtime already applied it), else the
// cache's bound plus memoryHeadroom. Under the limit the collector runs
// harder before the heap grows, and returns memory to the OS sooner. It
// returns a function that restores the previous limit.
func applyMemoryLimit(m sizeOrOff, cacheSize int64, log *slog.Logger) (restore func()) {
	var limit int64
	switch {
	case m.off:
		limit = math.MaxInt64
	case m.set:
		limit = int64(m.size)
	case os.Getenv("GOMEMLIMIT") != "":
		log.Info("memory limit from GOMEMLIMIT", "bytes", debug.SetMemoryLimit(-1))
		return func() {}
	default:
		limit = cacheSize + memoryHeadroom
	}
	prev := debug.SetMemoryLimit(limit)
	if !m.off {
		log.Info("memory limit", "bytes", limit, "cache_bytes", cacheSize)
	}
	return func() { debug.SetMemoryLimit(prev) }
}

// defaultGCFloor is --gc-floor's default: the collector runs about once
// per 16 MiB of allocation while the live heap is small (issue #14: at
// GOGC's 4 MiB minimum a 1 KiB hit spent a quarter of its CPU on the
// collector; from 16 MiB up the gain flattened: GOGC=400 and 1600, 16 and
// 64 MiB of growth at that heap, measured alike).
const defaultGCFloor = 16 << 20

// applyGCFloor starts the collector's floor (internal/gcfloor): --gc-floor
// if given, else the default unless GOGC is set (then the user's choice
// stands). It returns a function
// that stops it.
func applyGCFloor(g sizeOrOff, log *slog.Logger) (stop func(), err error) {
	floor := int64(defaultGCFloor)
	switch {
	case g.off:
		return func() {}, nil
	case g.set:
		floor = int64(g.size)
	case os.Getenv("GOGC") != "":
		log.Info("no collector floor: GOGC is set", "GOGC", os.Getenv("GOGC"))
		return func() {}, nil
	}
	t, err := gcfloor.Start(floor)
	if err != nil {
		return nil, fmt.Errorf("--gc-floor: %w", err)
	}
	log.Info("collector floor", "bytes", floor)
	return t.Stop, nil
}
