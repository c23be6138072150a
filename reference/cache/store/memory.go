package store

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/maypok86/otter/v2"
)

// chunkSize is the size of the slices a Memory body is allocated in.
const chunkSize = 64 << 10

// Memory is an in-memory Store bounded by bytes. An entry weighs its body,
// metadata and key bytes (the key counts so that empty entries still weigh
// something); entries over 4 GiB are not stored.
//
// The bound covers the bodies being written too (issue #12 item 5): a
// writer reserves the bytes it is given, and the committed entries
// may only use what the writers in progress leave (the index's maximum
// shrinks by the reservations, evicting at once). A write that would take
// the reservations past the bound fails: that entry is not stored (its
// fill still streams to its readers).
type Memory struct {
	max   int64
	cache *otter.Cache[string, *memEntry]

	resMu    sync.Mutex // serializes reservations with the index's maximum
	reserved int64      // bytes held by writers in progress

	counters
}

// memEntry is a committed, immutable entry.
type memEntry struct {
	meta   []byte
	chunks [][]byte // every chunk chunkSize long but the last
	size   int64
	weight int64
	note   note
}

// NewMemory returns a Memory store holding at most about maxBytes (see the
// package documentation on the bound). With maxBytes <= 0 it stores nothing.
func NewMemory(maxBytes int64) *Memory {
	m := &Memory{max: maxBytes}
	m.cache = otter.Must(&otter.Options[string, *memEntry]{
		MaximumWeight: uint64(max(maxBytes, 1)),
		Weigher: func(_ string, e *memEntry) uint32 {
			w, _ := weightOf(e.weight, 1) // checked at Commit
			return w
		},
		OnAtomicDeletion: func(ev otter.DeletionEvent[string, *memEntry]) {
			m.bytes.Add(-ev.Value.weight)
			if ev.WasEvicted() {
				m.evictions.Add(1)
			}
		},
	})
	return m
}

// Begin implements Store.
func (m *Memory) Begin(key string) (Writer, error) {
	return &memWriter{pending: newPending(key), m: m}, nil
}

// Open implements Store.
func (m *Memory) Open(key string) (Reader, bool) {
	e, ok := m.cache.GetIfPresent(key)
	if !ok {
		m.misses.Add(1)
		return nil, false
	}
	m.hits.Add(1)
	return &memReader{e: e}, true
}

// Delete implements Store.
func (m *Memory) Delete(key string) { m.cache.Invalidate(key) }

// Stats implements Store.
func (m *Memory) Stats() Stats {
	return m.stats(m.cache.EstimatedSize())
}

// Close stops the index's background goroutines. The store must not be used
// afterwards.
func (m *Memory) Close() error {
	m.cache.StopAllGoroutines()
	return nil
}

// reserve takes n more bytes for a writer in progress, or says why not.
func (m *Memory) reserve(key string, n int64) error {
	if n == 0 {
		return nil
	}
	m.resMu.Lock()
	defer m.resMu.Unlock()
	if m.reserved+n > m.max {
		return fmt.Errorf("store: writing %q: the entries being written already hold %d of the store's %d bytes: %w", key, m.reserved, m.max, ErrTooLarge)
	}
	m.reserved += n
	m.cache.SetMaximum(uint64(max(m.max-m.reserved, 1)))
	return nil
}

// release gives back n reserved bytes.
func (m *Memory) release(n int64) {
	if n == 0 {
		return
	}
	m.resMu.Lock()
	defer m.resMu.Unlock()
	m.reserved -= n
	m.cache.SetMaximum(uint64(max(m.max-m.reserved, 1)))
}

// Reserved is the number of bytes the writers in progress hold.
func (m *Memory) Reserved() int64 {
	m.resMu.Lock()
	defer m.resMu.Unlock()
	return m.reserved
}

type memWriter struct {
	pending
	m      *Memory
	chunks [][]byte
	held   int64 // bytes reserved in m
}

func (w *memWriter) fail(err error) error {
	w.err = err
	w.drop()
	return err
}

// drop lets go of the chunks and their reservation.
func (w *memWriter) drop() {
	w.chunks = nil
	w.m.release(w.held)
	w.held = 0
}

// hold admits n more bytes and reserves them in the store.
func (w *memWriter) hold(n int) error {
	if err := w.admit(n, int64(len(w.meta)+len(w.key)), w.m.max); err != nil {
		return w.fail(err)
	}
	if err := w.m.reserve(w.key, int64(n)); err != nil {
		return w.fail(err)
	}
	w.held += int64(n)
	return nil
}

func (w *memWriter) Write(p []byte) (int, error) {
	if err := w.hold(len(p)); err != nil {
		return 0, err
	}
	next := w.size + int64(len(p))
	n := len(p)
	for len(p) > 0 {
		last := len(w.chunks) - 1
		if last < 0 || len(w.chunks[last]) == chunkSize {
			w.chunks = append(w.chunks, make([]byte, 0, chunkSize))
			last++
		}
		c := w.chunks[last]
		k := min(len(p), chunkSize-len(c))
		w.chunks[last] = append(c, p[:k]...)
		p = p[k:]
	}
	w.size = next
	return n, nil
}

// Adopt is Write that keeps p as the entry's next chunk, not a copy, when
// p is one whole chunk (chunkSize bytes) and the entry so far is whole
// chunks; otherwise it copies, as Write. The kept slice's capacity is cut
// to its length, so no later Write can append into it.
func (w *memWriter) Adopt(p []byte) (int, error) {
	if len(p) != chunkSize || w.size%chunkSize != 0 {
		return w.Write(p)
	}
	if err := w.hold(len(p)); err != nil {
		return 0, err
	}
	w.chunks = append(w.chunks, p[:len(p):len(p)])
	w.size += int64(len(p))
	return len(p), nil
}

