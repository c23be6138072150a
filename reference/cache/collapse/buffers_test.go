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
