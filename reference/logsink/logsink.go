// Package logsink is the reference edge cache's log writer: an
// asynchronous, buffered io.Writer for log/slog handlers that never blocks a
// request on the log's destination.
//
// A slog handler writes each record with one Write call. [Sink.Write] copies
// the record into an in-memory batch and returns; a background goroutine
// writes whole batches to the destination (stderr, a file, a pipe) when a
// batch fills up or every [Options.FlushEvery], so a request costs a copy,
// not a system call. When the destination is slower than the records come
// (a blocked pipe, a full disk), pending bytes are bounded by
// [Options.MaxPending]: records beyond it are dropped whole, never cut,
// and counted ([Sink.Dropped]; the edge exports it as a metric). [Sink.Close]
// writes everything still pending, so a clean shutdown loses nothing.
package logsink

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for [Options].
const (
	DefaultBatchBytes = 64 << 10
	DefaultMaxPending = 8 << 20
	DefaultFlushEvery = 100 * time.Millisecond
)

// Options tune a [Sink]; zero fields take the defaults.
type Options struct {
	// BatchBytes is the size at which a batch is handed to the writer
	// goroutine without waiting for FlushEvery.
	BatchBytes int
	// MaxPending bounds the bytes buffered and not yet written; a record
	// that would pass it is dropped.
	MaxPending int
	// FlushEvery is the longest a record waits in a partial batch.
	FlushEvery time.Duration
}

// Sink is an asynchronous buffered writer. It is safe for concurrent use.
type Sink struct {
	dst  io.Writer
	opts Options

	mu      sync.Mutex
	batch   []byte   // being filled
	queue   [][]byte // full batches waiting for the writer goroutine
	pending int      // bytes in batch and queue
	closed  bool
	spare   [][]byte // written batches, reused

	kick    chan struct{} // a batch is queued (capacity 1)
	done    chan struct{} // the writer goroutine has ended
	dropped atomic.Int64
	werr    atomic.Pointer[error] // the first write error
}

// New starts a Sink writing to dst. Close it to flush and stop.
func New(dst io.Writer, opts Options) *Sink {
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = DefaultBatchBytes
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.MaxPending < opts.BatchBytes {
		opts.MaxPending = opts.BatchBytes
	}
	if opts.FlushEvery <= 0 {
		opts.FlushEvery = DefaultFlushEvery
	}
	s := &Sink{dst: dst, opts: opts, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go s.run()
	return s
}

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("logsink: closed")

// Write buffers p (one log record) and returns without waiting for the
// destination. A record that does not fit in the pending bound is dropped
// and counted; Write still reports success, so that a logger never fails a
// request.
func (s *Sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, ErrClosed
	}
	if s.pending+len(p) > s.opts.MaxPending {
		s.mu.Unlock()
		s.dropped.Add(1)
		return len(p), nil
	}
	if s.batch == nil {
		s.batch = s.newBatchLocked()
	}
	s.batch = append(s.batch, p...)
	s.pending += len(p)
	full := len(s.batch) >= s.opts.BatchBytes
	if full {
		s.queue = append(s.queue, s.batch)
		s.batch = nil
	}
	s.mu.Unlock()
	if full {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

func (s *Sink) newBatchLocked() []byte {
	if n := len(s.spare); n > 0 {
		b := s.spare[n-1][:0]
		s.spare = s.spare[:n-1]
		return b
	}
	return make([]byte, 0, s.opts.BatchBytes+4<<10)
}

// Dropped is the number of records dropped because the destination fell
// behind by more than MaxPending bytes.
func (s *Sink) Dropped() int64 { return s.dropped.Load() }

// Err is the first error the destination returned, if any (writing goes on
// after it: the next batch may succeed).
func (s *Sink) Err() error {
	if p := s.werr.Load(); p != nil {
		return *p
	}
	return nil
}

// run writes queued batches when kicked, and the partial batch every
// FlushEvery, until Close.
func (s *Sink) run() {
	defer close(s.done)
	t := time.NewTicker(s.opts.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-s.kick:
		case <-t.C:
		}
		if !s.flush(true) {
			return
		}
	}
}

// flush writes every queued batch and, if partial, the batch being filled.
// It reports false once the Sink is closed and everything is written.
func (s *Sink) flush(partial bool) bool {
	for {
		s.mu.Lock()
		if partial && len(s.batch) > 0 {
			s.queue = append(s.queue, s.batch)
			s.batch = nil
		}
		if len(s.queue) == 0 {
			open := !s.closed
			s.mu.Unlock()
			return open
		}
		b := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()

		if _, err := s.dst.Write(b); err != nil {
			err = fmt.Errorf("logsink: writing %d bytes of log records: %w", len(b), err)
			s.werr.CompareAndSwap(nil, &err)
		}

		s.mu.Lock()
		s.pending -= len(b)
		if len(s.spare) < 4 {
			s.spare = append(s.spare, b)
		}
		s.mu.Unlock()
	}
}

// Close writes every pending record, stops the writer goroutine and makes
// later Writes fail with ErrClosed. It returns the first write error, if
// any. It does not close the destination.
func (s *Sink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.done
		return s.Err()
	}
	s.closed = true
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
	<-s.done
	s.flush(true) // anything queued between the goroutine's last pass and closed
	return s.Err()
}
