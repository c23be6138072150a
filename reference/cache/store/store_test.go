package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

type storeCase struct {
	name string
	open func(t testing.TB, maxBytes int64) Store
}

var storeCases = []storeCase{
	{"memory", func(t testing.TB, maxBytes int64) Store {
		m := NewMemory(maxBytes)
		t.Cleanup(func() { _ = m.Close() })
		return m
	}},
	{"disk", func(t testing.TB, maxBytes int64) Store {
		d, err := NewDisk(t.TempDir(), maxBytes)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		return d
	}},
}

// pattern returns n deterministic bytes depending on seed.
func pattern(seed uint64, n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	for i := 0; i < n; i += 8 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], r.Uint64())
		copy(b[i:], w[:])
	}
	return b
}

// put writes and commits an entry in pieces of piece bytes.
func put(t testing.TB, s Store, key string, meta, body []byte, piece int) {
	t.Helper()
	if err := tryPut(s, key, meta, body, piece); err != nil {
		t.Fatal(err)
	}
}

func tryPut(s Store, key string, meta, body []byte, piece int) error {
	w, err := s.Begin(key)
	if err != nil {
		return err
	}
	defer w.Abort()
	w.SetMeta(meta)
	for p := body; len(p) > 0; {
		k := min(piece, len(p))
		if _, err := w.Write(p[:k]); err != nil {
			return err
		}
		p = p[k:]
	}
	return w.Commit()
}

// cleanUp runs the index's pending maintenance (evictions).
func cleanUp(s Store) {
	switch s := s.(type) {
	case *Memory:
		s.cache.CleanUp()
	case *Disk:
		s.cache.CleanUp()
	}
}

