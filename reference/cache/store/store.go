// Package store is the storage piece of the reference edge cache's caching
// (rules CCH, RNG and COL of ../shared/spec/behaviour.md), split out the way
// Envoy's cache_v2 splits HTTP cache semantics, storage and the upstream
// client. It knows nothing of HTTP: an entry is opaque metadata bytes (the
// caller encodes status, headers, validators, ...) and a body, stored under a
// string key.
//
// A body is written once and streamed: [Store.Begin] returns a [Writer]; the
// entry becomes visible to [Store.Open] only when [Writer.Commit] succeeds, so
// an aborted or truncated fill is never cached and never half-read. Committing
// a second writer for a key replaces the entry; readers of the old entry keep
// reading the old bytes to the end. A [Reader] is an [io.ReaderAt], and an
// [io.ReadSeeker] over the body, so [net/http.ServeContent] can serve it.
//
// Two implementations, both bounded by bytes, with
// github.com/maypok86/otter/v2 as the index and eviction policy:
//
//   - [Memory] ([NewMemory]): bodies held in 64 KiB chunks; the bound
//     covers the bodies still being written as well as committed ones.
//   - [Disk] ([NewDisk]): one file per entry (body, then key, metadata and a
//     checksummed footer), written to a temporary file and renamed into
//     place on commit; committed entries are re-indexed on start.
//
// Eviction is otter's W-TinyLFU policy (recency and frequency), which may also
// decline to admit a new entry when the store is full: a successful Commit
// means "stored", not "guaranteed to be found". The byte bound is enforced by
// otter's maintenance, which can lag a write briefly.
package store

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// Store holds entries by key. Implementations are safe for concurrent use.
type Store interface {
	// Begin starts writing the entry for key. The entry is invisible until
	// the returned Writer's Commit succeeds.
	Begin(key string) (Writer, error)
	// Open returns a Reader of the committed entry for key, and whether
	// there is one. Every Open counts as a hit or a miss.
	Open(key string) (Reader, bool)
	// Delete removes the entry for key, if any. Open readers of it keep
	// reading it. A fill in progress for the key is not affected: its
	// Commit stores it (whether it should is the caller's decision).
	Delete(key string)
	// Stats returns a snapshot of the store's counters.
	Stats() Stats
}

// Writer writes one entry. It is used by one goroutine at a time.
//
// Write returns an error as soon as the entry cannot be stored (too large,
// a disk error); the error is sticky and Commit returns it too. Callers
// should always `defer w.Abort()`: it is a no-op after Commit.
type Writer interface {
	io.Writer
	// SetMeta sets the entry's metadata (copied); it may be called any
	// time before Commit, the last call wins.
	SetMeta(meta []byte)
	// SetSize declares the final body size when it is known (for example
	// from Content-Length): Commit then fails with ErrSizeMismatch if a
	// different number of bytes was written, and Write fails as soon as
	// more are written. A negative size means unknown (the default).
	SetSize(size int64)
	// Commit makes the entry visible, replacing any previous entry for the
	// key. After Commit, whatever it returned, the Writer is finished.
	Commit() error
	// Abort discards the entry; it is a no-op after Commit or Abort.
	Abort()
}

// Adopter is a Writer that can keep the caller's bytes instead of copying
// them (issue #14: a fill's body is then held once, by the fill and the
// store together). Adopt is Write for a p that nobody will modify again;
// the writer may keep p itself. Callers use [Adopt], which falls back to
// Write.
type Adopter interface {
	Adopt(p []byte) (int, error)
}

// Adopt writes p to w, through [Adopter] when w is one: p must then
// never be modified again.
func Adopt(w Writer, p []byte) (int, error) {
	if a, ok := w.(Adopter); ok {
		return a.Adopt(p)
	}
	return w.Write(p)
}

// Bodied is a Reader that can give its entry's body as the store holds
// it, so that a new entry of the same bytes can share them ([Adopt])
// rather than copy them (a revalidated entry re-committed with new
// metadata: issue #14). The slices are never modified; the caller must
// not modify them either.
type Bodied interface {
	Body() [][]byte
}

// Reader reads one committed entry. ReadAt may be called concurrently;
// Read and Seek share an offset and are for one goroutine at a time.
type Reader interface {
	io.ReaderAt
	io.ReadSeeker
	// Meta returns the entry's metadata. The caller must not modify it.
	Meta() []byte
	// Size returns the body size in bytes.
	Size() int64
	// Close releases the Reader (for Disk, its file descriptor).
	Close() error
}

