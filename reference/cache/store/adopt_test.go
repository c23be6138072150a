package store

import (
	"bytes"
	"errors"
	"testing"
)

// Adopt (issue #14): a Memory writer keeps a whole chunk written at a
// chunk boundary as it is (the caller's later change to it shows in the
// entry: it was kept, not copied) and copies anything else; a Write after
// an adopted chunk never writes into the caller's array; the reservation
// and the declared size hold for adopted bytes as for written ones; a
// Disk writer, not an Adopter, writes.
func TestMemoryAdopt(t *testing.T) {
	whole := func(fill byte) []byte { return bytes.Repeat([]byte{fill}, chunkSize) }
	for _, tc := range []struct {
		name  string
		parts []func(w Writer) ([]byte, error) // each returns what it wrote
		kept  []bool                           // per part: its array is the entry's
	}{
		{"whole chunks", []func(Writer) ([]byte, error){adopt(whole('a')), adopt(whole('b'))}, []bool{true, true}},
		{"after a short write", []func(Writer) ([]byte, error){write([]byte("xyz")), adopt(whole('a'))}, []bool{false, false}},
		{"short adopt", []func(Writer) ([]byte, error){adopt(whole('a')[:100])}, []bool{false}},
		{"write after adopt", []func(Writer) ([]byte, error){adopt(whole('a')), write([]byte("tail"))}, []bool{true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMemory(1 << 20)
			t.Cleanup(func() { _ = m.Close() })
			w, err := m.Begin("k")
			if err != nil {
				t.Fatal(err)
			}
			var want []byte
			var parts [][]byte
			for _, part := range tc.parts {
				p, err := part(w)
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, p)
				want = append(want, p...)
			}
			if got := m.Reserved(); got != int64(len(want)) {
				t.Fatalf("%d bytes reserved while writing %d", got, len(want))
			}
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			for i, p := range parts {
				p[0] ^= 0xFF // what a caller must not do: it tells a kept array from a copy
				_, got, _ := readAll(t, m, "k")
				off := len(bytes.Join(parts[:i], nil))
				if kept := got[off] != want[off]; kept != tc.kept[i] {
					t.Errorf("part %d: kept %v, want %v", i, kept, tc.kept[i])
				}
				p[0] ^= 0xFF
			}
			if _, got, _ := readAll(t, m, "k"); !bytes.Equal(got, want) {
				t.Errorf("the entry holds %d bytes, not the %d written", len(got), len(want))
			}
		})
	}

	t.Run("no append into the caller's array", func(t *testing.T) {
		m := NewMemory(1 << 20)
		t.Cleanup(func() { _ = m.Close() })
		w, _ := m.Begin("k")
		arr := bytes.Repeat([]byte{'a'}, 2*chunkSize)
		if _, err := Adopt(w, arr[:chunkSize]); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("zz")); err != nil {
			t.Fatal(err)
		}
		if arr[chunkSize] != 'a' || arr[chunkSize+1] != 'a' {
			t.Fatal("a Write after Adopt wrote into the adopted slice's spare capacity")
		}
		w.Abort()
	})

	t.Run("declared size", func(t *testing.T) {
		m := NewMemory(1 << 20)
		t.Cleanup(func() { _ = m.Close() })
		w, _ := m.Begin("k")
		w.SetSize(100)
		if _, err := Adopt(w, whole('a')); !errors.Is(err, ErrSizeMismatch) {
			t.Fatalf("adopting past the declared size: %v, want ErrSizeMismatch", err)
		}
		if got := m.Reserved(); got != 0 {
			t.Fatalf("%d bytes still reserved after the refused adopt", got)
		}
	})

	t.Run("disk writes", func(t *testing.T) {
		d, err := NewDisk(t.TempDir(), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		w, _ := d.Begin("k")
		p := whole('a')
		if _, err := Adopt(w, p); err != nil {
			t.Fatal(err)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		p[0] = 'z'
		if _, got, _ := readAll(t, d, "k"); got[0] != 'a' || len(got) != chunkSize {
			t.Fatalf("the disk entry changed with the caller's array or lost bytes (%d)", len(got))
		}
	})
}

func adopt(p []byte) func(Writer) ([]byte, error) {
	return func(w Writer) ([]byte, error) { _, err := Adopt(w, p); return p, err }
}

func write(p []byte) func(Writer) ([]byte, error) {
	return func(w Writer) ([]byte, error) { _, err := w.Write(p); return p, err }
}

// A new entry written from a Memory entry's Body through Adopt shares
// its whole chunks and copies only the short last one (a revalidated
// entry re-committed, issue #14), and reads back the same bytes.
func TestMemoryBodyShared(t *testing.T) {
	m := NewMemory(1 << 20)
	t.Cleanup(func() { _ = m.Close() })
	body := pattern(3, 3*chunkSize+100)
	put(t, m, "a", []byte("m1"), body, 10000)
	ra, _ := m.Open("a")
	defer ra.Close()
	w, _ := m.Begin("b")
	w.SetMeta([]byte("m2"))
	for _, p := range ra.(Bodied).Body() {
		if _, err := Adopt(w, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	rb, _ := m.Open("b")
	defer rb.Close()
	a, b := ra.(Bodied).Body(), rb.(Bodied).Body()
	if len(a) != 4 || len(b) != 4 {
		t.Fatalf("%d and %d chunks, want 4 each", len(a), len(b))
	}
	for i := range a {
		if shared := &a[i][0] == &b[i][0]; shared != (i < 3) {
			t.Errorf("chunk %d (%d bytes): shared %v, want %v", i, len(a[i]), shared, i < 3)
		}
	}
	if meta, got, _ := readAll(t, m, "b"); !bytes.Equal(got, body) || string(meta) != "m2" {
		t.Fatalf("the new entry holds %d bytes and meta %q, not the body and m2", len(got), meta)
	}
}
