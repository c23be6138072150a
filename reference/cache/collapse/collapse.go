// Package collapse is the reference edge cache's request-collapsing
// primitive: concurrent fills of one cache key on one node become one fill
// whose response every caller reads as it streams in. It knows nothing of
// HTTP or storage; a fill produces an opaque head (for example a status and
// headers) and a body of bytes.
//
// The rules it implements, from ../shared/spec/behaviour.md:
//
//   - COL-1: the first [Group.Do] for a key starts the one fill; every later
//     Do for that key while the fill runs joins it.
//   - COL-2: only the leader's fill function runs, so the origin sees only the
//     leader's request, its headers and User-Agent included (HST-5); the
//     fill's context carries the leader's context values (not its
//     cancellation). [Group.Stats] counts fills and joins so the caller can
//     log both.
//   - COL-3: keys are compared exactly; different keys never collapse.
//   - COL-5: every caller's [Result.Body] reads from offset 0 while the fill is
//     still writing; a reader blocks only until more bytes arrive or the fill
//     ends, never for the whole object.
//   - COL-6: the fill runs in its own goroutine with a context derived from
//     the Group, not from the leader: the leader's context ending detaches
//     only the leader. [Group.Close] cancels running fills.
//   - COL-7: a fill that fails before publishing a head gives every caller the
//     same error from [Result.Head] (the caller maps it to its 502/504); a
//     fill that fails mid-body makes every reader's Read return an error
//     wrapping both [ErrTruncated] and the cause after the bytes written,
//     never io.EOF, so nobody mistakes a truncated object for a complete one
//     (and the caller does not cache it).
//
// COL-4 (collapsing on by default) is the caller's configuration.
//
// Two limits, both off in the zero Group (issue #12 item 2: a fill must not
// amplify load onto the origin for clients that are gone):
//
//   - [Unattended]: COL-6 keeps a fill running for its followers, not for
//     nobody. Every Do caller is attached to its fill until it calls
//     [Result.Detach] or its Do context ends; a fill with nobody attached
//     may still write up to the given number of bytes (so that a small
//     object or one chunk of a large one is finished and cached), and past
//     that its Write fails with [ErrAbandoned]. An abandoned fill is never
//     joined: the next Do for its key starts a new one.
//   - [MaxFills]: at most that many fills run at once; a Do that would
//     start one more gets a Result whose Head fails with [ErrTooManyFills]
//     (the caller answers 503), and joining a running fill is never refused.
//
// Memory: while a fill runs, and for as long as any Result or body reader of
// it is reachable, the whole body is held in fixed-size chunks shared by all
// readers (each byte is stored once, however many readers). A caller that
// must bound memory should have the fill tee the body to its store and keep
// objects that collapse within a size it can hold; [Fill.Bytes] lets the
// store keep the fill's own buffers rather than a copy. A slow or stalled reader
// does not block the fill or other readers, but it keeps the chunks alive
// until it is closed and dropped. Once the fill ends the key is released: the
// next Do for it starts a new fill (by then the caller has cached the object,
// or not).
package collapse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// chunkSize is the size of the shared body buffers.
const chunkSize = ChunkSize

// ChunkSize is the size of a fill's body buffers: every buffer but the
// last of a body is one ChunkSize long ([Fill.Bytes]).
const ChunkSize = 64 << 10

// firstBuffer is the size of a body's first buffer for a first write of n
// bytes: at least 4 KiB, a power of two, at most chunkSize. It doubles as
// the body grows, up to chunkSize (issue #14: a 1 KiB object took 64 KiB).
func firstBuffer(n int) int {
	c := 4 << 10
	for c < n && c < chunkSize {
		c *= 2
	}
	return c
}

