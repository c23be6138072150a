package main

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
)

// memoryHeadroom is what the soft memory limit allows beyond the cache's
// bound: fills' chunk buffers, connection buffers, the index, the runtime
// (issue #12 item 5). The goal is a peak RSS of at most the cache's bound +
// 64 MiB + 64 KiB per open client connection; RSS also counts the binary
// and what the runtime has not yet returned, so the limit stays below it
// (the soak, reference/soak, measures it).
const memoryHeadroom = 32 << 20

// memoryLimit is the --memory-limit flag: a size, "off", or unset (then
// derived from --cache-size).
type memoryLimit struct {
	set, off bool
	size     byteSize
}

func (m *memoryLimit) String() string {
	switch {
	case m.off:
		return "off"
	case m.set:
		return m.size.String()
	}
	return ""
}

func (m *memoryLimit) Set(v string) error {
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
func applyMemoryLimit(m memoryLimit, cacheSize int64, log *slog.Logger) (restore func()) {
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
