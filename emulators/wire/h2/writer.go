package h2

import (
	"bufio"
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// maxControlQueue bounds control frames waiting to be written; a client that
// floods PINGs or SETTINGS while not reading gets its connection closed.
const maxControlQueue = 4096

// control is one frame the reader goroutine wants written. after runs once
// the frame was flushed (or failed).
type control struct {
	write func(*http2.Framer) error
	after func()
}

// frameWriter serialises everything written on a connection: the Framer's
// write side, the HPACK encoder and the buffered writer share one mutex.
//
// Handler goroutines write under the mutex themselves and may block on the
// network. The reader goroutine never does: it queues control frames
// (SETTINGS ACK, PING ACK, WINDOW_UPDATE, RST_STREAM, GOAWAY) for the control
// goroutine, so a client that stops reading cannot deadlock our reading.
type frameWriter struct {
	mu      sync.Mutex
	fr      *http2.Framer
	bw      *bufio.Writer
	hbuf    bytes.Buffer
	henc    *hpack.Encoder
	err     error // first write error; sticky
	onError func(error)
	waiting atomic.Int32 // goroutines queued for mu (see flushSoon)

	qmu   sync.Mutex
	queue []control
	kick  chan struct{}
}

func newFrameWriter(fr *http2.Framer, bw *bufio.Writer, onError func(error)) *frameWriter {
	w := &frameWriter{fr: fr, bw: bw, onError: onError, kick: make(chan struct{}, 1)}
	w.henc = hpack.NewEncoder(&w.hbuf)
	return w
}

// flushMode says whether a write ends with a flush.
type flushMode int

const (
	// noFlush leaves the frames buffered: more writes follow.
	noFlush flushMode = iota
	// flushSoon flushes unless other writers are waiting for the mutex:
	// each of them ends its writes with a flush, so the last one flushes
	// for all and concurrent responses share system calls.
	flushSoon
	// flushNow always flushes (before closing the connection).
	flushNow
)

// write runs fn with exclusive use of the write side, then flushes as mode
// says. It returns the connection's first write error.
func (w *frameWriter) write(mode flushMode, fn func(*http2.Framer) error) error {
	w.lock()
	err, first := w.writeLocked(mode, fn)
	w.mu.Unlock()
	if first {
		w.onError(err)
	}
	return err
}

// lock takes mu, counting the wait in w.waiting.
func (w *frameWriter) lock() {
	w.waiting.Add(1)
	w.mu.Lock()
	w.waiting.Add(-1)
}

// writeLocked runs fn (if not nil) and records the first error; first
// reports whether this call produced it.
func (w *frameWriter) writeLocked(mode flushMode, fn func(*http2.Framer) error) (err error, first bool) {
	if w.err != nil {
		return w.err, false
	}
	if fn != nil {
		err = fn(w.fr)
	}
	if err == nil && (mode == flushNow || mode == flushSoon && w.waiting.Load() == 0) {
		err = w.bw.Flush()
	}
	if err != nil {
		w.err = fmt.Errorf("h2: write: %w", err)
		return w.err, true
	}
	return nil, false
}

// flush sends buffered frames, possibly leaving it to a waiting writer.
func (w *frameWriter) flush() error { return w.write(flushSoon, nil) }

// enqueue hands a control frame to the control goroutine. It never blocks.
func (w *frameWriter) enqueue(ctl control) {
	w.qmu.Lock()
	overflow := len(w.queue) >= maxControlQueue
	if !overflow {
		w.queue = append(w.queue, ctl)
	}
	w.qmu.Unlock()
	if overflow {
		w.onError(fmt.Errorf("h2: %d control frames pending, peer not reading", maxControlQueue))
		return
	}
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// runControl writes queued control frames until done is closed.
func (w *frameWriter) runControl(done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-w.kick:
		}
		w.qmu.Lock()
		batch := w.queue
		w.queue = nil
		w.qmu.Unlock()
		w.writeBatch(batch)
	}
}

func (w *frameWriter) writeBatch(batch []control) {
	mode := flushSoon
	for _, ctl := range batch {
		if ctl.after != nil {
			mode = flushNow // after may close the connection
		}
	}
	var failed error
	w.lock()
	for i, ctl := range batch {
		m := noFlush
		if i == len(batch)-1 {
			m = mode
		}
		if err, first := w.writeLocked(m, ctl.write); first {
			failed = err
		}
	}
	w.mu.Unlock()
	if failed != nil {
		w.onError(failed)
	}
	for _, ctl := range batch {
		if ctl.after != nil {
			ctl.after()
		}
	}
}

// headersLocked writes a header block as HEADERS plus CONTINUATION frames
// no larger than maxFrame. w.mu must be held.
func (w *frameWriter) headersLocked(fr *http2.Framer, id uint32, fields []hpack.HeaderField, endStream bool, maxFrame uint32) error {
	w.hbuf.Reset()
	for _, f := range fields {
		if err := w.henc.WriteField(f); err != nil {
			return fmt.Errorf("hpack: %w", err)
		}
	}
	block := w.hbuf.Bytes()
	for first := true; first || len(block) > 0; first = false {
		frag := block[:min(len(block), int(maxFrame))]
		block = block[len(frag):]
		var err error
		if first {
			err = fr.WriteHeaders(http2.HeadersFrameParam{
				StreamID:      id,
				BlockFragment: frag,
				EndStream:     endStream,
				EndHeaders:    len(block) == 0,
			})
		} else {
			err = fr.WriteContinuation(id, len(block) == 0, frag)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// dataLocked writes p as DATA frames no larger than maxFrame, END_STREAM on
// the last one when endStream (an empty frame when p is empty).
func dataLocked(fr *http2.Framer, id uint32, p []byte, endStream bool, maxFrame uint32) error {
	for first := true; first || len(p) > 0; first = false {
		chunk := p[:min(len(p), int(maxFrame))]
		p = p[len(chunk):]
		if err := fr.WriteData(id, endStream && len(p) == 0, chunk); err != nil {
			return err
		}
	}
	return nil
}

// setHeaderTableSizeLocked applies the peer's SETTINGS_HEADER_TABLE_SIZE.
func (w *frameWriter) setHeaderTableSizeLocked(v uint32) {
	w.henc.SetMaxDynamicTableSizeLimit(v)
}