var (
	// ErrClosed is the cause of fills stopped by [Group.Close] and the
	// error of a Do after Close.
	ErrClosed = errors.New("collapse: group closed")
	// ErrTruncated is wrapped, with the fill's error, by every body read of
	// a fill that failed after its head.
	ErrTruncated = errors.New("collapse: fill failed mid-body")
	// ErrNoHead is the error of a fill that returned nil without calling
	// [Fill.Head].
	ErrNoHead = errors.New("collapse: fill returned without a head")
	// ErrFillState is returned by [Fill.Head] called twice, by [Fill.Write]
	// before Head, and by either after the fill function returned.
	ErrFillState = errors.New("collapse: fill used out of order")
	// ErrReaderClosed is returned by reads of a closed body reader.
	ErrReaderClosed = errors.New("collapse: body reader closed")
	// ErrAbandoned is returned by [Fill.Write] once nobody is attached to
	// the fill and it has written its unattended allowance ([Unattended]).
	ErrAbandoned = errors.New("collapse: every caller of the fill has gone")
	// ErrTooManyFills is the Head error of a Do refused by [MaxFills].
	ErrTooManyFills = errors.New("collapse: too many fills in flight")
)

// Option configures [New].
type Option func(*Group)

// MaxFills bounds the fills running at once (n <= 0: no bound).
func MaxFills(n int) Option { return func(g *Group) { g.maxFills = n } }

// Unattended lets a fill with nobody attached write at most n more bytes
// in all (n <= 0: a fill always runs to its end).
func Unattended(n int64) Option { return func(g *Group) { g.unattended = n } }

// FillFunc produces the one response for a key. It must call w.Head (or
// return an error) before writing the body with w.Write, then return nil
// when the body is complete or an error if it is not. ctx is the fill's
// own context: it carries the leader's values but ends only on
// [Group.Close]. A panic in a fill is recovered and fails the fill.
type FillFunc func(ctx context.Context, w *Fill) error

// Group collapses fills by key. The zero value is ready to use (its fills
// run until they return or Close is called); a Group must not be copied
// after first use.
type Group struct {
	initOnce sync.Once
	base     context.Context
	cancel   context.CancelCauseFunc

	mu     sync.Mutex
	fills  map[string]*flight
	closed bool
	wg     sync.WaitGroup

	maxFills   int
	unattended int64

	started, joined, refused, abandoned atomic.Int64
}

// New returns a Group whose fills are also cancelled when parent ends.
func New(parent context.Context, opts ...Option) *Group {
	g := &Group{}
	for _, o := range opts {
		o(g)
	}
	g.initOnce.Do(func() { g.base, g.cancel = context.WithCancelCause(parent) })
	return g
}

func (g *Group) init() {
	g.initOnce.Do(func() { g.base, g.cancel = context.WithCancelCause(context.Background()) })
}

// Stats counts a Group's fills.
type Stats struct {
	Fills     int64 // fill functions started (leaders)
	Joins     int64 // Do calls that joined a running fill (followers)
	Refused   int64 // Do calls refused by MaxFills
	Abandoned int64 // fills stopped because nobody was attached
	InFlight  int   // fills running now
}

// Stats reports the Group's counters.
func (g *Group) Stats() Stats {
	g.mu.Lock()
	n := len(g.fills)
	g.mu.Unlock()
	return Stats{Fills: g.started.Load(), Joins: g.joined.Load(), Refused: g.refused.Load(),
		Abandoned: g.abandoned.Load(), InFlight: n}
}

