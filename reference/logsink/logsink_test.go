package logsink

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a destination that can be blocked.
type lockedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	gate    chan struct{} // nil: never blocks; else each Write waits for it to close
	writes  int
	failing error
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	if b.gate != nil {
		<-b.gate
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	if b.failing != nil {
		return 0, b.failing
	}
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestCloseWritesEveryRecordWholeAndInOrderPerWriter(t *testing.T) {
	dst := &lockedBuffer{}
	s := New(dst, Options{BatchBytes: 1 << 10})
	const writers, each = 8, 500
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				fmt.Fprintf(s, "w%d r%d %s\n", w, i, strings.Repeat("x", i%50))
			}
		}()
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	next := make([]int, writers)
	lines := strings.Split(strings.TrimSuffix(dst.String(), "\n"), "\n")
	if len(lines) != writers*each {
		t.Fatalf("got %d records, want %d", len(lines), writers*each)
	}
	for _, l := range lines {
		var w, i int
		if _, err := fmt.Sscanf(l, "w%d r%d ", &w, &i); err != nil || !strings.HasPrefix(l, fmt.Sprintf("w%d r%d ", w, i)) {
			t.Fatalf("record %q cut or mixed: %v", l, err)
		}
		pad := strings.TrimPrefix(l, fmt.Sprintf("w%d r%d ", w, i))
		if i != next[w] {
			t.Fatalf("writer %d: record %d after %d", w, i, next[w]-1)
		}
		if len(pad) != i%50 {
			t.Fatalf("record %q: padding of %d bytes, want %d", l, len(pad), i%50)
		}
		next[w]++
	}
	if s.Dropped() != 0 {
		t.Errorf("dropped %d records with a fast destination", s.Dropped())
	}
	if _, err := s.Write([]byte("late\n")); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
}

func TestSlowDestinationNeverBlocksAndDropsWholeRecords(t *testing.T) {
	dst := &lockedBuffer{gate: make(chan struct{})}
	s := New(dst, Options{BatchBytes: 100, MaxPending: 1000, FlushEvery: time.Millisecond})
	rec := []byte(strings.Repeat("y", 49) + "\n") // 50 bytes
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			if n, err := s.Write(rec); n != len(rec) || err != nil {
				t.Errorf("Write: %d, %v", n, err)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Write blocked on a blocked destination")
	}
	// At most MaxPending bytes (20 records) were kept, plus the batch the
	// writer goroutine took before it blocked.
	if d := s.Dropped(); d < 1000-20-2 || d > 1000-20 {
		t.Errorf("dropped %d of 1000 records, want about %d", d, 1000-20)
	}
	close(dst.gate)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	out := dst.String()
	kept := strings.Count(out, "\n")
	if int64(kept)+s.Dropped() != 1000 {
		t.Errorf("kept %d + dropped %d records, want 1000", kept, s.Dropped())
	}
	if len(out) != kept*len(rec) || strings.Trim(out, "y\n") != "" {
		t.Errorf("a kept record was cut: %d bytes for %d records", len(out), kept)
	}
}

func TestPartialBatchIsWrittenWithinFlushEvery(t *testing.T) {
	dst := &lockedBuffer{}
	const every = 20 * time.Millisecond
	s := New(dst, Options{FlushEvery: every})
	defer s.Close()
	log := slog.New(slog.NewJSONHandler(s, nil))
	start := time.Now()
	log.Info("client request", "status", 200)
	for !strings.Contains(dst.String(), `"status":200`) {
		if time.Since(start) > 100*every {
			t.Fatalf("a record waited over %v in a partial batch", 100*every)
		}
		time.Sleep(every / 4)
	}
}

func TestWriteErrorIsKeptAndWritingGoesOn(t *testing.T) {
	dst := &lockedBuffer{failing: errors.New("disk full")}
	s := New(dst, Options{BatchBytes: 10})
	s.Write([]byte("0123456789\n"))
	for i := 0; s.Err() == nil; i++ {
		if i > 1000 {
			t.Fatal("the destination's error was never reported")
		}
		time.Sleep(time.Millisecond)
	}
	if !strings.Contains(s.Err().Error(), "disk full") {
		t.Errorf("Err() = %v", s.Err())
	}
	dst.mu.Lock()
	dst.failing = nil
	dst.mu.Unlock()
	s.Write([]byte("after\n"))
	if err := s.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Close() = %v, want the first error", err)
	}
	if !strings.Contains(dst.String(), "after\n") {
		t.Error("records after a failed write were not written")
	}
}

func BenchmarkWrite(b *testing.B) {
	s := New(discard{}, Options{})
	defer s.Close()
	log := slog.New(slog.NewJSONHandler(s, nil))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			log.Info("client request", "request_id", "abc-1", "status", 200, "bytes", 1024)
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