func (w *memWriter) Commit() error {
	if err := w.beginCommit(); err != nil {
		return w.fail(err)
	}
	weight := w.size + int64(len(w.meta)+len(w.key))
	if _, ok := weightOf(weight, 1); !ok || max(weight, 1) > w.m.max {
		return w.fail(fmt.Errorf("store: committing %q: %d bytes, the store holds %d: %w", w.key, weight, w.m.max, ErrTooLarge))
	}
	// Trim the last chunk so a small entry does not pin a whole chunk.
	if last := len(w.chunks) - 1; last >= 0 && len(w.chunks[last]) < cap(w.chunks[last]) {
		c := make([]byte, len(w.chunks[last]))
		copy(c, w.chunks[last])
		w.chunks[last] = c
	}
	e := &memEntry{meta: w.meta, chunks: w.chunks, size: w.size, weight: weight}
	w.drop() // the entry now weighs in the index instead
	w.m.bytes.Add(weight)
	w.m.cache.Set(w.key, e)
	return nil
}

func (w *memWriter) Abort() {
	if !w.done {
		w.done = true
		w.drop()
	}
}

type memReader struct {
	e      *memEntry
	off    int64
	closed atomic.Bool
}

func (r *memReader) Meta() []byte  { return r.e.meta }
func (r *memReader) Note() any     { return r.e.note.get() }
func (r *memReader) SetNote(v any) { r.e.note.set(v) }
func (r *memReader) Size() int64   { return r.e.size }

// Body is the entry's chunks: each chunkSize long but the last (Bodied).
func (r *memReader) Body() [][]byte { return r.e.chunks }

func (r *memReader) ReadAt(p []byte, off int64) (int, error) {
	if r.closed.Load() {
		return 0, ErrClosed
	}
	if off < 0 {
		return 0, errors.New("store: ReadAt: negative offset")
	}
	n := 0
	for n < len(p) && off < r.e.size {
		c := r.e.chunks[off/chunkSize]
		k := copy(p[n:], c[off%chunkSize:])
		n += k
		off += int64(k)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (r *memReader) Read(p []byte) (int, error) {
	if r.off >= r.e.size {
		if r.closed.Load() {
			return 0, ErrClosed
		}
		return 0, io.EOF
	}
	n, err := r.ReadAt(p, r.off)
	r.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// BuffersWriter is a writer that takes several buffers at once (the
// client-facing server's response: one gathered write for all of them).
type BuffersWriter interface {
	WriteBuffers(bufs [][]byte) (int64, error)
}

// WriteTo writes the rest of the body to w straight from the entry's
// chunks, no copy (issue #14: a 1 MiB hit went through a 32 KiB buffer, 32
// reads and writes): all of them at once to a BuffersWriter when the rest
// spans more than one chunk (a 1 MiB body in 16 writes of 64 KiB stalled
// now and then on loopback, p99 about 20 ms at 200 1 MiB hits/s, 3 ms in
// one gathered write: docs/reference.md), else one Write per chunk.
// Committed chunks are never changed or reused, so the slices stay valid
// while w holds them.
func (r *memReader) WriteTo(w io.Writer) (int64, error) {
	if bw, ok := w.(BuffersWriter); ok && r.off < r.e.size && r.off/chunkSize != (r.e.size-1)/chunkSize {
		return r.writeBuffers(bw)
	}
	var n int64
	for r.off < r.e.size {
		if r.closed.Load() {
			return n, ErrClosed
		}
		c := r.e.piece(r.off)
		m, err := w.Write(c)
		r.off += int64(m)
		n += int64(m)
		if err != nil {
			return n, err
		}
		if m < len(c) {
			return n, io.ErrShortWrite
		}
	}
	return n, nil
}

// piece is the stored bytes from off to the end of off's chunk (or of
// the body), the entry's own.
func (e *memEntry) piece(off int64) []byte {
	c := e.chunks[off/chunkSize][off%chunkSize:]
	return c[:min(int64(len(c)), e.size-off)]
}

// writeBuffers is WriteTo through w.WriteBuffers.
func (r *memReader) writeBuffers(w BuffersWriter) (int64, error) {
	if r.closed.Load() {
		return 0, ErrClosed
	}
	left := r.e.size - r.off
	bufs := make([][]byte, 0, (left+chunkSize-1)/chunkSize+1)
	for off := r.off; off < r.e.size; {
		c := r.e.piece(off)
		bufs = append(bufs, c)
		off += int64(len(c))
	}
	n, err := w.WriteBuffers(bufs)
	r.off += n
	if err == nil && n < left {
		err = io.ErrShortWrite
	}
	return n, err
}

func (r *memReader) Seek(offset int64, whence int) (int64, error) {
	off, err := seekOffset(r.off, r.e.size, offset, whence)
	if err != nil {
		return r.off, err
	}
	r.off = off
	return off, nil
}

func (r *memReader) Close() error {
	r.closed.Store(true)
	return nil
}

// seekOffset computes io.Seeker's new offset.
func seekOffset(cur, size, offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += cur
	case io.SeekEnd:
		offset += size
	default:
		return 0, fmt.Errorf("store: Seek: invalid whence %d", whence)
	}
	if offset < 0 {
		return 0, errors.New("store: Seek: negative position")
	}
	return offset, nil
}