// Do returns the response for key: if no fill for key is running it starts
// fill in a new goroutine and returns leader=true, otherwise it joins the
// running fill (fill is not called) and returns leader=false. Do never
// blocks on the fill. ctx bounds only this caller's waits on the Result:
// when it ends, this caller's Head and body reads return its cause while
// the fill and every other caller carry on; it also detaches this caller
// (see [Unattended]). After Close, Do returns a Result whose Head fails
// with [ErrClosed]; past [MaxFills], one that fails with [ErrTooManyFills].
func (g *Group) Do(ctx context.Context, key string, fill FillFunc) (res *Result, leader bool) {
	g.init()
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return failed(ctx, ErrClosed), false
	}
	if f, ok := g.fills[key]; ok && f.attach() {
		g.mu.Unlock()
		g.joined.Add(1)
		return newResult(f, ctx), false
	}
	// No fill, or an abandoned one still ending: start one (the old one
	// releases the key only if it is still its own).
	if g.maxFills > 0 && len(g.fills) >= g.maxFills {
		g.mu.Unlock()
		g.refused.Add(1)
		return failed(ctx, ErrTooManyFills), false
	}
	f := newFlight()
	f.attached = 1
	if g.fills == nil {
		g.fills = make(map[string]*flight)
	}
	g.fills[key] = f
	g.wg.Add(1)
	g.mu.Unlock()
	g.started.Add(1)

	fctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(g.base, func() { cancel(context.Cause(g.base)) })
	w := &Fill{f: f, ctx: fctx, g: g, key: key}
	go func() {
		defer g.wg.Done()
		err := run(fctx, w, fill)
		stop()
		cancel(nil)
		// Release the key before waking readers, so that a caller that has
		// seen the fill end and calls Do again starts a new fill.
		g.mu.Lock()
		if g.fills[key] == f {
			delete(g.fills, key)
		}
		g.mu.Unlock()
		f.finish(err)
	}()
	return newResult(f, ctx), true
}

// failed is a Result of a fill that failed with err before its head.
func failed(ctx context.Context, err error) *Result {
	f := newFlight()
	f.finish(err)
	return newResult(f, ctx)
}

func run(ctx context.Context, w *Fill, fill FillFunc) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("collapse: fill panicked: %v", p)
		}
	}()
	return fill(ctx, w)
}

// Close cancels every running fill's context with cause [ErrClosed], waits
// for the fill functions to return, and makes later Do calls fail. Fills
// that ignore their context delay Close.
func (g *Group) Close() error {
	g.init()
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.cancel(ErrClosed)
	g.wg.Wait()
	return nil
}

// flight is one fill's shared state.
type flight struct {
	headDone chan struct{} // closed when the head is published or the fill failed before it
	done     chan struct{} // closed when the fill function has returned

	mu      sync.Mutex
	wake    chan struct{} // closed and replaced whenever size or state changes
	hasHead bool
	meta    any
	chunks  [][]byte // each chunkSize long; bytes [0, size) are immutable once published
	size    int64
	ended   bool
	headErr error // the fill failed before its head
	bodyErr error // the fill failed after its head (wraps ErrTruncated)
	// attached counts callers that have not detached; abandoned is set
	// when the fill stopped for want of them (it is then never joined).
	attached  int
	abandoned bool
}

// attach adds a caller, unless the fill was abandoned.
func (f *flight) attach() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.abandoned {
		return false
	}
	f.attached++
	return true
}

func (f *flight) detach() {
	f.mu.Lock()
	f.attached--
	f.mu.Unlock()
}

func newFlight() *flight {
	return &flight{headDone: make(chan struct{}), done: make(chan struct{}), wake: make(chan struct{})}
}

// broadcastLocked wakes every waiting reader. f.mu must be held.
func (f *flight) broadcastLocked() {
	close(f.wake)
	f.wake = make(chan struct{})
}

func (f *flight) finish(err error) {
	f.mu.Lock()
	switch {
	case !f.hasHead && err == nil:
		f.headErr = ErrNoHead
	case !f.hasHead:
		f.headErr = err
	case err != nil:
		f.bodyErr = fmt.Errorf("%w after %d bytes: %w", ErrTruncated, f.size, err)
	}
	f.ended = true
	if !f.hasHead {
		close(f.headDone)
	}
	f.broadcastLocked()
	f.mu.Unlock()
	close(f.done)
}

// Fill is the writing side of one fill, passed to the [FillFunc]. Its
// methods are safe for concurrent use but a body is one ordered stream.
type Fill struct {
	f   *flight
	ctx context.Context
	g   *Group
	key string
	wmu sync.Mutex // serialises writers
}