func readAll(t testing.TB, s Store, key string) ([]byte, []byte, bool) {
	t.Helper()
	r, ok := s.Open(key)
	if !ok {
		return nil, nil, false
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading %q: %v", key, err)
	}
	return r.Meta(), b, true
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func dirLen(t *testing.T, dir string) int {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(des)
}

func TestRoundTrip(t *testing.T) {
	sizes := []int{0, 1, 1000, chunkSize - 1, chunkSize, chunkSize + 1, 3*chunkSize + 17}
	for _, sc := range storeCases {
		for _, size := range sizes {
			t.Run(fmt.Sprintf("%s/%d", sc.name, size), func(t *testing.T) {
				s := sc.open(t, 64<<20)
				body := pattern(uint64(size), size)
				meta := []byte("status=200;etag=\"x\"")
				put(t, s, "k", meta, body, 7777)

				r, ok := s.Open("k")
				if !ok {
					t.Fatal("committed entry not found")
				}
				defer r.Close()
				if !bytes.Equal(r.Meta(), meta) || r.Size() != int64(size) {
					t.Fatalf("meta %q size %d, want %q %d", r.Meta(), r.Size(), meta, size)
				}
				got, err := io.ReadAll(r)
				if err != nil || !bytes.Equal(got, body) {
					t.Fatalf("ReadAll: %d bytes, err %v; want the %d written", len(got), err, size)
				}

				for _, off := range []int{0, 1, chunkSize - 3, chunkSize, size / 2, size - 1, size, size + 5} {
					for _, n := range []int{1, 5, chunkSize + 10} {
						if off < 0 {
							continue
						}
						p := make([]byte, n)
						k, err := r.ReadAt(p, int64(off))
						want := max(0, min(n, size-off))
						if k != want || (k < n) != (err == io.EOF) || (err != nil && err != io.EOF) {
							t.Fatalf("ReadAt(%d bytes, off %d) = %d, %v; want %d", n, off, k, err, want)
						}
						if !bytes.Equal(p[:k], body[min(off, size):min(off, size)+k]) {
							t.Fatalf("ReadAt(%d bytes, off %d): wrong bytes", n, off)
						}
					}
				}

				if size < 20 {
					return
				}
				if pos, err := r.Seek(int64(size/3), io.SeekStart); err != nil || pos != int64(size/3) {
					t.Fatalf("Seek start: %d, %v", pos, err)
				}
				p := make([]byte, 10)
				if _, err := io.ReadFull(r, p); err != nil || !bytes.Equal(p, body[size/3:size/3+10]) {
					t.Fatalf("read after Seek start: %v", err)
				}
				if pos, err := r.Seek(2, io.SeekCurrent); err != nil || pos != int64(size/3+12) {
					t.Fatalf("Seek current: %d, %v", pos, err)
				}
				if _, err := io.ReadFull(r, p[:1]); err != nil || p[0] != body[size/3+12] {
					t.Fatalf("read after Seek current: %v", err)
				}
				if _, err := r.Seek(-5, io.SeekEnd); err != nil {
					t.Fatal(err)
				}
				if rest, err := io.ReadAll(r); err != nil || !bytes.Equal(rest, body[size-5:]) {
					t.Fatalf("read after Seek end: %q, %v", rest, err)
				}
				if _, err := r.Seek(-1, io.SeekStart); err == nil {
					t.Fatal("Seek to a negative position succeeded")
				}
			})
		}
	}
}

func TestServeContentRange(t *testing.T) {
	for _, sc := range storeCases {
		t.Run(sc.name, func(t *testing.T) {
			s := sc.open(t, 16<<20)
			body := pattern(7, 200_000)
			put(t, s, "k", nil, body, 32<<10)
			r, ok := s.Open("k")
			if !ok {
				t.Fatal("miss")
			}
			defer r.Close()
			req := httptest.NewRequest(http.MethodGet, "/k", nil)
			req.Header.Set("Range", "bytes=65530-65549")
			rec := httptest.NewRecorder()
			http.ServeContent(rec, req, "", time.Time{}, r)
			if rec.Code != http.StatusPartialContent || !bytes.Equal(rec.Body.Bytes(), body[65530:65550]) {
				t.Fatalf("got %d %q", rec.Code, rec.Body.Bytes())
			}
			if cr := rec.Header().Get("Content-Range"); cr != "bytes 65530-65549/200000" {
				t.Fatalf("Content-Range %q", cr)
			}
		})
	}
}

func TestUnfinishedWritesInvisible(t *testing.T) {
	const max = 100_000
	cases := []struct {
		name    string
		run     func(w Writer) error // writes and finishes (or not)
		wantErr error                // from the last step
	}{
		{"open before commit", func(w Writer) error { _, err := w.Write([]byte("abc")); return err }, nil},
		{"abort", func(w Writer) error {
			_, _ = w.Write([]byte("abc"))
			w.Abort()
			return w.Commit()
		}, ErrClosed},
		{"truncated", func(w Writer) error {
			w.SetSize(10)
			_, _ = w.Write([]byte("abc"))
			return w.Commit()
		}, ErrSizeMismatch},
		{"overlong", func(w Writer) error {
			w.SetSize(2)
			_, err := w.Write([]byte("abc"))
			if !errors.Is(err, ErrSizeMismatch) {
				return fmt.Errorf("Write: %w", err)
			}
			return w.Commit()
		}, ErrSizeMismatch},
		{"body too large", func(w Writer) error {
			_, err := w.Write(make([]byte, max+1))
			if !errors.Is(err, ErrTooLarge) {
				return fmt.Errorf("Write: %w", err)
			}
			return w.Commit()
		}, ErrTooLarge},
		{"meta makes it too large", func(w Writer) error {
			if _, err := w.Write(make([]byte, max-100)); err != nil {
				return err
			}
			w.SetMeta(make([]byte, 200))
			return w.Commit()
		}, ErrTooLarge},
	}
	for _, sc := range storeCases {
		for _, c := range cases {
			t.Run(sc.name+"/"+c.name, func(t *testing.T) {
				s := sc.open(t, max)
				w, err := s.Begin("k")
				if err != nil {
					t.Fatal(err)
				}
				defer w.Abort()
				if err := c.run(w); !errors.Is(err, c.wantErr) {
					t.Fatalf("got %v, want %v", err, c.wantErr)
				}
				if _, ok := s.Open("k"); ok {
					t.Fatal("unfinished entry visible")
				}
				if d, ok := s.(*Disk); ok && c.wantErr != nil {
					if n := dirLen(t, d.tmpDir) + dirLen(t, d.dataDir); n != 0 {
						t.Fatalf("%d files left behind", n)
					}
				}
				if st := s.Stats(); st.Entries != 0 || st.Bytes != 0 || st.Misses != 1 {
					t.Fatalf("stats %+v", st)
				}
			})
		}
	}
}

func TestCommitThenAbortAndStats(t *testing.T) {
	for _, sc := range storeCases {
		t.Run(sc.name, func(t *testing.T) {
			s := sc.open(t, 1<<20)
			w, _ := s.Begin("k")
			_, _ = w.Write([]byte("hello"))
			w.SetSize(5)
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			w.Abort() // no-op
			if err := w.Commit(); !errors.Is(err, ErrClosed) {
				t.Fatalf("second Commit: %v", err)
			}
			if _, err := w.Write([]byte("x")); !errors.Is(err, ErrClosed) {
				t.Fatalf("Write after Commit: %v", err)
			}
			if _, b, ok := readAll(t, s, "k"); !ok || string(b) != "hello" {
				t.Fatalf("got %q %v", b, ok)
			}
			s.Open("nope")
			st := s.Stats()
			if st.Entries != 1 || st.Hits != 1 || st.Misses != 1 || st.Bytes <= 5 {
				t.Fatalf("stats %+v", st)
			}
			s.Delete("k")
			if _, ok := s.Open("k"); ok {
				t.Fatal("deleted entry visible")
			}
			if st := s.Stats(); st.Entries != 0 || st.Bytes != 0 || st.Evictions != 0 {
				t.Fatalf("stats after Delete %+v", st)
			}
		})
	}
}

func TestReplaceWhileReading(t *testing.T) {
	for _, sc := range storeCases {
		t.Run(sc.name, func(t *testing.T) {
			s := sc.open(t, 16<<20)
			v1, v2 := pattern(1, 300_000), pattern(2, 1000)
			put(t, s, "k", []byte("v1"), v1, 4096)
			r1, ok := s.Open("k")
			if !ok {
				t.Fatal("miss")
			}
			defer r1.Close()
			head := make([]byte, 1000)
			if _, err := io.ReadFull(r1, head); err != nil {
				t.Fatal(err)
			}
			put(t, s, "k", []byte("v2"), v2, 4096)
			if m, b, ok := readAll(t, s, "k"); !ok || string(m) != "v2" || !bytes.Equal(b, v2) {
				t.Fatalf("after replace: meta %q, %d bytes", m, len(b))
			}
			if d, ok := s.(*Disk); ok { // v1's file is unlinked under the reader
				eventually(t, "v1's file removed", func() bool { return dirLen(t, d.dataDir) == 1 })
			}
			s.Delete("k")
			rest, err := io.ReadAll(r1)
			if err != nil || string(r1.Meta()) != "v1" || !bytes.Equal(append(head, rest...), v1) {
				t.Fatalf("old reader: %d+%d bytes, %v, meta %q", len(head), len(rest), err, r1.Meta())
			}
			if p := make([]byte, 10); true {
				if _, err := r1.ReadAt(p, 250_000); err != nil || !bytes.Equal(p, v1[250_000:250_010]) {
					t.Fatalf("old reader ReadAt: %v", err)
				}
			}
		})
	}
}

func TestEviction(t *testing.T) {
	const max, size, n = 1 << 20, 60_000, 64
	for _, sc := range storeCases {
		t.Run(sc.name, func(t *testing.T) {
			s := sc.open(t, max)
			for i := range n {
				put(t, s, fmt.Sprint("k", i), []byte("m"), pattern(uint64(i), size), 8192)
				if i%8 == 0 {
					s.Open(fmt.Sprint("k", i)) // some frequency for the policy
				}
			}
			cleanUp(s)
			st := s.Stats()
			if st.Bytes > max || st.Bytes <= 0 || st.Evictions == 0 || st.Evictions+uint64(st.Entries) != n {
				t.Fatalf("stats %+v", st)
			}
			found := 0
			for i := range n {
				if _, b, ok := readAll(t, s, fmt.Sprint("k", i)); ok {
					found++
					if !bytes.Equal(b, pattern(uint64(i), size)) {
						t.Fatalf("k%d: wrong body", i)
					}
				}
			}
			if found != st.Entries || found*size > max {
				t.Fatalf("%d entries readable, stats say %d", found, st.Entries)
			}
			if d, ok := s.(*Disk); ok {
				eventually(t, "evicted files removed", func() bool { return dirLen(t, d.dataDir) == found })
			}
		})
	}
}

func TestConcurrent(t *testing.T) {
	for _, sc := range storeCases {
		t.Run(sc.name, func(t *testing.T) {
			s := sc.open(t, 2<<20)
			var wg sync.WaitGroup
			for g := range 16 {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(uint64(g), 1))
					for i := range 150 {
						key := fmt.Sprint("shared", r.IntN(6))
						if r.IntN(3) == 0 {
							key = fmt.Sprint("own", g, "-", i%10)
						}
						switch op := r.IntN(10); {
						case op < 4: // write
							seed, size := r.Uint64(), r.IntN(3*chunkSize)
							var meta [16]byte
							binary.BigEndian.PutUint64(meta[:], seed)
							binary.BigEndian.PutUint64(meta[8:], uint64(size))
							w, err := s.Begin(key)
							if err != nil {
								t.Error(err)
								return
							}
							w.SetMeta(meta[:])
							_, _ = w.Write(pattern(seed, size))
							if op == 0 {
								w.Abort()
							} else if err := w.Commit(); err != nil {
								t.Error(err)
								return
							}
						case op < 9: // read and check the body matches its meta
							rd, ok := s.Open(key)
							if !ok {
								continue
							}
							m := rd.Meta()
							seed, size := binary.BigEndian.Uint64(m), int(binary.BigEndian.Uint64(m[8:]))
							b, err := io.ReadAll(rd)
							_ = rd.Close()
							if err != nil || !bytes.Equal(b, pattern(seed, size)) {
								t.Errorf("%s: body does not match its metadata (%v)", key, err)
								return
							}
						default:
							s.Delete(key)
						}
					}
				})
			}
			wg.Wait()
			cleanUp(s)
			if st := s.Stats(); st.Bytes > 2<<20 || st.Bytes < 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestDiskReopen(t *testing.T) {
	dir := t.TempDir()
	d, err := NewDisk(dir, 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	put(t, d, "a", []byte("meta-a"), pattern(1, 100_000), 4096)
	put(t, d, "b", []byte("b1"), pattern(2, 5000), 4096)
	// A crash between renaming b's second version into place and removing
	// the first leaves both: keep a copy of the first.
	e, _ := d.cache.GetIfPresent("b")
	old, err := os.ReadFile(e.path)
	if err != nil {
		t.Fatal(err)
	}
	put(t, d, "b", []byte("b2"), pattern(3, 7000), 4096)
	if err := os.WriteFile(filepath.Join(d.dataDir, "b-old"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	// A fill in progress, and garbage: a foreign file and a torn entry.
	w, _ := d.Begin("c")
	_, _ = w.Write([]byte("partial"))
	ea, _ := d.cache.GetIfPresent("a")
	whole, _ := os.ReadFile(ea.path)
	_ = os.WriteFile(filepath.Join(d.dataDir, "torn"), whole[:len(whole)-3], 0o644)
	_ = os.WriteFile(filepath.Join(d.dataDir, "junk"), []byte("not an entry at all, long enough for a footer"), 0o644)
	_ = d.Close() // the "crash": w is never finished

	d2, err := NewDisk(dir, 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer d2.Close()
	if n := dirLen(t, d2.tmpDir); n != 0 {
		t.Fatalf("%d temp files left", n)
	}
	if n := dirLen(t, d2.dataDir); n != 2 {
		t.Fatalf("%d files in data, want a and b", n)
	}
	if m, b, ok := readAll(t, d2, "a"); !ok || string(m) != "meta-a" || !bytes.Equal(b, pattern(1, 100_000)) {
		t.Fatalf("a after reopen: %v %q", ok, m)
	}
	if m, b, ok := readAll(t, d2, "b"); !ok || string(m) != "b2" || !bytes.Equal(b, pattern(3, 7000)) {
		t.Fatalf("b after reopen: %v %q", ok, m)
	}
	if _, ok := d2.Open("c"); ok {
		t.Fatal("uncommitted c visible after reopen")
	}
	if st := d2.Stats(); st.Entries != 2 || st.Bytes != int64(len(whole))+int64(7000+1+2+footerSize) {
		t.Fatalf("stats %+v", st)
	}
	// Commits after a reopen supersede the re-indexed ones.
	put(t, d2, "b", []byte("b3"), nil, 1)
	if m, _, _ := readAll(t, d2, "b"); string(m) != "b3" {
		t.Fatalf("b after a new commit: %q", m)
	}
}

func TestDiskLargeEntryConstantMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("64 MiB through the disk")
	}
	const size = 64 << 20
	d, err := NewDisk(t.TempDir(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	piece := pattern(9, 32<<10)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)

	w, err := d.Begin("big")
	if err != nil {
		t.Fatal(err)
	}
	wantSum := sha256.New()
	for i := 0; i < size/len(piece); i++ {
		piece[0] = byte(i) // vary the content a little
		wantSum.Write(piece)
		if _, err := w.Write(piece); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	r, ok := d.Open("big")
	if !ok || r.Size() != size {
		t.Fatal("big entry missing")
	}
	gotSum := sha256.New()
	if _, err := io.Copy(gotSum, r); err != nil {
		t.Fatal(err)
	}
	_ = r.Close()
	runtime.ReadMemStats(&after)

	if !bytes.Equal(gotSum.Sum(nil), wantSum.Sum(nil)) {
		t.Fatal("big entry read back differs")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/8 {
		t.Fatalf("allocated %d bytes moving a %d-byte entry", alloc, size)
	}
	if grow := int64(after.HeapInuse) - int64(before.HeapInuse); grow > size/8 {
		t.Fatalf("heap grew %d bytes", grow)
	}
}

func TestMemoryChunks(t *testing.T) {
	m := NewMemory(1 << 20)
	defer m.Close()
	put(t, m, "small", nil, make([]byte, 10), 10)
	put(t, m, "big", nil, make([]byte, 2*chunkSize+5), 1000)
	small, _ := m.cache.GetIfPresent("small")
	big, _ := m.cache.GetIfPresent("big")
	if len(small.chunks) != 1 || cap(small.chunks[0]) != 10 {
		t.Fatalf("small entry holds %d bytes", cap(small.chunks[0]))
	}
	if len(big.chunks) != 3 || cap(big.chunks[0]) != chunkSize || cap(big.chunks[2]) != 5 {
		t.Fatalf("big entry chunks: %d", len(big.chunks))
	}
}

func BenchmarkMemoryHit(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			m := NewMemory(64 << 20)
			defer m.Close()
			put(b, m, "k", []byte("meta"), pattern(1, size), 32<<10)
			buf := make([]byte, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				r, ok := m.Open("k")
				if !ok {
					b.Fatal("miss")
				}
				if _, err := io.ReadFull(r, buf); err != nil {
					b.Fatal(err)
				}
				_ = r.Close()
			}
		})
	}
}

func BenchmarkDiskWrite(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			d, err := NewDisk(b.TempDir(), 256<<20)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			piece := pattern(1, 32<<10)
			b.SetBytes(int64(size))
			i := 0
			for b.Loop() {
				w, err := d.Begin(fmt.Sprint("k", i%512))
				if err != nil {
					b.Fatal(err)
				}
				w.SetMeta([]byte("meta"))
				for n := 0; n < size; n += len(piece) {
					if _, err := w.Write(piece[:min(len(piece), size-n)]); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Commit(); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// An entry's note is seen by every later reader of that entry and by no
// reader of the entry that replaces it.
func TestNoteBelongsToTheCommittedEntry(t *testing.T) {
	for _, sc := range storeCases {
		t.Run(sc.name, func(t *testing.T) {
			s := sc.open(t, 1<<20)
			put(t, s, "k", []byte("m1"), []byte("body one"), 3)
			note := func() any {
				rd, ok := s.Open("k")
				if !ok {
					t.Fatal("entry missing")
				}
				defer rd.Close()
				return rd.(Noted).Note()
			}
			if v := note(); v != nil {
				t.Fatalf("a new entry has the note %v", v)
			}
			rd, _ := s.Open("k")
			rd.(Noted).SetNote("decoded m1")
			rd.Close()
			if v := note(); v != "decoded m1" {
				t.Fatalf("a later reader sees the note %v, want the one set", v)
			}
			put(t, s, "k", []byte("m2"), []byte("body two"), 3)
			if v := note(); v != nil {
				t.Fatalf("the replacing entry has the old entry's note %v", v)
			}
		})
	}
}

// TestMemoryWriteTo: the memory reader's WriteTo (the edge's copy-free hit
// path) writes exactly the bytes from the offset to the end, across chunk
// boundaries, and a closed reader fails rather than writing.
func TestMemoryWriteTo(t *testing.T) {
	m := NewMemory(64 << 20)
	body := pattern(7, 3*chunkSize+123)
	put(t, m, "k", []byte("{}"), body, 1000)
	for _, from := range []int64{0, 1, chunkSize - 1, chunkSize, 2*chunkSize + 5, int64(len(body))} {
		rd, ok := m.Open("k")
		if !ok {
			t.Fatal("entry missing")
		}
		if _, err := rd.Seek(from, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		n, err := rd.(io.WriterTo).WriteTo(&got)
		if err != nil || n != int64(len(body))-from || !bytes.Equal(got.Bytes(), body[from:]) {
			t.Errorf("from %d: wrote %d bytes (err %v), want the %d bytes after it", from, n, err, int64(len(body))-from)
		}
		rd.Close()
	}
	rd, _ := m.Open("k")
	rd.Close()
	if n, err := rd.(io.WriterTo).WriteTo(io.Discard); !errors.Is(err, ErrClosed) || n != 0 {
		t.Errorf("closed reader: WriteTo = %d, %v; want 0, ErrClosed", n, err)
	}
}

// buffersRecorder is a BuffersWriter that records its calls.
type buffersRecorder struct {
	bytes.Buffer
	gathered [][][]byte // the buffers of each WriteBuffers call
	writes   int
}

func (b *buffersRecorder) WriteBuffers(bufs [][]byte) (int64, error) {
	b.gathered = append(b.gathered, bufs)
	var n int64
	for _, p := range bufs {
		m, _ := b.Buffer.Write(p)
		n += int64(m)
	}
	return n, nil
}

func (b *buffersRecorder) Write(p []byte) (int, error) {
	b.writes++
	return b.Buffer.Write(p)
}

// TestMemoryWriteToGathers: to a BuffersWriter, a rest that spans more
// than one chunk goes in one WriteBuffers call of the stored chunks
// themselves (no copy), from the offset; a rest within one chunk in one
// Write.
func TestMemoryWriteToGathers(t *testing.T) {
	m := NewMemory(64 << 20)
	body := pattern(9, 3*chunkSize+123)
	put(t, m, "k", []byte("{}"), body, 1000)
	for _, tc := range []struct {
		from             int64
		gathered, writes int
	}{
		{0, 1, 0}, {chunkSize - 1, 1, 0}, {2*chunkSize + 123, 1, 0}, {3*chunkSize - 1, 1, 0}, {3 * chunkSize, 0, 1}, {3*chunkSize + 100, 0, 1},
	} {
		rd, ok := m.Open("k")
		if !ok {
			t.Fatal("entry missing")
		}
		if _, err := rd.Seek(tc.from, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		var got buffersRecorder
		n, err := rd.(io.WriterTo).WriteTo(&got)
		if err != nil || n != int64(len(body))-tc.from || !bytes.Equal(got.Bytes(), body[tc.from:]) {
			t.Errorf("from %d: wrote %d bytes (err %v), want the %d bytes after it", tc.from, n, err, int64(len(body))-tc.from)
		}
		if len(got.gathered) != tc.gathered || got.writes != tc.writes {
			t.Errorf("from %d: %d gathered calls and %d writes, want %d and %d", tc.from, len(got.gathered), got.writes, tc.gathered, tc.writes)
		}
		if len(got.gathered) == 1 {
			if bufs := got.gathered[0]; len(bufs[len(bufs)-1]) == 0 || &bufs[len(bufs)-1][0] != &rd.(*memReader).e.chunks[3][0] {
				t.Errorf("from %d: the last buffer is not the stored chunk's own bytes", tc.from)
			}
		}
		if rest, _ := rd.Read(make([]byte, 1)); rest != 0 {
			t.Errorf("from %d: the reader's offset is not at the end after WriteTo", tc.from)
		}
		rd.Close()
	}
}
