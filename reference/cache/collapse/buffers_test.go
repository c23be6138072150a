package collapse

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
)

// A small body takes a small first buffer, not a whole chunk (issue #14),
// and a body that grows through the first buffer's doublings reads back
// byte for byte, for readers that started before, during and after.
func TestFirstBufferGrowsWithTheBody(t *testing.T) {
	for _, tc := range []struct {
		size, piece int
		firstCap    int // the first buffer's size once the body is written
	}{
		{1 << 10, 1 << 10, 4 << 10},
		{5000, 700, 8 << 10},
		{100 << 10, 3000, chunkSize},
		{300 << 10, 32 << 10, chunkSize},
	} {
		body := make([]byte, tc.size)
		for i := range body {
			body[i] = byte(i*7 + i>>9)
		}
		var g Group
		gate := make(chan struct{})
		var f *flight
		res, _ := g.Do(context.Background(), "k", func(ctx context.Context, w *Fill) error {
			f = w.f
			if err := w.Head("h"); err != nil {
				return err
			}
			for off := 0; off < len(body); off += tc.piece {
				if _, err := w.Write(body[off:min(off+tc.piece, len(body))]); err != nil {
					return err
				}
				if off == 0 {
					<-gate // let readers start while the body is short
				}
			}
			return nil
		})
		if _, err := res.Head(context.Background()); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		read := func() {
			defer wg.Done()
			got, err := io.ReadAll(res.Body())
			if err != nil || !bytes.Equal(got, body) {
				t.Errorf("size %d: a reader got %d bytes (%v), not the body", tc.size, len(got), err)
			}
		}
		for range 3 {
			wg.Add(1)
			go read()
		}
		close(gate)
		<-res.Done()
		wg.Add(1)
		read()
		wg.Wait()
		if got := len(f.chunks[0]); got != tc.firstCap {
			t.Errorf("size %d: first buffer of %d bytes, want %d", tc.size, got, tc.firstCap)
		}
		g.Close()
	}
}

// Bytes hands out the fill's own buffers for a range of what was written:
// the slices concatenate to those bytes, none crosses a ChunkSize
// boundary, a whole buffer is one ChunkSize slice, no slice has room to
// append into, later writes (and the first buffer's growth) leave them
// as they were, and a range beyond what was written gives nothing.
func TestFillBytes(t *testing.T) {
	body := make([]byte, 3*ChunkSize+5000)
	for i := range body {
		body[i] = byte(i*13 + i>>11)
	}
	var g Group
	type span struct{ from, to int64 }
	for _, tc := range []struct {
		name    string
		written int    // bytes written when Bytes is asked
		piece   int    // write size
		spans   []span // asked after `written` bytes
		whole   int    // how many ChunkSize slices the first span must hold
	}{
		{"small body", 1000, 300, []span{{0, 1000}, {10, 20}, {1000, 1000}}, 0},
		{"first buffer grown", ChunkSize, 5000, []span{{0, ChunkSize}}, 1},
		{"across chunks", len(body), 7000, []span{{0, int64(len(body))}, {ChunkSize - 1, ChunkSize + 1}, {2 * ChunkSize, 3 * ChunkSize}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			more := make(chan struct{})
			asked := make(chan [][][]byte)
			res, _ := g.Do(context.Background(), tc.name, func(ctx context.Context, w *Fill) error {
				if err := w.Head("h"); err != nil {
					return err
				}
				for off := 0; off < tc.written; off += tc.piece {
					if _, err := w.Write(body[off:min(off+tc.piece, tc.written)]); err != nil {
						return err
					}
				}
				var got [][][]byte
				for _, s := range tc.spans {
					got = append(got, w.Bytes(nil, s.from, s.to))
				}
				if out := w.Bytes(nil, 0, int64(tc.written)+1); out != nil {
					t.Errorf("Bytes past what was written gave %d slices, want none", len(out))
				}
				if out := w.Bytes(nil, 5, 4); out != nil {
					t.Errorf("Bytes of a reversed range gave %d slices, want none", len(out))
				}
				asked <- got
				<-more
				// Writing on (and growing a short first buffer) must not
				// touch what Bytes handed out.
				_, err := w.Write(bytes.Repeat([]byte{0xEE}, 2*ChunkSize))
				return err
			})
			got := <-asked
			check := func(when string) {
				for i, s := range tc.spans {
					var cat []byte
					whole := 0
					for _, v := range got[i] {
						if cap(v) != len(v) {
							t.Errorf("%s: span %v: a slice of %d bytes has capacity %d", when, s, len(v), cap(v))
						}
						if len(v) == ChunkSize {
							whole++
						}
						cat = append(cat, v...)
					}
					if !bytes.Equal(cat, body[s.from:s.to]) {
						t.Errorf("%s: span %v: the slices hold %d bytes, not the body's", when, s, len(cat))
					}
					if off := s.from; len(got[i]) > 0 && int64(len(got[i][0])) > ChunkSize-off%ChunkSize {
						t.Errorf("%s: span %v: the first slice crosses a chunk boundary", when, s)
					}
					if i == 0 && whole != tc.whole {
						t.Errorf("%s: span %v: %d whole-chunk slices, want %d", when, s, whole, tc.whole)
					}
				}
			}
			check("after writing")
			close(more)
			if _, err := io.Copy(io.Discard, res.Body()); err != nil {
				t.Fatal(err)
			}
			check("after writing on")
		})
	}
}