// Noted is implemented by the Readers of both stores: a committed entry
// keeps one value beside its bytes, in memory, set by any reader and seen by
// every later reader of the same entry (a replacement starts without one).
// The edge keeps the entry's decoded metadata there, so that a hit does not
// decode it again. The value must be treated as immutable once set.
type Noted interface {
	Note() any
	SetNote(v any)
}

// note is the value a committed entry keeps for [Noted].
type note struct{ v atomic.Pointer[any] }

func (n *note) get() any {
	if p := n.v.Load(); p != nil {
		return *p
	}
	return nil
}

func (n *note) set(v any) { n.v.Store(&v) }

// Stats are a store's counters.
type Stats struct {
	Entries   int    // entries in the index (otter's estimate)
	Bytes     int64  // bytes accounted to them (see NewMemory, NewDisk)
	Hits      uint64 // Opens that found an entry
	Misses    uint64 // Opens that did not
	Evictions uint64 // entries evicted for the byte bound
}

var (
	// ErrTooLarge is returned by Write and Commit when the entry is larger
	// than the store's whole byte bound; nothing is stored.
	ErrTooLarge = errors.New("entry larger than the store")
	// ErrSizeMismatch is returned by Write and Commit when the body's size
	// differs from the one declared with SetSize (a truncated fill).
	ErrSizeMismatch = errors.New("body size differs from the declared size")
	// ErrClosed is returned when a finished Writer or a closed Reader is used.
	ErrClosed = errors.New("writer or reader already finished")
)

var (
	_ Store = (*Memory)(nil)
	_ Store = (*Disk)(nil)
	_ Noted = (*memReader)(nil)
	_ Noted = (*diskReader)(nil)
)

// weightOf converts n bytes to an otter weight in units of unit bytes,
// rounded up, at least 1 (a zero weight would escape the bound). ok is false
// when the weight does not fit otter's uint32.
func weightOf(n, unit int64) (w uint32, ok bool) {
	u := (n + unit - 1) / unit
	if u < 1 {
		u = 1
	}
	if u > int64(^uint32(0)) {
		return 0, false
	}
	return uint32(u), true
}

// counters are the statistics both stores keep.
type counters struct {
	bytes     atomic.Int64
	hits      atomic.Uint64
	misses    atomic.Uint64
	evictions atomic.Uint64
}

func (c *counters) stats(entries int) Stats {
	return Stats{
		Entries:   entries,
		Bytes:     c.bytes.Load(),
		Hits:      c.hits.Load(),
		Misses:    c.misses.Load(),
		Evictions: c.evictions.Load(),
	}
}

// pending is the bookkeeping both stores' writers share: the entry's key
// and metadata, the bytes written and declared, and how writing ended.
type pending struct {
	key    string
	meta   []byte
	size   int64
	expect int64 // declared body size; -1 when unknown
	err    error // sticky: the first failure
	done   bool  // committed or aborted
}

func newPending(key string) pending { return pending{key: key, expect: -1} }

// SetMeta implements Writer.
func (p *pending) SetMeta(meta []byte) {
	if !p.done {
		p.meta = append([]byte(nil), meta...)
	}
}

// SetSize implements Writer.
func (p *pending) SetSize(size int64) { p.expect = size }

// admit says why n more body bytes cannot be written (nil if they can),
// counting overhead bytes against the store's bound max.
func (p *pending) admit(n int, overhead, max int64) error {
	switch next := p.size + int64(n); {
	case p.done:
		return ErrClosed
	case p.err != nil:
		return p.err
	case p.expect >= 0 && next > p.expect:
		return fmt.Errorf("store: writing %q: %d bytes, more than the declared %d: %w", p.key, next, p.expect, ErrSizeMismatch)
	case next+overhead > max:
		return fmt.Errorf("store: writing %q: %d bytes, the store holds %d: %w", p.key, next, max, ErrTooLarge)
	}
	return nil
}

// beginCommit ends writing and says why the entry cannot be committed (nil
// if it can).
func (p *pending) beginCommit() error {
	if p.done {
		return ErrClosed
	}
	p.done = true
	switch {
	case p.err != nil:
		return p.err
	case p.expect >= 0 && p.size != p.expect:
		return fmt.Errorf("store: committing %q: %d bytes written, %d declared: %w", p.key, p.size, p.expect, ErrSizeMismatch)
	}
	return nil
}
