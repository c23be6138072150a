package store

import (
	"errors"
	"fmt"
	"testing"
)

// Issue #12 item 5: a Memory store's bound covers the bodies being
// written: committed entries shrink to make room for writers in progress,
// at once; writers beyond the bound are refused; Commit and Abort give
// the reservation back.
func TestMemoryBoundCoversWritesInProgress(t *testing.T) {
	const max, size = 1 << 20, 200 << 10
	m := NewMemory(max)
	t.Cleanup(func() { _ = m.Close() })
	for i := range 5 {
		put(t, m, fmt.Sprint("k", i), []byte("m"), pattern(uint64(i), size), 32<<10)
	}
	cleanUp(m)
	if st := m.Stats(); st.Bytes < 4*size {
		t.Fatalf("the store holds %d bytes before the test, want about %d", st.Bytes, 5*size)
	}

	// Two fills in progress, 384 KiB each: the committed entries make room.
	var ws []Writer
	for i := range 2 {
		w, err := m.Begin(fmt.Sprint("fill", i))
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		if _, err := w.Write(pattern(9, 384<<10)); err != nil {
			t.Fatalf("fill %d: %v", i, err)
		}
		ws = append(ws, w)
	}
	if got, st := m.Reserved(), m.Stats(); got != 768<<10 || st.Bytes+got > max {
		t.Fatalf("writers reserve %d bytes and entries hold %d: want 768 KiB reserved and at most %d in all", got, st.Bytes, max)
	}

	// A third would take the writers past the bound: refused, not stored.
	w3, _ := m.Begin("fill2")
	defer w3.Abort()
	if _, err := w3.Write(pattern(3, 300<<10)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a write past the bound: %v, want ErrTooLarge", err)
	}
	if err := w3.Commit(); err == nil {
		t.Fatal("the refused writer committed")
	}
	if got := m.Reserved(); got != 768<<10 {
		t.Fatalf("after the refused writer, %d bytes reserved, want 768 KiB", got)
	}

	// Commit turns a reservation into an entry; Abort gives it back.
	if err := ws[0].Commit(); err != nil {
		t.Fatal(err)
	}
	ws[1].Abort()
	cleanUp(m)
	if got := m.Reserved(); got != 0 {
		t.Fatalf("%d bytes still reserved after Commit and Abort", got)
	}
	if _, b, ok := readAll(t, m, "fill0"); !ok || len(b) != 384<<10 {
		t.Fatalf("the committed fill: found %v, %d bytes", ok, len(b))
	}
	// The whole bound is available to committed entries again.
	for i := range 4 {
		put(t, m, fmt.Sprint("again", i), nil, pattern(uint64(i), size), 64<<10)
	}
	cleanUp(m)
	if got := m.cache.GetMaximum(); got != max {
		t.Fatalf("the index's maximum is %d after the writers ended, want %d", got, max)
	}
	if st := m.Stats(); st.Bytes <= max-768<<10 || st.Bytes > max {
		t.Fatalf("after the writers ended the store holds %d bytes, want more than the %d left beside them, at most %d", st.Bytes, max-768<<10, max)
	}
}