// Release gives the fill's key up before the fill ends: a Do for the key
// from now on starts a fill of its own, while the callers already
// attached keep this one. A fill whose answer is complete at its head
// calls it before Head, so that a request arriving after the origin
// answered is not handed that answer (COL-1 collapses concurrent fills
// only; CCH-4: a no-cache entry is revalidated before each use).
func (w *Fill) Release() {
	w.g.mu.Lock()
	if w.g.fills[w.key] == w.f {
		delete(w.g.fills, w.key)
	}
	w.g.mu.Unlock()
}

// Head publishes the response head (for example status and headers) to
// every caller. It must be called once, before Write.
func (w *Fill) Head(meta any) error {
	f := w.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hasHead || f.ended {
		return ErrFillState
	}
	f.hasHead, f.meta = true, meta
	close(f.headDone)
	f.broadcastLocked()
	return nil
}

// Write appends p to the body and wakes every reader. It copies p. It
// fails with the context's cause once the fill's context has ended (so a
// fill stopped by Close ends promptly) and with [ErrFillState] before Head
// or after the fill function returned, and with [ErrAbandoned] once
// nobody is attached and the fill has written its unattended allowance.
func (w *Fill) Write(p []byte) (int, error) {
	if err := w.ctx.Err(); err != nil {
		return 0, context.Cause(w.ctx)
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	f := w.f
	f.mu.Lock()
	if !f.hasHead || f.ended {
		f.mu.Unlock()
		return 0, ErrFillState
	}
	if f.abandoned || (w.g.unattended > 0 && f.attached <= 0 && f.size >= w.g.unattended) {
		if !f.abandoned {
			f.abandoned = true
			w.g.abandoned.Add(1)
		}
		f.mu.Unlock()
		return 0, ErrAbandoned
	}
	size := f.size
	f.mu.Unlock()
	if len(p) == 0 {
		return 0, nil
	}

	// Only this writer touches bytes at or beyond f.size, and readers only
	// read below it, so the copy needs no lock; f.chunks itself is only
	// changed under f.mu. This writer is the only one changing it, so it
	// may read it without the lock.
	n := 0
	for n < len(p) {
		idx, off := int(size/chunkSize), int(size%chunkSize)
		switch {
		case idx == len(f.chunks):
			// The first buffer starts small and grows (firstBuffer), so
			// that a small body does not take a whole chunk.
			bufLen := chunkSize
			if idx == 0 {
				bufLen = firstBuffer(len(p))
			}
			c := make([]byte, bufLen)
			f.mu.Lock()
			f.chunks = append(f.chunks, c)
			f.mu.Unlock()
		case off == len(f.chunks[idx]): // only the first buffer can be short
			grown := make([]byte, min(2*len(f.chunks[idx]), chunkSize))
			copy(grown, f.chunks[idx][:off])
			// Readers may hold the old list: give them a new one rather
			// than change an element they read without the lock.
			chunks := append([][]byte(nil), f.chunks...)
			chunks[idx] = grown
			f.mu.Lock()
			f.chunks = chunks
			f.mu.Unlock()
		}
		c := copy(f.chunks[idx][off:], p[n:])
		n += c
		size += int64(c)
	}

	f.mu.Lock()
	f.size = size
	f.broadcastLocked()
	f.mu.Unlock()
	return n, nil
}

// Bytes appends to dst the fill's own storage of body bytes [from, to)
// and returns it: one slice per buffer they span, each split at
// multiples of [ChunkSize], so a whole buffer is one slice of ChunkSize
// bytes. The bytes are never written again, and the slices' capacity
// ends where they do; the caller must not modify them. It is for
// whoever writes the fill to keep its body without a second copy (the
// edge's cache store, issue #14). from and to must lie within what was
// written; otherwise Bytes returns dst unchanged.
func (w *Fill) Bytes(dst [][]byte, from, to int64) [][]byte {
	f := w.f
	f.mu.Lock()
	size, chunks := f.size, f.chunks
	f.mu.Unlock()
	if from < 0 || from > to || to > size {
		return dst
	}
	for from < to {
		idx, off := int(from/chunkSize), int(from%chunkSize)
		end := int(min(int64(chunkSize), to-int64(idx)*chunkSize))
		dst = append(dst, chunks[idx][off:end:end])
		from += int64(end - off)
	}
	return dst
}

// Result is one caller's view of a fill.
type Result struct {
	f          *flight
	ctx        context.Context
	detachOnce sync.Once
	stop       func() bool // stops the Do context's AfterFunc
}

func newResult(f *flight, ctx context.Context) *Result {
	r := &Result{f: f, ctx: ctx}
	r.stop = context.AfterFunc(ctx, r.detach)
	return r
}

// Detach tells the fill this caller needs nothing more from it (see
// [Unattended]); the caller's body readers keep working. It is idempotent
// and also happens when the Do context ends.
func (r *Result) Detach() {
	r.stop()
	r.detach()
}

func (r *Result) detach() { r.detachOnce.Do(r.f.detach) }

// Head blocks until the fill publishes its head or fails before it, or
// until ctx or the Do context ends (which returns that context's cause and
// detaches only this caller). Every caller of a fill that failed before
// its head gets the same error.
func (r *Result) Head(ctx context.Context) (meta any, err error) {
	if r.ctx.Err() != nil {
		return nil, context.Cause(r.ctx)
	}
	select {
	case <-r.f.headDone:
	default:
		select {
		case <-r.f.headDone:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-r.ctx.Done():
			return nil, context.Cause(r.ctx)
		}
	}
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	if !r.f.hasHead {
		return nil, r.f.headErr
	}
	return r.f.meta, nil
}

// Done is closed when the fill function has returned.
func (r *Result) Done() <-chan struct{} { return r.f.done }

// Err reports how the fill ended, once Done is closed: nil if complete,
// the head error if it failed before its head, or the wrapped
// [ErrTruncated] error if it failed mid-body. Before Done it returns nil.
func (r *Result) Err() error {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	if r.f.headErr != nil {
		return r.f.headErr
	}
	return r.f.bodyErr
}

// Body returns a new reader of the body from offset 0. Reads block until
// bytes beyond the reader's offset are written or the fill ends; they
// return io.EOF only after a complete fill, the head error if the fill
// failed before its head, an error wrapping [ErrTruncated] and the cause if
// it failed mid-body, and the Do context's cause once that ends. Close
// (which may be called concurrently with Read) detaches the reader.
func (r *Result) Body() io.ReadCloser {
	return &reader{f: r.f, ctx: r.ctx, closed: make(chan struct{})}
}

type reader struct {
	f         *flight
	ctx       context.Context
	off       int64
	closeOnce sync.Once
	closed    chan struct{}
}

func (r *reader) Read(p []byte) (int, error) {
	f := r.f
	for {
		select {
		case <-r.closed:
			return 0, ErrReaderClosed
		default:
		}
		if r.ctx.Err() != nil {
			return 0, context.Cause(r.ctx)
		}
		f.mu.Lock()
		size, chunks, wake := f.size, f.chunks, f.wake
		ended, headErr, bodyErr := f.ended, f.headErr, f.bodyErr
		f.mu.Unlock()
		if r.off < size {
			if len(p) == 0 {
				return 0, nil
			}
			n := 0
			for n < len(p) && r.off < size {
				idx, off := int(r.off/chunkSize), int(r.off%chunkSize)
				end := min(int64(chunkSize), size-int64(idx)*chunkSize)
				c := copy(p[n:], chunks[idx][off:end])
				n += c
				r.off += int64(c)
			}
			return n, nil
		}
		if ended {
			switch {
			case headErr != nil:
				return 0, headErr
			case bodyErr != nil:
				return 0, bodyErr
			}
			return 0, io.EOF
		}
		select {
		case <-wake:
		case <-r.closed:
		case <-r.ctx.Done():
		}
	}
}

func (r *reader) Close() error {
	r.closeOnce.Do(func() { close(r.closed) })
	return nil
}
