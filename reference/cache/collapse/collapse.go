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
//     leader's request; the fill's context carries the leader's context
//     values (not its cancellation). [Group.Stats] counts fills and joins so
//     the caller can log both.
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
// Memory: while a fill runs, and for as long as any Result or body reader of
// it is reachable, the whole body is held in fixed-size chunks shared by all
// readers (each byte is stored once, however many readers). A caller that
// must bound memory should have the fill tee the body to its store and keep
// objects that collapse within a size it can hold; a slow or stalled reader
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
const chunkSize = 64 << 10

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
)

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

	started, joined atomic.Int64
}

// New returns a Group whose fills are also cancelled when parent ends.
func New(parent context.Context) *Group {
	g := &Group{}
	g.initOnce.Do(func() { g.base, g.cancel = context.WithCancelCause(parent) })
	return g
}

func (g *Group) init() {
	g.initOnce.Do(func() { g.base, g.cancel = context.WithCancelCause(context.Background()) })
}

// Stats counts a Group's fills.
type Stats struct {
	Fills    int64 // fill functions started (leaders)
	Joins    int64 // Do calls that joined a running fill (followers)
	InFlight int   // fills running now
}

// Stats reports the Group's counters.
func (g *Group) Stats() Stats {
	g.mu.Lock()
	n := len(g.fills)
	g.mu.Unlock()
	return Stats{Fills: g.started.Load(), Joins: g.joined.Load(), InFlight: n}
}

// Do returns the response for key: if no fill for key is running it starts
// fill in a new goroutine and returns leader=true, otherwise it joins the
// running fill (fill is not called) and returns leader=false. Do never
// blocks on the fill. ctx bounds only this caller's waits on the Result:
// when it ends, this caller's Head and body reads return its cause while
// the fill and every other caller carry on. After Close, Do returns a
// Result whose Head fails with [ErrClosed].
func (g *Group) Do(ctx context.Context, key string, fill FillFunc) (res *Result, leader bool) {
	g.init()
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		f := newFlight()
		f.finish(ErrClosed)
		return &Result{f: f, ctx: ctx}, false
	}
	if f, ok := g.fills[key]; ok {
		g.mu.Unlock()
		g.joined.Add(1)
		return &Result{f: f, ctx: ctx}, false
	}
	f := newFlight()
	if g.fills == nil {
		g.fills = make(map[string]*flight)
	}
	g.fills[key] = f
	g.wg.Add(1)
	g.mu.Unlock()
	g.started.Add(1)

	fctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(g.base, func() { cancel(context.Cause(g.base)) })
	w := &Fill{f: f, ctx: fctx}
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
	return &Result{f: f, ctx: ctx}, true
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
	wmu sync.Mutex // serialises writers
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
// or after the fill function returned.
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
		if idx == len(f.chunks) {
			c := make([]byte, chunkSize)
			f.mu.Lock()
			f.chunks = append(f.chunks, c)
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

// Result is one caller's view of a fill.
type Result struct {
	f   *flight
	ctx context.Context
}

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
